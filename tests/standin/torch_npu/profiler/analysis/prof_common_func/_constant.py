"""STAND-IN for torch_npu/profiler/analysis/prof_common_func/_constant.py: the profiler's messages.

In every real release checked (2.1.0.post8 to 2.14.0) these are plain print() calls to stdout,
"[time] [LEVEL] [pid] profiler.py: message", and the warning is silent where RANK is set and not 0
(2.6.0 and later shown here; 2.1 and 2.4 print the time without brackets, in UTC).
"""

import os
import time


def _stamp() -> str:
    return time.strftime("[%Y-%m-%d %H:%M:%S]", time.localtime())


def print_info_msg(message: str):
    print(f"{_stamp()} [INFO] [{os.getpid()}] profiler.py: {message}", flush=True)


def print_warn_msg(message: str):
    if os.environ.get("RANK", "0") in ("", "0"):
        print(f"{_stamp()} [WARNING] [{os.getpid()}] profiler.py: {message}", flush=True)


def print_error_msg(message: str):
    print(f"{_stamp()} [ERROR] [{os.getpid()}] profiler.py: {message}", flush=True)
