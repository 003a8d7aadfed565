"""Profiler backends: build the profiler of one window from the options, and export it.

``torch`` (torch.profiler, CPU and CUDA) and ``npu`` (torch_npu.profiler) take the same options
and follow the ``Backend`` protocol below. ``build`` gets the output directory and worker name
because torch_npu fixes its output path when the trace handler is created, before the start.
"""

from __future__ import annotations

import sys
from typing import Protocol


class Profiler(Protocol):
    """What the session does with the object ``build`` returns (torch's and torch_npu's ``profile``)."""

    def start(self) -> None: ...

    def step(self) -> None: ...

    def stop(self) -> None: ...


class Backend(Protocol):
    name: str
    #: Its windows get an aftercare process (aftercare.py: summary, compression, moves).
    aftercare: bool
    #: The ``ProfilerStep#`` number of the last built window's first step: the job's number of
    #: that step (``window.first``), so that msprof-analyze, HTA and Perfetto, which key steps by
    #: ``ProfilerStep#N``, see the job's steps; 0 where the installed profiler has no counter that
    #: can be set (then each window numbers its steps from 0, as the profiler does by itself).
    steps_from: int

    def build(self, *, config, window, on_trace_ready, output_dir: str, worker: str) -> Profiler:
        """The profiler of one window (``window.warmup`` traced steps, then ``window.active``
        recorded ones; its last ``step()`` saves it through ``on_trace_ready``), its steps
        numbered from ``steps_from``."""

    def stop(self, prof, *, unfinished: tuple[str, ...] = ()) -> None:
        """Stop ``prof`` (saving its window if it records). ``unfinished``: the names of the ranges
        of a step that was under way when the window was cut short (``ProfilerStep#N``,
        ``iteration#N``): the process never finished that step, so the saved trace must not
        show it as one."""

    def export(self, prof, output_dir: str, worker: str) -> list[str]:
        """Write one window; the paths written."""


class Declined(Exception):
    """The backend will not profile this process, for a reason the user must hear but that is not a
    failure: another profiler owns it (torch_npu's dynamic profiler, msMonitor, msprof, the job's
    own). ``outcome``: the outcomes.py kind that says it as data, where there is one."""

    def __init__(self, reason: str, outcome: str | None = None) -> None:
        super().__init__(reason)
        self.outcome = outcome


def npu_available() -> bool:
    """True when the job has imported torch_npu and it reports an NPU device.

    Only a torch_npu the job already imported counts (itself, or through torch's device-backend
    autoload): every job that computes on an NPU has imported it by its first step, and importing
    it into a job that did not would change that job (torch_npu patches torch on import, and
    starts its own profiler when PROF_CONFIG_PATH is set).
    """
    torch_npu = sys.modules.get("torch_npu")
    if torch_npu is None:
        return False
    try:
        npu = getattr(torch_npu, "npu", None)
        return bool(npu is not None and npu.is_available())
    except Exception:  # noqa: BLE001 - a broken torch_npu means: no NPU here
        return False


def select(config, note_warning, note_profiler=None) -> Backend:
    """The backend for ``--backend``: auto picks npu when an NPU is present, else torch (CUDA or CPU).

    ``note_profiler(kind, text)`` hears what the profiler itself logs (``kind``: "warning" or
    "error"), during the run: Kineto's lines on the torch backend, torch_npu's on the npu one.
    """
    choice = config.backend
    if choice == "auto":
        choice = "npu" if npu_available() else "torch"
    if choice == "npu":
        from npuprof_launch.inprocess.backends.npu import NpuBackend

        return NpuBackend(note_warning, note_profiler)
    from npuprof_launch.inprocess.backends.torch import TorchBackend

    return TorchBackend(note_warning, note_profiler)
