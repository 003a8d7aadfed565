"""What the test jobs share: the exact fingerprint of a model's weights that they print, and the
processes that spin on a rank's cores.

A job's results must be bit-identical under the tool: the tests compare the printed fingerprint
of the bare run and the profiled one. The jobs import this file from their own folder (a script's
folder is first on ``sys.path``, under torchrun and Lightning's re-launch alike). train_loop.py
keeps a copy of its own: tests also run it through ``runpy.run_path``, which puts no folder there.
"""

import contextlib
import hashlib
import subprocess
import sys


def checksum(*modules) -> str:
    """SHA-256 of every tensor of the modules' state dicts, in order, as exact Python numbers."""
    digest = hashlib.sha256()
    for module in modules:
        for tensor in module.state_dict().values():
            digest.update(repr(tensor.tolist()).encode())
    return digest.hexdigest()


@contextlib.contextmanager
def spinning(count: int):
    """``count`` processes spinning while the block runs, on the caller's cores (they inherit its
    CPU affinity: a data worker pinned beside it, a process left over), killed after it, even where
    it raises. -S: no site, so no profiler's hook in them."""
    burners = [subprocess.Popen([sys.executable, "-S", "-c", "while True:\n    pass\n"]) for _ in range(count)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
