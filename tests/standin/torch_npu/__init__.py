"""STAND-IN for torch_npu (tests only): records every call, and writes the files the real one writes.

See tests/standin/README.md. The real torch_npu needs the Ascend driver and CANN; this package
imitates the profiler of one real release (its API, and the session directories it leaves, with
small synthetic data) so the whole path can be tested without them.
"""

import os

import torch  # noqa: F401 - the real torch_npu imports torch first, and so does this stand-in

from torch_npu import _recorder, _switches, npu, profiler  # noqa: F401
from torch_npu.version import __version__

_recorder.record("import", version=__version__)

if os.environ.get(_switches.PRIVATEUSE1) == "1":
    # What the real one does on import (torch_npu/_init/registry/backend.py): PrivateUse1 becomes
    # "npu" (so torch.profiler lists ProfilerActivity.PrivateUse1) and torch.npu is this module's npu.
    # Off by default: it changes the process's torch for good, which the other tests do not want.
    torch.utils.rename_privateuse1_backend("npu")
    torch._register_device_module("npu", npu)
    _recorder.record("register_privateuse1", backend=torch._C._get_privateuse1_backend_name())
