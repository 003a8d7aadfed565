"""A process forked while our profiler records must not go on recording in the child.

``os.fork`` copies the profiler's C++ state with the process: in a DataLoader worker forked while
a window is open, ``torch.autograd._profiler_enabled()`` is still true and every operator the
worker runs (collate, transforms) is recorded into a buffer nobody will ever read, for the life of
the worker. The Python side is handled by ``Session.abandon`` (no session, no status record, no
SIGTERM handler of ours); this module stops the C++ side.

It does not call ``torch.autograd.profiler._disable_profiler()``, the one call that would tear the
state down completely: that finalizes every event the parent recorded so far (measured: 0.6 s for
160k events, paid by each forked worker) and stops the device tracer (CUPTI, msprof), which is
not safe in a forked child. It removes what records instead, in O(1) and without touching a
device: the RecordFunction callbacks (operators; ``torch_npu``'s profiler records through the
same callbacks) and the Python tracer that ``with_stack`` installs. Left as it was: with
``--profile-memory``, allocations in such a child are still counted into the inherited state.
"""

from __future__ import annotations

import sys

#: The type of the object torch's Python tracer passes to ``PyEval_SetProfile`` (with_stack).
TORCH_PYTHON_TRACER = "TraceContext"


def silence_inherited_profiler() -> None:
    """In a forked child of a process whose profiler was recording: record nothing more here."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    torch._C._autograd._clear_callbacks()
    if type(sys.getprofile()).__name__ == TORCH_PYTHON_TRACER:
        sys.setprofile(None)
