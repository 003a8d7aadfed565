"""What the sitecustomize hook calls: arm the step clock the moment the process imports torch.

Runs in every Python process of the job, so it only registers a post-import watch (standard
library, well under a millisecond). Options are read, and anything heavy is imported, only
when torch has been imported; the profiler itself is created only at the first counted step.
"""

from __future__ import annotations

import os
import sys

from npuprof_launch import importwatch

_installed = False


def warn(message: str) -> None:
    """The one way the hook speaks: a single line on stderr, prefixed ``npuprof:``."""
    try:
        sys.stderr.write(f"npuprof: {message}\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a closed stderr must not break the job
        pass


def install() -> None:
    """Arm the hook once per process, however often the sitecustomize is loaded."""
    global _installed
    if _installed:
        return
    _installed = True
    importwatch.finder().watch("torch", _on_torch_imported)


def _on_torch_imported(torch_module: object) -> None:
    """torch is fully imported: hand over to the activation code (which may import more)."""
    from npuprof_launch import activation

    activation.activate(torch_module, os.environ)
