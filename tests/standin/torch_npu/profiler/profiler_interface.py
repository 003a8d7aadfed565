"""STAND-IN for torch_npu/profiler/profiler_interface.py: what each transition of the schedule does on disk.

As the real _ProfInterface: ``init_trace`` creates the window's session directory
(_profiler_path_creator.py), ``start_trace``/``stop_trace`` stand for the C++ profiler and CANN,
which leave the raw data (_standin_raw.py), ``finalize_trace`` writes ``profiler_info_{rank}.json``
(``profiler_info.json`` without a rank: $RANK, else torch.distributed's rank when it is
initialized) with the real keys, and ``profiler_metadata.json`` where the release writes it,
``delete_prof_dir`` removes the directory, and ``analyse`` parses it (_npu_profiler.py).
"""

import json
import os
import time
import uuid

import torch

from torch_npu.profiler import _standin_collectives as collectives
from torch_npu.profiler import _standin_raw as raw
from torch_npu.profiler._profiler_path_creator import ProfPathCreator
from torch_npu.profiler.analysis._npu_profiler import NpuProfiler
from torch_npu.profiler.analysis.prof_common_func._constant import Constant, print_warn_msg
from torch_npu.version import __version__

if __version__ != "2.4.0":
    from torch_npu.profiler.analysis.prof_common_func._log import ProfilerLogger

#: What get_cann_version() reads from the CANN the stand-in imitates (an ascend_*_install.info).
CANN_VERSION = "8.3.RC1"
#: What the real one's _get_freq() and _get_syscnt_enable() give on an Ascend host (MHz).
SYSCNT_FREQ = raw.FREQ_MHZ
#: torch_npu's collect_env_vars(): the variables profiler_metadata.json records with text export.
ENV_VARIABLES = (
    "ASCEND_GLOBAL_LOG_LEVEL",
    "HCCL_RDMA_TC",
    "HCCL_RDMA_SL",
    "ACLNN_CACHE_LIMIT",
    "HOST_CACHE_CAPACITY",
    "ASCEND_ENHANCE_ENABLE",
    "PYTORCH_NPU_ALLOC_CONF",
    "ASCEND_LAUNCH_BLOCKING",
)
if __version__ != "2.4.0":
    ENV_VARIABLES += ("HCCL_ALGO",)
#: The attribute the stand-in's recorder adds to the objects it records (not the real one's).
RECORDED = "passed"


