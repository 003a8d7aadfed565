"""STAND-IN for torch_npu (tests only): records calls, computes nothing, writes no profiling data.

See tests/standin/README.md. The real torch_npu needs the Ascend driver and CANN; this package
only imitates the profiler API of one real release so the whole path can be tested without them.
"""

import torch  # noqa: F401 - the real torch_npu imports torch first, and so does this stand-in

from torch_npu import _recorder, npu, profiler  # noqa: F401
from torch_npu.version import __version__

_recorder.record("import", version=__version__)
