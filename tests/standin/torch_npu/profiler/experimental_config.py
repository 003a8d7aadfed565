"""STAND-IN for torch_npu/profiler/experimental_config.py: the same constants and signature, recorded.

The constant values are torch_npu's own (analysis/prof_common_func/_constant.py); the stand-in
keeps no validation beyond what the tests need, and collects nothing.
"""

from typing import Optional, Union

from torch_npu import _recorder
from torch_npu.version import __version__


class Constant:
    LEVEL0 = "Level0"
    LEVEL1 = "Level1"
    LEVEL2 = "Level2"
    LEVEL_NONE = "Level_none"
    AicPipeUtilization = "ACL_AICORE_PIPE_UTILIZATION"
    AicArithmeticUtilization = "ACL_AICORE_ARITHMETIC_UTILIZATION"
    AicMemory = "ACL_AICORE_MEMORY_BANDWIDTH"
    AicMemoryL0 = "ACL_AICORE_L0B_AND_WIDTH"
    AicMemoryUB = "ACL_AICORE_MEMORY_UB"
    AicResourceConflictRatio = "ACL_AICORE_RESOURCE_CONFLICT_RATIO"
    AicL2Cache = "ACL_AICORE_L2_CACHE"
    AicMemoryAccess = "ACL_AICORE_MEMORY_ACCESS"
    AicMetricsNone = "ACL_AICORE_NONE"
    Db = "db"
    Text = "text"
    CPU = "cpu"
    MEM = "mem"
    DISK = "disk"
    NETWORK = "network"
    OSRT = "osrt"
    NUMA = "numa"


class ProfilerLevel:
    Level0 = Constant.LEVEL0
    Level1 = Constant.LEVEL1
    Level2 = Constant.LEVEL2
    Level_none = Constant.LEVEL_NONE


class AiCMetrics:
    PipeUtilization = Constant.AicPipeUtilization
    ArithmeticUtilization = Constant.AicArithmeticUtilization
    Memory = Constant.AicMemory
    MemoryL0 = Constant.AicMemoryL0
    MemoryUB = Constant.AicMemoryUB
    ResourceConflictRatio = Constant.AicResourceConflictRatio
    L2Cache = Constant.AicL2Cache
    if __version__ != "2.4.0":
        MemoryAccess = Constant.AicMemoryAccess
    AiCoreNone = Constant.AicMetricsNone


class ExportType:
    Db = Constant.Db
    Text = Constant.Text


if __version__ != "2.4.0":

    class HostSystem:
        CPU = Constant.CPU
        MEM = Constant.MEM
        DISK = Constant.DISK
        NETWORK = Constant.NETWORK
        OSRT = Constant.OSRT
        NUMA = Constant.NUMA


def supported_profiler_level():
    return {ProfilerLevel.Level0, ProfilerLevel.Level1, ProfilerLevel.Level2, ProfilerLevel.Level_none}


def supported_ai_core_metrics():
    return {value for name, value in vars(AiCMetrics).items() if not name.startswith("_")}


def supported_export_type():
    return {ExportType.Db, ExportType.Text}


class _ExperimentalConfig:
    if __version__ == "2.4.0":

        @_recorder.recorded("_ExperimentalConfig")
        def __init__(
            self,
            profiler_level: int = Constant.LEVEL0,
            aic_metrics: int = Constant.AicMetricsNone,
            l2_cache: bool = False,
            msprof_tx: bool = False,
            data_simplification: bool = True,
            record_op_args: bool = False,
            op_attr: bool = False,
            gc_detect_threshold: float = None,
            export_type: str = Constant.Text,
        ):
            self._export_type = export_type

    else:

        @_recorder.recorded("_ExperimentalConfig")
        def __init__(
            self,
            profiler_level: int = Constant.LEVEL0,
            aic_metrics: int = Constant.AicPipeUtilization,
            l2_cache: bool = False,
            msprof_tx: bool = False,
            mstx: bool = False,
            data_simplification: bool = True,
            record_op_args: bool = False,
            op_attr: bool = False,
            gc_detect_threshold: Optional[float] = None,
            export_type: Union[str, list] = ExportType.Text,
            host_sys: Optional[list] = None,
            mstx_domain_include: Optional[list] = None,
            mstx_domain_exclude: Optional[list] = None,
            sys_io: bool = False,
            sys_interconnection: bool = False,
        ):
            self._export_type = export_type

    @property
    def export_type(self):
        return self._export_type
