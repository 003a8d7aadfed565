"""What happened to a process's profiling, as data: one closed table of outcome kinds.

A process records each outcome as ``{"kind": KIND, "step": N, ...fields}`` in its status record
(``outcomes``), beside the sentence it says (``warnings``, kept for readers of older records). The
report decides from kinds and fields, never from the sentences: rewording a sentence here changes
what the user reads, never a verdict. Every sentence is made by ``sentence`` from the table, so
the record, the ``npuprof:`` line, the summary, ``--json`` and the page say the same words.

Records written before outcomes existed carry only sentences; ``of_record`` reads those back into
outcomes once, here (``_from_sentence``), so no other module matches text.

Standard library only: the in-process wing imports this before torch.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from npuprof_launch.common import numbering

if TYPE_CHECKING:
    from collections.abc import Mapping

#: A window stopped before its last step (``by``: a key of CUT_BY; ``kept``: [first, last] steps
#: its trace keeps, or None when it held no whole step; ``idle_s``: how long the process had not
#: stepped by then, where it was not stopped at a step; ``limit_s``: --window-timeout's value).
CUT_SHORT = "cut_short"
#: The job stepped again after --window-timeout closed its window at step ``closed_at``: the
#: window stays over (it is not reopened).
STEPPED_AFTER_TIMEOUT = "stepped_after_timeout"
#: A window open on another thread at the process's end: stopping it from this one could crash the
#: process, so it is lost (``by`` as for CUT_SHORT).
LOST_ON_THREAD = "lost_on_thread"
#: A declared function's calls run off the main thread, where no window over several calls starts.
OFF_MAIN_THREAD = "off_main_thread"
#: Calls of a declared function on threads other than the first to call it: not counted.
OTHER_THREADS = "other_threads"
#: A window started later than due (``due``, ``first``, ``last``: the steps it records; ``why``: a
#: key of LATE_WHY).
LATE_START = "late_start"
#: The process's profiler recorded another clock's window when this one's was due.
SLOT_BUSY = "slot_busy"
#: The job runs a torch profiler of its own: ours stopped and declined.
JOB_PROFILER = "job_profiler"
#: The program ended with an uncaught exception (``type``, ``message``: its first line, or None;
#: ``at_ns``: the wall clock as the exit handlers began, the order in which the processes raised).
UNCAUGHT = "uncaught"
#: --from-step: a window's recorded steps had passed before the process's first step, the job's step
#: ``began`` (a job resumed past them): not recorded (``first``, ``last``: the job's steps it asked
#: for; ``source``: a key of numbering.SOURCES).
FROM_STEP_PASSED = "from_step_passed"
#: --from-step counts this process's steps, the job's numbering being unknown (``source`` says why).
NUMBERING_UNKNOWN = "numbering_unknown"
#: A window a request asked for (``--on-slowdown``, ``--trigger``) that the job ended before it
#: began (``first``, ``last``: its steps; ``reason``: the slowdown it was asked for, if any): what
#: happened, not a failure of the tool's (``step``: the job's last step).
NOT_REACHED = "not_reached"
#: A window recorded while the process ran an RPC agent (torch.distributed.rpc): torch profiles
#: the caller's side of each RPC call only (``step``: the window's first step).
RPC_AGENT = "rpc_agent"
#: A sentence without a kind of its own (a profiler's log line, an option the backend ignores):
#: told as it is, decided on by nobody (``text``).
NOTE = "note"

#: What cut a window short: the key a record holds, and the words for it.
CUT_BY = {
    "exit": "the end of the process",
    "os._exit": "os._exit",
    "os.exec": "os.exec",
    "SIGTERM": "SIGTERM",
    "SIGINT": "SIGINT (KeyboardInterrupt)",
    "size_cap": "--max-window-mb",
    "window_timeout": "--window-timeout",
    "job_profiler": "the job's own torch profiler",
}
#: From how many seconds without a step before a window was cut short the sentence tells it.
IDLE_TOLD_S = 1.0
#: Why a window started late.
LATE_WHY = {
    "step_one": "the optimizer.step clock cannot see the start of step 1: use --skip-first 1 or more, or --target",
    "no_safe_point": "no moment outside backward and the job's ranges came before it",
}

JOB_PROFILER_SENTENCE = (
    "the job runs a torch profiler of its own (torch.profiler.profile, or a framework's such as "
    "Lightning's profiler='pytorch'); npuprof does not run a second one in this process, as two at once "
    "crash it: drop one of the two"
)

RPC_SENTENCE = (
    "a window recorded while this process ran an RPC agent (torch.distributed.rpc): torch profiles RPC calls on the "
    "caller's side only, and its line \"Profiling a distributed call with the Kineto profiler will profile the "
    'caller, but not the worker" says so (docs/scenarios.md)'
)

#: Every kind and the fields it carries beside ``kind`` and ``step``: the table's closed set.
KINDS = {
    CUT_SHORT: ("by", "kept", "limit_mb", "grown_mb", "limit_s", "idle_s"),
    STEPPED_AFTER_TIMEOUT: ("closed_at",),
    LOST_ON_THREAD: ("by",),
    OFF_MAIN_THREAD: ("function", "thread"),
    OTHER_THREADS: ("function", "thread"),
    LATE_START: ("due", "first", "last", "why"),
    SLOT_BUSY: ("clock", "holder"),
    JOB_PROFILER: (),
    UNCAUGHT: ("type", "message", "at_ns"),
    FROM_STEP_PASSED: ("first", "last", "began", "source"),
    NUMBERING_UNKNOWN: ("from_step", "source"),
    NOT_REACHED: ("first", "last", "reason"),
    RPC_AGENT: (),
    NOTE: ("text",),
}
#: The kinds that say a window was stopped or never run because of a thread.
THREAD_KINDS = (LOST_ON_THREAD, OFF_MAIN_THREAD, OTHER_THREADS)


def make(kind: str, step: int | None, **fields) -> dict:
    """One outcome; a kind or field off the table is a bug of ours, so it raises (callers guard)."""
    allowed = KINDS[kind]
    unknown = set(fields) - set(allowed)
    if unknown:
        raise ValueError(f"outcome {kind}: fields off the table: {sorted(unknown)}")
    return {"kind": kind, "step": step, **fields}


def cut_words(outcome: dict) -> str:
    """What cut the window, in words (the size cap with its numbers)."""
    by = outcome.get("by")
    if by == "size_cap":
        grown = outcome.get("grown_mb")
        return f"--max-window-mb {outcome.get('limit_mb')} (the process grew by {grown} MB while it recorded)"
    if by == "window_timeout":
        return f"--window-timeout {_number(outcome.get('limit_s'))} (no step for {outcome.get('idle_s')} s)"
    return CUT_BY.get(str(by), str(by))


def _number(value) -> str:
    """A number as the user typed it: 2, not 2.0."""
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def idle_told(outcome: dict) -> float | None:
    """How long before its end a cut window's process had stopped stepping, where that is worth
    telling (an idle inference rank, a stuck job: IDLE_TOLD_S or more), else None; --window-timeout's
    words say it already."""
    idle = outcome.get("idle_s")
    if outcome.get("by") == "window_timeout" or not isinstance(idle, (int, float)) or idle < IDLE_TOLD_S:
        return None
    return idle


def idle_words(outcome: dict) -> str:
    idle = idle_told(outcome)
    return "" if idle is None else f", {idle} s after its last step"


def kept_words(outcome: dict) -> str:
    """What a cut window's trace keeps."""
    kept = outcome.get("kept")
    return f"its trace keeps steps {kept[0]}-{kept[1]}" if kept else "it had recorded no whole step"


