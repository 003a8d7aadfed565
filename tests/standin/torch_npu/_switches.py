"""STAND-IN ONLY: the environment variables that steer the stand-in, in one place (see README.md)."""

import os

#: A file: every call made to the stand-in is appended to it, one JSON line each.
RECORD = "TORCH_NPU_STANDIN_RECORD"
#: The release imitated: 2.14.0 (the default) or 2.4.0.
VERSION = "TORCH_NPU_STANDIN_VERSION"
#: "0": torch_npu.npu.is_available() is False.
NPU = "TORCH_NPU_STANDIN_NPU"
#: "1": importing the stand-in renames PrivateUse1 to npu, as the real import does.
PRIVATEUSE1 = "TORCH_NPU_STANDIN_PRIVATEUSE1"
#: A message: printed as an error at each window's end, and logged as one by each parse.
ERROR = "TORCH_NPU_STANDIN_ERROR"
#: Seconds each parse takes (default 0): an async parse then ends visibly after its handler returned.
PARSE_S = "TORCH_NPU_STANDIN_PARSE_S"
#: Seconds each profiler start takes (default 0): the real one's first start loads its libraries.
START_S = "TORCH_NPU_STANDIN_START_S"
#: "1": each recorded step's device also computes, as one kernel, the FLOPs torch counted in that
#: step's operators: a rank with more work has more device time, as on an NPU.
DEVICE_WORK = "TORCH_NPU_STANDIN_DEVICE_WORK"
#: Megabytes of raw data each window writes (default: a few hundred bytes).
RAW_MB = "TORCH_NPU_STANDIN_RAW_MB"


def number(name: str) -> float:
    """The value of a numeric switch; 0 when it is unset, negative or not a number."""
    try:
        return max(float(os.environ.get(name, "") or 0), 0.0)
    except ValueError:
        return 0.0
