"""STAND-IN for torch_npu/profiler/experimental_config.py: the same constants and signature, recorded.

The constant values are torch_npu's own (analysis/prof_common_func/_constant.py). The config keeps
the attributes the real one sets, because profiler_info.json holds its ``__dict__``; of the real
one's checks it keeps only those that change a value the parse reads (and prints none of their
warnings), and it collects nothing.
"""

from typing import Optional, Union

from torch_npu import _recorder
from torch_npu.profiler.analysis.prof_common_func._constant import Constant
from torch_npu.version import __version__


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
            self._profiler_level = profiler_level
            self._aic_metrics = aic_metrics
            if profiler_level not in (Constant.LEVEL_NONE, Constant.LEVEL0) and aic_metrics == Constant.AicMetricsNone:
                self._aic_metrics = Constant.AicPipeUtilization
            self._l2_cache = l2_cache
            self._msprof_tx = msprof_tx
            self._data_simplification = data_simplification
            self.record_op_args = record_op_args
            self._export_type = export_type
            self._op_attr = op_attr
            self._gc_detect_threshold = gc_detect_threshold
            self._check_params()

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
            self._profiler_level = profiler_level
            self._aic_metrics = aic_metrics
            self._l2_cache = l2_cache
            self._msprof_tx = msprof_tx
            self._mstx = mstx
            self._data_simplification = data_simplification
            self.record_op_args = record_op_args
            self._export_type = [export_type] if isinstance(export_type, str) else list(set(export_type))
            self._host_sys = host_sys if host_sys else []
            self._op_attr = op_attr
            self._gc_detect_threshold = gc_detect_threshold
            self._mstx_domain_include = mstx_domain_include if mstx_domain_include else []
            self._mstx_domain_exclude = mstx_domain_exclude if mstx_domain_exclude else []
            self._sys_io = sys_io
            self._sys_interconnection = sys_interconnection
            self._check_params()
            if not (self._mstx or self._msprof_tx):  # _check_mstx_domain_params
                self._mstx_domain_include = []
                self._mstx_domain_exclude = []

    def _check_params(self) -> None:
        """The real checks' resets of valid arguments (invalid ones are not imitated)."""
        if self._profiler_level in (Constant.LEVEL0, Constant.LEVEL_NONE):
            self._aic_metrics = Constant.AicMetricsNone
        if __version__ != "2.4.0" and self._profiler_level == Constant.LEVEL_NONE:
            self._mstx = self._mstx or not self._msprof_tx

    @property
    def export_type(self):
        return self._export_type


def _default_config() -> _ExperimentalConfig:
    """What a profile without experimental_config uses: the real one builds ``_ExperimentalConfig()``;
    built here without recording it, as the tests read the record for the caller's calls only."""
    config = _ExperimentalConfig.__new__(_ExperimentalConfig)
    _ExperimentalConfig.__init__.__wrapped__(config)
    return config
