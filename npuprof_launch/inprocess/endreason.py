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
    message = said(str(uncaught))
    kind = type(uncaught).__name__
    return cause, outcomes.make(outcomes.UNCAUGHT, steps, type=kind, message=message, at_ns=time.time_ns())


#: How much of an exception's message a record keeps.
MESSAGE_CHARS = 200


def said(message: str) -> str | None:
    """An exception's message in one line of MESSAGE_CHARS at most, "..." where cut: its first line,
    and its last where it has several (a DataLoader worker's "Caught IndexError in DataLoader worker
    process 1." has the cause on its last line, after the worker's traceback)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return None
    one = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return one if len(one) <= MESSAGE_CHARS else one[: MESSAGE_CHARS - 3].rstrip() + "..."


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


def children_ended() -> list[dict] | None:
    """At exit of a launcher whose children failed: each failed child's ``pid``, ``rank`` and
    ``exitcode`` (negative: the signal that ended it) as the launcher saw it, which the children's
    own records cannot say (a process killed by a signal writes nothing as it dies, and one that
    calls sys.exit(3) raises nothing). torchrun's agent raises ChildFailedError (``failures``: each
    rank's ProcessFailure); mp.spawn's parent ProcessExitedException (``error_pid``, ``exit_code``).
    None otherwise."""
    raised = uncaught_exception()
    kind = type(raised).__name__
    if kind == "ChildFailedError":
        failures = getattr(raised, "failures", None)
        ended = [
            {"pid": failure.pid, "rank": rank if isinstance(rank, int) else None, "exitcode": failure.exitcode}
            for rank, failure in (failures.items() if isinstance(failures, dict) else ())
            if isinstance(getattr(failure, "pid", None), int) and isinstance(getattr(failure, "exitcode", None), int)
        ]
        return ended or None
    if kind == "ProcessExitedException":
        pid, code = getattr(raised, "error_pid", None), getattr(raised, "exit_code", None)
        if isinstance(pid, int) and isinstance(code, int):
            return [{"pid": pid, "rank": None, "exitcode": code}]
    return None
