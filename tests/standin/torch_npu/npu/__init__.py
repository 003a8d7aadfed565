"""STAND-IN for torch_npu.npu: an NPU is "available" unless TORCH_NPU_STANDIN_NPU=0."""

import os

from torch_npu import _recorder, _switches


def is_available() -> bool:
    available = os.environ.get(_switches.NPU, "1") != "0"
    _recorder.record("is_available", result=available)
    return available


def device_count() -> int:
    return 1 if is_available() else 0


def synchronize(device=None) -> None:
    """Nothing to wait for: the stand-in runs no device work. Recorded: torch.profiler calls
    torch.npu.synchronize() when a profile tracing ProfilerActivity.PrivateUse1 ends."""
    _recorder.record("synchronize", device=device)
