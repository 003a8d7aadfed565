"""Decide, once torch is imported, whether this process may profile, and arm its step clock.

Nothing here creates a profiler or writes a file: a process that never steps (a torchrun agent,
a data-loader worker, a helper interpreter) stays silent. The first counted step creates the
session (see session.py).
"""

from __future__ import annotations

import os
import sys

from npuprof_launch.bootstrap import warn

_session = None
_tally_pid = None


def current_session():
    """The session of this process, or None before the first step or when profiling is off."""
    return _session


def activate(torch_module: object, environ: os._Environ | dict) -> None:
    """Arm the optimizer-step clock, unless declared functions are the step source; the session
    is built lazily at the first step."""
    from npuprof_launch import clock, coexist, targets

    coexist.install(torch_module)
    if targets.replaces_optimizer_clock(environ):
        _check_declared_options(environ, targets)
    else:
        clock.install_optimizer_clock(torch_module, first_step)
    register_tally()


def _check_declared_options(environ, targets) -> None:
    """A declared function may never be called, so no session would report bad options: say it now."""
    from npuprof_launch import options

    _, problems = options.resolve({}, environ)
    if problems:
        for problem in problems:
            warn(f"{problem}; this process runs unprofiled")
        targets.disable_all()


def register_tally() -> None:
    """Once per process that imported torch or a declared function's module: tally it at exit if idle."""
    global _tally_pid
    if _tally_pid == os.getpid():
        return
    import atexit

    _tally_pid = os.getpid()
    atexit.register(_tally_if_idle, _tally_pid)


def _tally_if_idle(pid: int) -> None:
    """At exit, a process that imported torch but never stepped adds one line to the idle tally.

    The report counts these lines ("3 processes imported torch but never stepped"), which tells a
    user with an empty output that the hook worked and the step source is what is missing.
    Declared functions (--target, --stage) that made no step here are listed with the reason
    (never imported, not found, never called), also by a process that stepped another stage, so
    the report can name a stage that no process ever ran.
    Child processes of multiprocessing (data-loader and compile workers) and processes whose
    output directory was never created by a launcher write nothing.
    """
    if os.getpid() != pid:
        return
    try:
        import json
        import multiprocessing

        from npuprof_launch import naming, options, report, session, targets

        declared = targets.idle_report()
        stepped = _session is not None or len(declared) < len(targets.declared())
        if stepped and not declared:
            return

        if multiprocessing.parent_process() is not None:
            return
        raw = os.environ.get(options.BY_NAME["output-dir"].env) or options.BY_NAME["output-dir"].default
        folder = naming.status_dir(session.resolve_output_dir(raw, os.environ))
        if not os.path.isdir(folder):
            return
        line = {
            "pid": os.getpid(),
            "host": naming.host(),
            "rank": naming.rank_from_env(),
            "run_id": os.environ.get(session.RUN_ID_VAR, ""),
            "argv": sys.argv[:3],
            "stepped": stepped,
            "declared": declared,
        }
        fd = os.open(os.path.join(folder, report.IDLE_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o664)
        with os.fdopen(fd, "a") as handle:
            handle.write(json.dumps(line) + "\n")
    except Exception:  # noqa: BLE001 - a tally is never worth a traceback at exit
        pass


def first_step():
    """Called by a clock at the first counted step: build this process's one session."""
    global _session
    if _session is not None:
        return _session
    from npuprof_launch import session

    _session = session.Session.from_env(os.environ, warn)
    return _session


def forget_after_fork() -> None:
    """In a forked child: drop the parent's session without touching its profiler."""
    global _session
    if _session is not None:
        _session.abandon()
    _session = None
