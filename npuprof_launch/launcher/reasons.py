"""Why the chain broke, in the report's first reason: why a process's windows did not all complete
(its record's outcomes and the run's end), how the command ended, and why no process profiled.

Decided on data (outcomes.py's kinds, the launcher's account of the run, the process log), never on
the words of a warning.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from npuprof_launch.common import outcomes, processlog
from npuprof_launch.common.record import ReadRecord
from npuprof_launch.launcher import wording

#: Why a Python process may not load the hook, for the report's first reason.
NO_HOOK_CAUSES = (
    "a launch script that replaces PYTHONPATH (keep it: PYTHONPATH=/somewhere:$PYTHONPATH), `env -i`, "
    "`python -I`, `-E` or `-S` (they ignore PYTHONPATH or skip site), or an interpreter without npuprof_launch"
)
PYTHON_FLAGS_WITHOUT_HOOK = {"-I": "isolated mode", "-E": "ignores PYTHON* variables", "-S": "skips site"}


def why_incomplete(
    record: ReadRecord,
    process: dict,
    run: dict | None,
    stale: bool,
    account: dict | None = None,
    ended_in_stop: dict | None = None,
) -> str:
    """The true reason a process's windows did not all complete, the most telling first: decided on
    the record's outcomes (outcomes.py) and the run's own data, never on the words of a warning.
    ``account``: how its launcher saw it end (failures.accounts: ``exitcode``), which says more than
    the command's status (a rank's SIGKILL was told as torchrun's "exited with status 1").
    ``ended_in_stop``: where the process ended in its window's stop, that ``window``
    (record.stop_under_way), what it ``left`` of the export (runs.left_by_stop) and the processes
    it ``forked`` there, still running (leftovers.forked_in_stop)."""
    done = f"{process['windows_completed']} of {process['windows_planned']}"
    steps = record.get("steps")
    at = steps + (record.get("step_offset") or 0) if isinstance(steps, int) else steps  # the job's number of it
    found = outcomes.of_record(record)
    cut = outcomes.of_kind(found, outcomes.CUT_SHORT)
    if record.get("on_demand"):
        return (
            f"{done} requested windows completed: the job ended (or was stopped) before the last requested "
            "window's steps ran"
        )
    threads = outcomes.of_kind(found, *outcomes.THREAD_KINDS)
    if threads:
        return f"{done} windows completed: {outcomes.sentence(threads[0])}"
    passed = outcomes.of_kind(found, outcomes.FROM_STEP_PASSED)
    if passed and len(passed) + process["windows_completed"] >= (process["windows_planned"] or 0):
        return f"{done} windows completed: {outcomes.sentence(passed[0])}"
    ended = how_the_job_ended(run)
    own = _own_end(account)
    if ended_in_stop:
        running = _forked_words(ended_in_stop["forked"], record.get("backend"))
        said = _ended_in_stop(ended_in_stop["window"], own or ended, run, ended_in_stop["left"], running)
        return f"{done} windows completed: {said}"
    raised = [outcomes.sentence(outcome) for outcome in outcomes.of_kind(found, outcomes.UNCAUGHT)]
    if cut:
        kept, by, stopped = outcomes.kept_words(cut[-1]), cut[-1].get("by"), _stopped_by(run)
        for signal_name in ("SIGINT", "SIGTERM"):
            if signal_name in (by, stopped):
                return f"interrupted by {signal_name} at step {at}; {kept} (partial)"
        if raised:
            return f"{done} windows completed: {raised[0]}; {kept}"
        if by == "window_timeout":
            return f"{done} windows completed: {outcomes.sentence(cut[-1])} (partial)"
        if by == "exit":
            if own and not raised:
                return f"{done} windows completed: {own} at step {at}; {kept}"
            if ended:
                return f"{done} windows completed: {ended} at step {at}; {kept}"
            if outcomes.stopped_stepping(cut[-1], process.get("median_step_s")):
                return (
                    f"{done} windows completed: the process stopped stepping after step {at}, inside a window, "
                    f"and ended {cut[-1]['idle_s']} s later; {kept} (partial); --window-timeout SECONDS saves such a "
                    "window while the process still runs"
                )
            return f"{wording.ran_short(record, done, steps)}; {kept}"
        return (
            f"{done} windows completed: the window was cut short by {outcomes.cut_words(cut[-1])} at step {at}; {kept}"
        )
    if raised:
        return f"{done} windows completed: {raised[0]}, before the schedule completed"
    if own:
        return f"{done} windows completed: {own}; last known step {at}"
    if ended:
        return f"{done} windows completed: {ended} after step {steps} of this process, before the schedule completed"
    if stale:
        return (
            f"{done} windows completed: it ended without its exit handlers (os._exit in a library, a kill, out of "
            f"memory); last known step {at}"
        )
    return wording.ran_short(record, done, steps)


def _ended_in_stop(window: dict, how: str | None, run: dict | None, left: Sequence[str], running: str) -> str:
    """ "the command was killed by signal SIGKILL while the profiler stopped its window (steps 3-4)
    and exported it (the command ended 1.0 s after the stop began); ...": the stop is where
    the profiler writes the window out, in the step after it, and a process ended there leaves its
    export unfinished. Where the end was a SIGKILL, the kernel's log tells whether it was the
    out-of-memory killer's (an export holds the window's events in memory)."""
    first, last = window.get("first_step"), window.get("last_step")
    steps = wording.steps(first, last) if last else f"from step {first}"
    how = how or "it ended without its exit handlers"
    text = f"{how} while the profiler stopped its window ({steps}) and exported it"
    end_ns = (run or {}).get("ended_ns")
    if isinstance(end_ns, int) and end_ns >= window["stop_began_ns"]:
        text += f" (the command ended {(end_ns - window['stop_began_ns']) / 1e9:.1f} s after the stop began)"
    if left:
        text += f"; the export left {wording.count(len(left), 'unfinished trace')}: {', '.join(left[:3])}"
    text += running
    if "SIGKILL" in how:
        text += "; dmesg says whether the kernel's out-of-memory killer sent it"
    return text


def _forked_words(forked: Sequence[int], backend: str | None) -> str:
    """ "; it left running 1 process it forked in that stop, pid 8266 (...): kill 8266", or "" (the
    processes: leftovers.forked_in_stop)."""
    if not forked:
        return ""
    pids = [str(pid) for pid in forked]
    what = wording.count(len(forked), "process")
    why = (
        " (torch_npu's parse workers: each waits for its dead parent for ever, the job's output held open)"
        if backend == "npu"
        else ""
    )
    return f"; it left running {what} it forked in that stop, pid {', '.join(pids)}{why}: kill {' '.join(pids)}"


def _own_end(account: dict | None) -> str | None:
    """ "it died of SIGKILL (its launcher's account)", "it exited with status 3 (...)", or None."""
    code = (account or {}).get("exitcode")
    if not isinstance(code, int) or code == 0:
        return None
    if code > 0:
        return f"it exited with status {code} (its launcher's account)"
    return f"it died of {signal_name(-code)} (its launcher's account)"


def signal_name(number: int) -> str:
    """ "SIGKILL" for 9; "signal 77" for a number no signal has."""
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _stopped_by(run: dict | None) -> str | None:
    """ "SIGINT" or "SIGTERM" when the run's data says the command was stopped by one, else None
    (the same cases as _how_the_job_ended's words, read from the data)."""
    if not run or run.get("start_error"):
        return None
    if run.get("signal"):
        return run["signal"] if run["signal"] in ("SIGINT", "SIGTERM") else None
    status = run.get("status")
    if _interrupted(run) and status not in (None, 130):
        return "SIGINT"
    if status in (None, 0):
        return None
    if status == 130:
        return "SIGINT"
    if status == 143 or "SIGTERM" in (run.get("forwarded") or []):
        return "SIGTERM"
    return None


def _interrupted(run: dict) -> bool:
    """SIGINT came: from a terminal, to the job's group (``received``), or to npuprof-run alone,
    which forwarded it (``forwarded``)."""
    return "SIGINT" in (run.get("received") or []) or "SIGINT" in (run.get("forwarded") or [])


def how_the_job_ended(run: dict | None) -> str | None:
    """How the launcher saw the command end, when it did not end well; None for exit status 0."""
    if not run:
        return None
    if run.get("start_error"):
        return f"the command could not start ({run['start_error']})"
    if run.get("signal"):
        forwarded = " (forwarded by npuprof-run)" if run["signal"] in (run.get("forwarded") or []) else ""
        return f"the command was killed by signal {run['signal']}{forwarded}"
    status = run.get("status")
    if _interrupted(run) and status not in (None, 130):
        return f"the command was interrupted (SIGINT; the job caught it and ended with status {status})"
    if status in (None, 0):
        return None
    if status == 130:
        return "the command was interrupted (SIGINT, exit status 130)"
    if status == 143 or "SIGTERM" in (run.get("forwarded") or []):
        return f"the command was stopped (SIGTERM, exit status {status})"
    if status > 128:
        import signal

        try:
            name = signal.Signals(status - 128).name
            return f"the command exited with status {status} (a process died of {name})"
        except ValueError:
            pass
    return f"the command exited with status {status}"


def why_nothing(run: dict | None, log: list[dict], idle: list[dict]) -> str:
    """No process made a record: the first link of the chain that broke."""
    ended = how_the_job_ended(run)
    if run and run.get("start_error"):
        return ended or "the command could not start"
    loaded = [line for line in log if line.get("event") == processlog.LOADED]
    missing = [line for line in log if line.get("event") == processlog.NO_PACKAGE]
    prefix = f"{ended}; " if ended else ""
    if missing and not loaded:
        python = missing[0].get("executable")
        return (
            f"{prefix}no process could load the hook: {python} has no npuprof_launch installed; install it there "
            "(pip install npuprof-launch) or run the job with the Python that has it"
        )
    if not loaded and not idle:
        flags = _python_flags(run.get("command") if run else None)
        cause = f"the command runs python {flags}" if flags else f"the likely causes: {NO_HOOK_CAUSES}"
        if run is None:
            return (
                "no process of this output loaded the hook (nothing in npuprof_status/ says one did; for an env-only "
                f"job run with --print-env that is expected until a process profiles); {cause}"
            )
        return f"{prefix}no Python process loaded the hook ({cause})"
    if not idle:
        count = len(loaded)
        return (
            f"{prefix}{wording.count(count, 'Python process')} loaded the hook, but none imported torch "
            "(the job is not a PyTorch job, or it ended before importing torch)"
        )
    idle_count = sum(1 for line in idle if not line.get("stepped"))
    if ended:
        return f"{ended} before any step ({wording.count(idle_count, 'process')} had imported torch)"
    return wording.no_step(idle_count, idle)


def _python_flags(command: list[str] | None) -> str:
    """The flags of a ``python`` command that keep the hook out (-I, -E, -S), or an empty string."""
    if not command or "python" not in os.path.basename(command[0]):
        return ""
    found = []
    for arg in command[1:]:
        if not arg.startswith("-") or arg.startswith("--") or arg in ("-c", "-m"):
            break
        for letter in arg[1:]:
            flag = f"-{letter}"
            if flag in PYTHON_FLAGS_WITHOUT_HOOK:
                found.append(f"{flag} ({PYTHON_FLAGS_WITHOUT_HOOK[flag]})")
    return ", ".join(found)
