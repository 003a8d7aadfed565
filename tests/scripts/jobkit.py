"""What the test jobs share: the exact fingerprint of a model's weights that they print.

A job's results must be bit-identical under the tool: the tests compare the printed fingerprint
of the bare run and the profiled one. The jobs import this file from their own folder (a script's
folder is first on ``sys.path``, under torchrun and Lightning's re-launch alike). train_loop.py
keeps a copy of its own: tests also run it through ``runpy.run_path``, which puts no folder there.
"""

import hashlib


def checksum(*modules) -> str:
    """SHA-256 of every tensor of the modules' state dicts, in order, as exact Python numbers."""
    digest = hashlib.sha256()
    for module in modules:
        for tensor in module.state_dict().values():
            digest.update(repr(tensor.tolist()).encode())
    return digest.hexdigest()
