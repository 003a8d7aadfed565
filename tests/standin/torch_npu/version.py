"""STAND-IN: the version of the real torch_npu release this stand-in imitates."""

import os

from torch_npu._switches import VERSION

#: The releases whose profiler API this stand-in reproduces (checked by tests/test_npu_contract.py).
IMITATED = ("2.14.0", "2.4.0")

__version__ = os.environ.get(VERSION, "") or IMITATED[0]
if __version__ not in IMITATED:
    raise ImportError(f"the torch_npu stand-in imitates {', '.join(IMITATED)} only, not {__version__}")