class _ProfInterface:
    def __init__(
        self,
        *,
        activities,
        record_shapes: bool,
        profile_memory: bool,
        with_stack: bool,
        with_flops: bool,
        with_modules: bool,
        schedule,
        metadata: dict,
        experimental_config,
    ) -> None:
        self.prof_path = ""
        self.syscnt_enable = False
        self.freq = 100
        self.start_cnt = 0
        self.start_monotonic = 0
        self.activities = activities
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.schedule = schedule
        self.metadata = metadata
        self.trace_id = ""
        #: The ``ProfilerStep#`` ranges the window recorded (the real C++ profiler's records).
        self.ranges: list = []
        #: The CPU profile under a recording window that sees the job's collectives (_standin_collectives.py).
        self._collectives = None

    def _traces(self, name: str) -> bool:
        return any(activity.name == name for activity in self.activities)

    def init_trace(self) -> None:
        ProfPathCreator().create_prof_dir()
        self.prof_path = ProfPathCreator().get_prof_dir()
        self.ranges = []
        if __version__ != "2.4.0":
            self.trace_id = f"{uuid.uuid4().int:032X}"

    def warmup_trace(self) -> None:
        """The profiler runs, and records nothing yet."""

    def start_trace(self) -> None:
        self.syscnt_enable = True
        self.freq = SYSCNT_FREQ
        self.start_monotonic = time.monotonic_ns()
        self.start_cnt = int(self.start_monotonic * SYSCNT_FREQ / 1000)
        raw.start(self.prof_path, cpu=self._traces("CPU"), npu=self._traces("NPU"))
        self._collectives = collectives.Capture() if self._traces("NPU") else None

    def stop_trace(self) -> None:
        capture, self._collectives = self._collectives, None
        found = capture.stop() if capture is not None else []
        ranges = raw.with_flops(self.ranges, capture.flops) if capture is not None else self.ranges
        raw.stop(self.prof_path, ranges, found)

    def finalize_trace(self) -> None:
        self._dump_profiler_info()
        self._dump_metadata()
        ProfPathCreator().is_prof_inited = False
        if __version__ != "2.4.0":
            ProfilerLogger.destroy()

    def delete_prof_dir(self) -> None:
        ProfPathCreator().delete_prof_dir()

    def analyse(self, analysis_type: str = Constant.TENSORBOARD_TRACE_HANDLER, output_path: str = None, **kwargs):
        try:
            NpuProfiler.analyse(self.prof_path, analysis_type, output_path, **kwargs)
        except Exception as e:  # noqa: BLE001 - the real one only warns
            detail = "" if __version__ == "2.4.0" else f", error: {e}"
            print_warn_msg(f"Profiling data parsing failed{detail}.")

    def _dump_profiler_info(self) -> None:
        def _trans_obj2cfg(obj):
            if not obj:
                return None
            return {key: value for key, value in getattr(obj, "__dict__", {}).items() if key != RECORDED}

        common_config = {
            # A set of the C++ enum, whose members hash by value: CPU before NPU.
            "activities": [f"ProfilerActivity.{a.name}" for a in sorted(self.activities, key=lambda a: a.value)],
            "schedule": _trans_obj2cfg(self.schedule),
            "record_shapes": self.record_shapes,
            "profile_memory": self.profile_memory,
            "with_stack": self.with_stack,
            "with_flops": self.with_flops,
            "with_modules": self.with_modules,
        }
        total_info = {
            Constant.CONFIG: {
                Constant.COMMON_CONFIG: common_config,
                Constant.EXPERIMENTAL_CONFIG: _trans_obj2cfg(self.experimental_config),
            },
            Constant.START_INFO: {
                Constant.SyscntEable: self.syscnt_enable,
                Constant.SysCntFreq: self.freq,
                Constant.StartCnt: self.start_cnt,
                Constant.StartMonotonic: self.start_monotonic,
            },
            Constant.END_INFO: {Constant.FWK_END_TIME: time.time_ns(), Constant.FWK_END_MONOTONIC: time.monotonic_ns()},
        }
        if __version__ != "2.4.0":
            total_info[Constant.TORCH_NPU_VERSION] = __version__
            total_info[Constant.CANN_VERSION] = CANN_VERSION
        rank_id = os.environ.get("RANK")
        if rank_id is None and torch.distributed.is_available() and torch.distributed.is_initialized():
            rank_id = torch.distributed.get_rank()
        if rank_id is None:
            path = os.path.join(os.path.realpath(self.prof_path), "profiler_info.json")
        else:
            path = os.path.join(os.path.realpath(self.prof_path), f"profiler_info_{rank_id}.json")
            total_info[Constant.RANK_ID] = rank_id
        _write_json(path, total_info, indent=4)

    def _dump_metadata(self) -> None:
        export_type = self.experimental_config.export_type
        if (Constant.Text in export_type) if __version__ != "2.4.0" else (export_type == Constant.Text):
            self.metadata.update({"ENV_VARIABLES": {name: os.environ.get(name, "") for name in ENV_VARIABLES}})
        if __version__ != "2.4.0":
            self.metadata.update({"trace_id": self.trace_id})
        if not self.metadata:
            return
        if not ProfPathCreator().is_prof_inited:
            print_warn_msg("Profiler is not initialized. Skip this metadata.")
            return
        path = os.path.join(self.prof_path, Constant.PROFILER_META_DATA)
        _write_json(path, self.metadata, indent=4 if __version__ == "2.4.0" else None)
        self.metadata.clear()


def _write_json(path: str, data, indent=None) -> None:
    """FileManager.create_json_file_by_path: nothing for empty data, a 0640 file otherwise."""
    if not data:
        return
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640), "w") as handle:
        handle.write(json.dumps(data, indent=indent, ensure_ascii=False))
