"""Profiler backends: build the profiler object of a session from the options, and export a window.

``torch`` (torch.profiler, CPU and CUDA) and ``npu`` (torch_npu.profiler) take the same options.
A backend has a ``name``, ``build(config, on_trace_ready)`` returning an object with
``start()``, ``step()`` and ``stop()``, and ``export(prof, output_dir, worker)`` returning the
paths it wrote for one window.
"""

from __future__ import annotations

import importlib


def npu_available() -> bool:
    """True when torch_npu imports and reports an NPU device."""
    try:
        torch_npu = importlib.import_module("torch_npu")
        npu = getattr(torch_npu, "npu", None)
        return bool(npu is not None and npu.is_available())
    except Exception:  # noqa: BLE001 - a broken torch_npu means: no NPU here
        return False


def select(config, note_warning):
    """The backend for ``--backend``: auto picks npu when an NPU is present, else torch."""
    choice = config.backend
    if choice == "auto":
        choice = "npu" if npu_available() else "torch"
    if choice == "npu":
        from npuprof_launch.backends.npu import NpuBackend

        return NpuBackend(note_warning)
    from npuprof_launch.backends.torch import TorchBackend

    return TorchBackend(note_warning)
