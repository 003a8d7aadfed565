"""The job's own torch profiler: npuprof's profiler never runs at the same time as one.

Kineto keeps one profiling session per process. When two torch profilers overlap (one prepared
or recording while the other starts), the one that stops second gets an empty result and its
``export_chrome_trace`` kills the process with a segmentation fault (measured with torch 2.13:
Lightning's ``Trainer(profiler="pytorch")`` run under npuprof-run died that way). So from the
moment torch is imported, every ``torch.autograd.profiler.profile`` is watched; it is the object
under both ``torch.profiler.profile`` and the legacy ``torch.autograd.profiler.profile``:

* while a profiler of the job is prepared or recording, npuprof's is not created
  (``job_profiler_active``, checked by the backend, which then declines);
* when the job prepares or starts one while npuprof's exists, npuprof's is stopped first and this
  process goes on unprofiled by npuprof (``claim`` names the callback that does it).

The job's profiler always wins: it is the user's, and the job must run as it would without us.
"""

from __future__ import annotations

import functools
import sys
import weakref

from npuprof_launch.common import outcomes

#: The job's own profilers between their prepare or start and their exit (strong references: one
#: dropped without being stopped still holds kineto's session).
_active: set = set()
_ours = None
_on_job_profiler = None
_installed = False

REASON = outcomes.JOB_PROFILER_SENTENCE


def install(torch_module) -> None:
    """Watch the prepare, start and exit of every torch autograd profiler (once per process): in
    their own code where it can be done exactly, else through a wrapper."""
    global _installed
    if _installed:
        return
    _installed = True
    profile = getattr(getattr(getattr(torch_module, "autograd", None), "profiler", None), "profile", None)
    if profile is None or not all(hasattr(profile, name) for name in ("_prepare_trace", "_start_trace", "__exit__")):
        return
    if not _in_place(profile._prepare_trace, _job_profiler_entering):
        profile._prepare_trace = _entering(profile._prepare_trace)
    if not _in_place(profile._start_trace, _job_profiler_entering):
        profile._start_trace = _entering(profile._start_trace)
    if not _in_place(profile.__exit__, _active.discard):
        profile.__exit__ = _exiting(profile.__exit__)


def _in_place(method, before) -> bool:
    """``before(self)`` at the start of the method's own code (inplace.py), so that a traceback or
    a warning from inside the job's profiler has no frame of ours (about 2 ms a method, once a
    process); False where that cannot be done, and the method gets a wrapper instead."""
    from npuprof_launch.inprocess import inplace

    return inplace.count_in_place(method, before, _nothing, ("self",), thorough=False)


def _nothing(_self) -> None:
    """What a watched method does at its end: nothing (the watch acts before the method runs)."""


def job_profiler_active() -> bool:
    """True while a profiler of the job (not npuprof's) is prepared or recording in this process."""
    if _active:
        return True
    torch = sys.modules.get("torch")  # no torch imported: no profiler of the job's can run
    if torch is None:
        return False
    try:
        return bool(torch._C._autograd._profiler_enabled())
    except Exception:  # noqa: BLE001 - a torch without this query: rely on the watch alone
        return False


def rpc_agent_running() -> bool:
    """Whether this process runs an RPC agent of torch.distributed.rpc: while it does, torch
    profiles each RPC call on the caller's side only, and its own line says so to the job's stderr
    ("Profiling a distributed call with the Kineto profiler will profile the caller, but not the
    worker") at the first call a window covers. Read at a window's end, from modules already
    imported (never an import of ours)."""
    api = sys.modules.get("torch.distributed.rpc.api")
    running = getattr(api, "_is_current_rpc_agent_set", None)
    try:
        return bool(running()) if running is not None else False
    except Exception:  # noqa: BLE001 - a torch without this query: nothing to tell
        return False


def claim(profiler, on_job_profiler) -> None:
    """``profiler`` is npuprof's; call ``on_job_profiler()`` (once) if the job starts one while it exists."""
    global _ours, _on_job_profiler
    _ours = weakref.ref(profiler)
    _on_job_profiler = on_job_profiler


def _is_ours(autograd_profile) -> bool:
    ours = _ours() if _ours is not None else None
    # torch.profiler.profile creates its autograd profile before preparing it.
    return ours is not None and (autograd_profile is ours or getattr(ours, "profiler", None) is autograd_profile)


def _job_profiler_entering(autograd_profile) -> None:
    global _ours, _on_job_profiler
    try:
        if _is_ours(autograd_profile):
            return
        _active.add(autograd_profile)
        callback = _on_job_profiler
        if _ours is not None and _ours() is not None and callback is not None:
            _ours = _on_job_profiler = None
            callback()
    except Exception:  # noqa: BLE001 - the job's own profiler must never see our failure
        pass


def _entering(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        _job_profiler_entering(self)
        return method(self, *args, **kwargs)

    return wrapper


def _exiting(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        _active.discard(self)
        return method(self, *args, **kwargs)

    return wrapper
