"""What the sitecustomize hook calls: watch for torch, and arm the step clocks the moment it is imported.

Runs in every Python process of the job, so at process start it only writes one line to the
process log and registers post-import watches (standard library, well under a millisecond): one
for torch, and one for the module of each function declared with --target or --stage. Options
are resolved, and anything heavy imported, only when torch has been imported; a session (and its
record) is made only at the first counted step, and a profiler only when a window is due.

This is the one place that knows every part of the in-process half: the clocks, the finding of
declared functions, the sessions, the process's lifecycle. They do not know each other: each is
handed the callbacks it needs from here.
"""

from __future__ import annotations

import os
import time

from npuprof_launch.common import names, processlog
from npuprof_launch.inprocess import importwatch

#: typing.TYPE_CHECKING without importing typing at every process's start (2.6 ms); mypy takes it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

_installed = False
#: When the hook was armed in this process: on-demand requests older than this are not for it.
armed_ns = 0
_declared: list = []
_points = None
_process_session = None
_tally_pid = None


def install() -> None:
    """Arm the hook once per process, however often the sitecustomize is loaded."""
    global _installed, armed_ns
    if _installed:
        return
    _installed = True
    armed_ns = time.time_ns()
    processlog.log_loaded(os.environ)
    finder = importwatch.finder()
    finder.watch("torch", _on_torch_imported)
    if os.environ.get(names.TARGET_VAR) or os.environ.get(names.STAGE_VAR):
        from npuprof_launch.inprocess import declared

        for item in declared.wanted(os.environ):
            item.make_clock = _call_clock
            _declared.append(item)
            item.watch(finder)
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _on_torch_imported(torch_module: ModuleType) -> None:
    """torch is fully imported: arm the optimizer clock, unless declared functions are the step source."""
    from npuprof_launch.inprocess import coexist, declared, optimizerclock

    coexist.install(torch_module)
    _watch_groups()
    if declared.replaces_optimizer_clock(os.environ):
        _check_declared_options()
    else:
        clock = optimizerclock.OptimizerClock(
            torch_module=torch_module, new_session=_session_for_optimizer, points=safe_points(), say=names.say
        )
        clock.install()
    register_tally()


def _watch_groups() -> None:
    """Map gloo's worker threads to their process groups from the first group on (groupthreads.py)."""
    from npuprof_launch.inprocess import groupthreads

    try:
        importwatch.finder().watch("torch.distributed.distributed_c10d", groupthreads.install)
    except Exception as exc:  # noqa: BLE001 - the collectives are then matched by order alone
        names.say(f"process groups not watched ({exc!r}); gloo's collectives matched by their order alone")


def _call_clock(item):
    """A declared function was found: the clock its calls go to (bad options: none of them count)."""
    from npuprof_launch.inprocess import callclock

    register_tally()
    clock = callclock.CallClock(declared=item, new_session=_session_for_call, say=names.say)
    clock.passive = _options_refused
    return clock


_options_refused = False


def _check_declared_options() -> None:
    """A declared function may never be called, so no session would report bad options: say it now."""
    from npuprof_launch.common import options

    global _options_refused
    _, problems = options.resolve({}, os.environ)
    if problems:
        _options_refused = True
        for problem in problems:
            names.say(f"{problem}; this process runs unprofiled")
        for item in _declared:
            if item.clock is not None:
                item.clock.passive = True


def safe_points():
    """The process's one SafePoints (made once torch is imported: every session profiles with it)."""
    global _points
    if _points is None:
        import torch

        from npuprof_launch.inprocess import safepoints

        _points = safepoints.SafePoints(torch, names.say)
        os.register_at_fork(after_in_child=_points.after_fork)
    return _points


def _new_session(stage_text: str | None = None):
    from npuprof_launch.inprocess import opensession, process

    return opensession.open_session(
        os.environ,
        lifecycle=process.lifecycle(),
        points=safe_points(),
        say=names.say,
        armed_ns=armed_ns,
        stage_text=stage_text,
    )


def _session_for_optimizer():
    """The optimizer clock's first step: this process's one session."""
    global _process_session
    if _process_session is None:
        _process_session = _new_session()
    return _process_session


def _session_for_call(item):
    """A declared function's first call: a stage has a session of its own, a --target the process's."""
    if item.stage is not None:
        return _new_session(stage_text=item.stage_text)
    return _session_for_optimizer()


def register_tally() -> None:
    """Once per process that imported torch or a declared function's module: tally it at exit if idle."""
    global _tally_pid
    if _tally_pid == os.getpid():
        return
    import atexit

    _tally_pid = os.getpid()
    atexit.register(_tally_if_idle, _tally_pid)


def _tally_if_idle(pid: int) -> None:
    """At exit, a process that imported torch but never stepped adds one line to the process log.

    The report counts these lines ("3 processes imported torch but never stepped"), which tells a
    user with an empty output that the hook worked and the step source is what is missing.
    Declared functions (--target, --stage) that made no step here are listed with the reason
    (never imported, not found, never called), also by a process that stepped another stage, so
    the report can name a stage that no process ever ran.
    """
    if os.getpid() != pid:
        return
    try:
        idle = [item.idle() for item in _declared if item.clock is None or item.clock.session is None]
        stepped = _process_session is not None or len(idle) < len(_declared)
        if stepped and not idle:
            return
        from npuprof_launch.inprocess import endreason

        processlog.log_idle(os.environ, idle, stepped, endreason.raised_in_child(), endreason.children_ended())
    except Exception:  # noqa: BLE001 - a tally is never worth a traceback at exit
        pass


def _after_fork_in_child() -> None:
    global _process_session
    _process_session = None
    for item in _declared:
        if item.clock is not None:
            item.clock.after_fork()