def sentence(outcome: dict) -> str:
    """The one sentence of an outcome: the record's warning, the ``npuprof:`` line, the report's words."""
    kind, step = outcome["kind"], outcome.get("step")
    if "text" in outcome:  # a note, or an older record's sentence read back
        return str(outcome["text"])
    if kind == CUT_SHORT:
        return f"window cut short by {cut_words(outcome)} at step {step}{idle_words(outcome)}; {kept_words(outcome)}"
    if kind == STEPPED_AFTER_TIMEOUT:
        return (
            f"the job stepped again (step {step}) after --window-timeout had closed its window at step "
            f"{outcome.get('closed_at')}: that window stays cut short, it is not reopened"
        )
    if kind == LOST_ON_THREAD:
        return (
            f"window cut short by {cut_words(outcome)} at step {step}: its profiler runs on another thread, and "
            "stopping it from this one could crash the process, so this window is lost"
        )
    if kind == OFF_MAIN_THREAD:
        return (
            f"{outcome['function']}: its calls run on {outcome['thread']}, not on the main thread: a window "
            "over several calls is only started on the main thread (a profiler left running when its thread "
            "ends crashes the process at exit), so none was; --range records single calls on any thread"
        )
    if kind == OTHER_THREADS:
        return (
            f"{outcome['function']}: calls on other threads than {outcome['thread']}, the first to call it, "
            "run unprofiled and are not counted (a profiler starts, steps and stops on one thread)"
        )
    if kind == LATE_START:
        return (
            f"the window due at step {outcome['due']} could start only at step {step} "
            f"({LATE_WHY.get(str(outcome.get('why')), outcome.get('why'))}); it records steps "
            f"{outcome['first']}-{outcome['last']} instead"
        )
    if kind == SLOT_BUSY:
        return (
            f"{outcome['clock']}: a window was due while the profiler of this process recorded "
            f"{outcome['holder']}; it started at the first step after that"
        )
    if kind == JOB_PROFILER:
        return JOB_PROFILER_SENTENCE
    if kind == NOT_REACHED:
        asked = "--on-slowdown asked for" if outcome.get("reason") else "an on-demand request asked for"
        return (
            f"the window on steps {outcome['first']}-{outcome['last']} that {asked} was not reached: "
            f"the job ended at step {step}"
        )
    if kind == RPC_AGENT:
        return RPC_SENTENCE
    if kind == UNCAUGHT:
        message = outcome.get("message")
        return (
            f"the process ended with an uncaught {outcome['type']}"
            + (f" ({message})" if message else "")
            + (f" after step {step}")
        )
    if kind == FROM_STEP_PASSED:
        return (
            f"--from-step: the window of the job's steps {outcome['first']}-{outcome['last']} had passed before this "
            f"process's first step, the job's step {outcome['began']} (numbered by "
            f"{numbering.words(outcome.get('source'))}), so it was not recorded; a --from-step of "
            f"{outcome['began'] + 1} or later places it in this run"
        )
    if kind == NUMBERING_UNKNOWN:
        return (
            f"--from-step {outcome['from_step']} counts this process's steps, as --skip-first does: the job's own "
            f"numbering is unknown here (steps numbered by {numbering.words(outcome.get('source'))})"
        )
    raise ValueError(f"outcome kind off the table: {kind!r}")


