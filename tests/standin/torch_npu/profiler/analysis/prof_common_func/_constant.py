"""STAND-IN for torch_npu/profiler/analysis/prof_common_func/_constant.py: its constants and messages.

``Constant`` holds the names and values of the real one that the stand-in uses, with the real
values (tests/test_npu_contract.py compares each with the release imitated). The messages are, in
every real release checked (2.1.0.post8 to 2.14.0), plain print() calls to stdout,
"[time] [LEVEL] [pid] profiler.py: message", and the warning is silent where RANK is set and not 0
(2.6.0 and later shown here; 2.1 and 2.4 print the time without brackets, in UTC).
"""

import os
import time

from torch_npu.version import __version__


class Constant:
    DEFAULT_PROCESS_NUMBER = max(1, (os.cpu_count() or 2) // 2)

    FRAMEWORK_DIR = "FRAMEWORK"
    OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
    ASCEND_WORK_PATH = "ASCEND_WORK_PATH"
    PROFILING_WORK_PATH = "profiling_data"
    PROFILER_META_DATA = "profiler_metadata.json"
    MAX_WORKER_NAME_LENGTH = 226
    PROF_WARN_SIZE = 1024 * 1024 * 1024
    NS_TO_US = 1000

    TENSORBOARD_TRACE_HANDLER = "tensorboard_trace_handler"

    CONFIG = "config"
    RANK_ID = "rank_id"
    COMMON_CONFIG = "common_config"
    ACTIVITIES = "activities"
    EXPERIMENTAL_CONFIG = "experimental_config"
    PROFILER_LEVEL = "_profiler_level"
    DATA_SIMPLIFICATION = "_data_simplification"
    EXPORT_TYPE = "_export_type"
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
    AicMetricsNone = "ACL_AICORE_NONE"
    Db = "db"
    Text = "text"

    END_INFO = "end_info"
    FWK_END_TIME = "collectionTimeEnd"
    FWK_END_MONOTONIC = "MonotonicTimeEnd"
    START_INFO = "start_info"
    SysCntFreq = "freq"
    StartCnt = "start_cnt"
    StartMonotonic = "start_monotonic"
    SyscntEable = "syscnt_enable"

    if __version__ != "2.4.0":
        CPU_ACTIVITIES = "ProfilerActivity.CPU"
        NPU_ACTIVITIES = "ProfilerActivity.NPU"
        AicMemoryAccess = "ACL_AICORE_MEMORY_ACCESS"
        CPU = "cpu"
        MEM = "mem"
        DISK = "disk"
        NETWORK = "network"
        OSRT = "osrt"
        NUMA = "numa"
        TORCH_NPU_VERSION = "torch_npu_version"
        CANN_VERSION = "cann_version"
        TRACE_VIEW = "trace_view.json"


def _stamp() -> str:
    return time.strftime("[%Y-%m-%d %H:%M:%S]", time.localtime())


def print_info_msg(message: str):
    print(f"{_stamp()} [INFO] [{os.getpid()}] profiler.py: {message}", flush=True)


def print_warn_msg(message: str):
    if os.environ.get("RANK", "0") in ("", "0"):
        print(f"{_stamp()} [WARNING] [{os.getpid()}] profiler.py: {message}", flush=True)


def print_error_msg(message: str):
    print(f"{_stamp()} [ERROR] [{os.getpid()}] profiler.py: {message}", flush=True)
