"""What the sitecustomize hook calls: arm the step clock the moment the process imports torch.

Runs in every Python process of the job, so it only registers post-import watches (standard
library, well under a millisecond): one for torch, and one for the module of each function
declared with --target or --stage. Options are read, and anything heavy is imported, only
when torch has been imported; the profiler itself is created only at the first counted step.
"""

from __future__ import annotations

import os
import sys
import time

from npuprof_launch import importwatch

_installed = False
#: When the hook was armed in this process: on-demand requests older than this are not for it.
armed_ns = 0
#: The variables that declare step functions (options.py derives the same names from its table).
TARGET_VAR = "NPU_PROF_TARGET"
STAGE_VAR = "NPU_PROF_STAGE"
SCENARIO_VAR = "NPU_PROF_SCENARIO"


def warn(message: str) -> None:
    """The one way the hook speaks: a single line on stderr, prefixed ``npuprof:``."""
    try:
        sys.stderr.write(f"npuprof: {message}\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a closed stderr must not break the job
        pass


def install() -> None:
    """Arm the hook once per process, however often the sitecustomize is loaded."""
    global _installed, armed_ns
    if _installed:
        return
    _installed = True
    armed_ns = time.time_ns()
    finder = importwatch.finder()
    finder.watch("torch", _on_torch_imported)
    if os.environ.get(TARGET_VAR) or os.environ.get(STAGE_VAR):
        from npuprof_launch import targets

        targets.arm(os.environ, finder)


def _on_torch_imported(torch_module: object) -> None:
    """torch is fully imported: hand over to the activation code (which may import more)."""
    from npuprof_launch import activation

    activation.activate(torch_module, os.environ)