def of_record(record: Mapping[str, Any]) -> list[dict]:
    """A status record's outcomes; for a record written before they existed, read from its sentences."""
    recorded = record.get("outcomes")
    if recorded:
        return list(recorded)
    return [_from_sentence(text) for text in record.get("warnings") or ()]


def of_kind(found: list[dict], *kinds: str) -> list[dict]:
    return [outcome for outcome in found if outcome.get("kind") in kinds]


_CUT = re.compile(r"^window cut short by (?P<by>.+?) at step (?P<step>\d+)(?P<rest>[;:].*)$")
_KEPT = re.compile(r"its trace keeps steps (\d+)-(\d+)")
_UNCAUGHT = re.compile(
    r"^the process ended with an uncaught (?P<type>\w+)(?: \((?P<text>.*)\))? after step (?P<step>\d+)$"
)


def _from_sentence(text: str) -> dict:
    """An older record's sentence as an outcome: the kinds the report decides on, else a note."""
    cut = _CUT.match(text)
    if cut:
        words = cut["by"]
        by = next((key for key, value in CUT_BY.items() if value == words), words)
        if by.startswith("--max-window-mb"):
            by = "size_cap"
        step = int(cut["step"])
        if cut["rest"].startswith(":"):
            return make(LOST_ON_THREAD, step, by=by)
        kept = _KEPT.search(cut["rest"])
        return make(CUT_SHORT, step, by=by, kept=[int(kept[1]), int(kept[2])] if kept else None)
    raised = _UNCAUGHT.match(text)
    if raised:
        return {"kind": UNCAUGHT, "step": int(raised["step"]), "type": raised["type"], "message": raised["text"]}
    if "not on the main thread" in text:
        return {"kind": OFF_MAIN_THREAD, "step": None, "text": text}
    if "calls on other threads than" in text:
        return {"kind": OTHER_THREADS, "step": None, "text": text}
    return make(NOTE, None, text=text)


#: A window cut short by the process's end after this many of its step times without a step was
#: left by a process that stopped stepping (an idle rank), not by a job that ran short of steps.
IDLE_STEP_TIMES = 10


def stopped_stepping(cut: dict, median_step_s: float | None) -> bool:
    """Whether a window the process's end cut short (``cut``, CUT_SHORT) was left by a
    process that had stopped stepping: idle for IDLE_TOLD_S or more before it ended, and
    for IDLE_STEP_TIMES of its step times (a job that ran short ends soon after its last step)."""
    idle = idle_told(cut)
    return idle is not None and (not median_step_s or idle >= IDLE_STEP_TIMES * median_step_s)
