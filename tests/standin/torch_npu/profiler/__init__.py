"""STAND-IN for torch_npu.profiler: the exports of the imitated release (see tests/standin/README.md)."""

from torch_npu.profiler.experimental_config import (
    AiCMetrics,
    ExportType,
    ProfilerLevel,
    _ExperimentalConfig,
    supported_ai_core_metrics,
    supported_export_type,
    supported_profiler_level,
)
from torch_npu.profiler.profiler import ProfilerActivity, profile, supported_activities, tensorboard_trace_handler
from torch_npu.profiler.scheduler import ProfilerAction
from torch_npu.profiler.scheduler import Schedule as schedule
from torch_npu.version import __version__

__all__ = [
    "profile",
    "ProfilerActivity",
    "supported_activities",
    "tensorboard_trace_handler",
    "schedule",
    "ProfilerAction",
    "_ExperimentalConfig",
    "supported_profiler_level",
    "supported_ai_core_metrics",
    "supported_export_type",
    "ProfilerLevel",
    "AiCMetrics",
    "ExportType",
]

if __version__ != "2.4.0":
    from torch_npu.profiler.experimental_config import HostSystem  # noqa: F401 - absent in 2.4.0

    __all__.append("HostSystem")
