"""Why a process's profiling ended, as outcomes.py's data.

When the process ends (process.py tells the session how: record.ENDED_*), a window still open is
cut short and its outcome names what cut it (a key of outcomes.CUT_BY): the end of the process,
``os._exit``, ``os.exec``, SIGTERM, or Ctrl-C. A program that ended with an uncaught exception
leaves one more outcome, so that the report says the job failed rather than that the profiler
lost its steps. The interpreter keeps that exception for the exit handlers; reading it costs
nothing and imports nothing.
"""

from __future__ import annotations

import sys
import time

from npuprof_launch.common import outcomes, record

#: What cut an open window short (outcomes.CUT_BY's keys), for each way the process ends.
CAUSES = {
    record.ENDED_EXIT: "exit",
    record.ENDED_FAST: "os._exit",
    record.ENDED_EXEC: "os.exec",
    record.ENDED_SIGNAL: "SIGTERM",
}


def cause_and_uncaught(how: str, steps: int) -> tuple[str, dict | None]:
    """What cut an open window short when the process ends ``how`` after ``steps`` steps, and the
    outcome an uncaught exception leaves (None without one, or for a KeyboardInterrupt, which is
    the cause instead). Only a normal exit (record.ENDED_EXIT) looks for an exception."""
    cause = CAUSES.get(how, how)
    uncaught = uncaught_exception() if how == record.ENDED_EXIT else None
    if isinstance(uncaught, KeyboardInterrupt):
        return "SIGINT", None
    if uncaught is None:
        return cause, None
    message = str(uncaught).splitlines()[0][:200] if str(uncaught) else None
    kind = type(uncaught).__name__
    return cause, outcomes.make(outcomes.UNCAUGHT, steps, type=kind, message=message, at_ns=time.time_ns())


def uncaught_exception():
    """At exit: the exception that ended the main program, if one did (the interpreter keeps it)."""
    return getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)


def raised_in_child() -> dict | None:
    """At exit: the child whose exception ended this process, where torch.multiprocessing.spawn's
    parent raised ProcessRaisedException for it (mp.spawn's workers catch their exception, hand its
    traceback to the parent and exit 1, so the child's own exit sees none). The child's pid and its
    exception's last line, split into the type and the message; None otherwise."""
    raised = uncaught_exception()
    pid = getattr(raised, "error_pid", None)
    if type(raised).__name__ != "ProcessRaisedException" or not isinstance(pid, int):
        return None
    lines = [line for line in str(getattr(raised, "msg", raised)).splitlines() if line.strip()]
    kind, _, message = (lines[-1] if lines else "").partition(": ")
    kind = kind.strip().rsplit(".", 1)[-1]
    if not kind.isidentifier():
        return None
    return {"child_pid": pid, "type": kind, "message": message.strip()[:200] or None}
