"""Why a process's profiling ended, in the words its record and its ``npuprof:`` lines use.

When the process ends (process.py tells the session how: record.ENDED_*), a window still open is
cut short and its warning names what cut it: the end of the process, ``os._exit``, ``os.exec``,
SIGTERM, or Ctrl-C. A program that ended with an uncaught exception leaves one more warning, so
that the report says the job failed rather than that the profiler lost its steps. The interpreter
keeps that exception for the exit handlers; reading it costs nothing and imports nothing.
"""

from __future__ import annotations

import sys

from npuprof_launch.common import record

#: What cut an open window short, for each way the process ends.
REASONS = {
    record.ENDED_EXIT: "the end of the process",
    record.ENDED_FAST: "os._exit",
    record.ENDED_EXEC: "os.exec",
    record.ENDED_SIGNAL: "SIGTERM",
}


def reason_and_warning(how: str, steps: int) -> tuple[str, str | None]:
    """What cut an open window short when the process ends ``how`` after ``steps`` steps, and the
    warning an uncaught exception leaves (None without one, or for a KeyboardInterrupt, which is
    the reason instead). Only a normal exit (record.ENDED_EXIT) looks for an exception."""
    reason = REASONS.get(how, how)
    uncaught = uncaught_exception() if how == record.ENDED_EXIT else None
    if isinstance(uncaught, KeyboardInterrupt):
        return "SIGINT (KeyboardInterrupt)", None
    if uncaught is None:
        return reason, None
    text = str(uncaught).splitlines()[0][:200] if str(uncaught) else ""
    warning = (
        f"the process ended with an uncaught {type(uncaught).__name__}"
        + (f" ({text})" if text else "")
        + f" after step {steps}"
    )
    return reason, warning


def uncaught_exception():
    """At exit: the exception that ended the main program, if one did (the interpreter keeps it)."""
    return getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
