"""The status record: what the chain did in one process, kept on disk as it happens.

One JSON file per process (and stage) under ``OUT/npuprof_status/``, written by the session at
its creation, at every window edge, every few seconds while it counts, and at its end, each time
whole (files.write_json). The report, ``--check``, ``--trigger`` and the tests read it through
``read_all``, which fills in what an older record lacks; ``StatusRecord`` is the one schema.

A record whose ``ended`` is still empty belongs to a process that is running, or that ended
without its exit handlers (``os._exit`` done elsewhere, SIGKILL, an out-of-memory kill): its
counts are then the last ones written, at most a few seconds old.
"""

from __future__ import annotations

import enum
import os
from typing import TYPE_CHECKING, Any, TypedDict, cast

from npuprof_launch.common import files, names, stepmark

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


class State(str, enum.Enum):
    """Where a process's profiling stands (the value is what the record holds)."""

    WAITING = "waiting"  # counting steps; a window lies ahead (or, on demand, may be asked for)
    RUNNING = "running"  # a window records
    DONE = "done"  # every window is saved; only counting
    FAILED = "failed"  # the profiler failed; only counting
    OFF = "off"  # this process does not profile: --ranks, bad options, another profiler owns it


#: How a process ended, in ``ended``.
ENDED_EXIT = "exit"  # the interpreter's exit handlers ran
ENDED_EXEC = "exec"  # it replaced itself with os.exec*: a new record follows under the same pid
ENDED_FAST = "os._exit"  # it left through os._exit (every fork-started multiprocessing child does)
ENDED_SIGNAL = "signal"  # a signal ended it (SIGTERM flushed the window first)


class StatusRecord(TypedDict):
    """Every field of a status record, typed: what sessionrecord.to_record builds (the type
    checker holds it to every field) and what every reader gets (``read_all`` fills in what an
    older record lacks from DEFAULTS)."""

    host: str | None
    pid: int | None
    rank: int | None
    #: Where the rank came from: torch.distributed, a launcher's variable (RANK, ...), or None.
    rank_source: str | None
    worker: str | None
    run_id: str
    #: The attempt of the job (0; N after torchelastic's Nth restart): attempts are never compared.
    attempt: int
    argv: list[str]
    state: str
    clock: str
    target: str | None
    stage: str | None
    range: bool
    on_demand: bool
    requests: list[dict]
    backend: str | None
    options: dict
    #: Steps this process counted (from 1 at its first step, whatever the job's numbering).
    steps: int
    #: The job's number of the step before this process's first: 0 for a job that begins here, N for
    #: one resumed after N steps. Every other step number of the record (windows, outcomes) is the
    #: job's; ``steps`` and the step times file count this process's.
    step_offset: int
    #: Where ``step_offset`` came from: a key of common/numbering.SOURCES (None in an older record).
    numbered_by: str | None
    mean_step_s: float | None
    window_steps: list[int] | None
    #: Each window: first_step and last_step in the job's numbering (the whole steps recorded),
    #: complete, traces (paths relative to the output directory); with aftercare, aftercare (its
    #: result file), aftercare_pid (its process, which outlives a killed job's) and aftercare_steps
    #: ([first, last] steps it ran beside; last None while it runs); profiler_steps_from, the
    #: ProfilerStep# number of the window's first traced step (the job's number of that step, or
    #: 0 where the profiler had no counter to set: torch_npu before 2.6.0); start_s, the seconds the
    #: profiler's start took (its first start in a process loads its libraries); stop_s, the seconds
    #: its stop took, the export with it (an async export's parse runs on after it); stop_began_ns
    #: (ns since the epoch) only while the stop runs: a record that keeps it ended in that stop.
    windows: list[dict]
    schedule_steps: int
    windows_planned: int
    windows_completed: int
    partial_traces: int
    traces: list[str]
    warnings: list[str]
    #: What happened, as data: outcomes.py's {"kind", "step", ...fields}; the sentences are in warnings.
    outcomes: list[dict]
    errors: list[str]
    #: The errors the profiler itself printed, in its words (None in a record written before they
    #: were kept apart: there they are sentences among ``errors``).
    profiler_errors: list[str] | None
    declined: str | None
    #: The whole-run step times file, relative to the output directory (None when off).
    step_times: str | None
    #: stepstats.rank_stats of the whole run, written at the process's end (None before, or when killed).
    step_stats: dict | None
    #: What the tool's own checkpoints (this record, the step times, a poll for requests) took of the
    #: job's steps: [step, seconds], the step whose duration holds it, numbered as the step times are
    #: (this process's steps); the costliest 64 of 1 ms or more (inprocess/steptiming.py).
    checkpoint_s: list[list]
    #: How long the stepping thread waited for a CPU (runnable, not running), by blocks of steps
    #: numbered as the step times are: {"blocks": [[first, last, seconds], ...] (the longest 64 of
    #: 5 ms or more), "covered": [[first, last], ...] (the steps read), "at_most_s": the most any
    #: covered block not kept waited}; None where the kernel does not say (inprocess/cpuwait.py).
    cpu_wait: dict | None
    #: How many errors and warnings the profiler itself logged ({"error": n, "warning": n}).
    profiler_messages: dict[str, int]
    started_ns: int
    updated_ns: int
    #: How the process ended (ENDED_*), or None while it runs or when it ended without its handlers.
    ended: str | None
    #: The hang watch (inprocess/hangwatch.py): {"stacks": file relative to the output directory,
    #: "after_s": threshold, "main_thread": the main thread's id in the dumps}, or None when off.
    hang_watch: dict | None
    #: Gaps between steps longer than the threshold that ended: {"step" (the last step before it),
    #: "seconds", "dumps" (stack dumps in the file by then), "at_end" (the process then ended)}.
    pauses: list[dict]
    #: Each gloo worker thread of the process, by its system tid (a string), and the label of the
    #: process group it serves, its global ranks ("0,2"; inprocess/groupthreads.py): a trace's
    #: collectives are matched within their own group with it. Empty where none was seen made.
    gloo_threads: dict[str, str]


class ReadRecord(StatusRecord, total=False):
    """A record as read: besides its fields, the file it came from; a file that could not be read
    comes back as ``{"file", "unreadable"}`` alone, and every reader looks at ``unreadable`` first."""

    file: str
    unreadable: str
    #: ``steps`` was read from the step mark (common/stepmark.py) of a process of this host that
    #: has not ended: the step it is at, or stopped after, even past its last checkpoint.
    marked: bool


#: The value each field of a record that lacks it (an older one) is read with.
DEFAULTS: StatusRecord = {
    "host": None,
    "pid": None,
    "rank": None,
    "rank_source": None,
    "worker": None,
    "run_id": "",
    "attempt": 0,
    "argv": [],
    "state": State.WAITING.value,
    "clock": "",
    "target": None,
    "stage": None,
    "range": False,
    "on_demand": False,
    "requests": [],
    "backend": None,
    "options": {},
    "steps": 0,
    "step_offset": 0,
    "numbered_by": None,
    "mean_step_s": None,
    "window_steps": None,
    "windows": [],
    "schedule_steps": 0,
    "windows_planned": 0,
    "windows_completed": 0,
    "partial_traces": 0,
    "traces": [],
    "warnings": [],
    "outcomes": [],
    "errors": [],
    "profiler_errors": None,
    "declined": None,
    "step_times": None,
    "step_stats": None,
    "checkpoint_s": [],
    "cpu_wait": None,
    "profiler_messages": {},
    "started_ns": 0,
    "updated_ns": 0,
    "ended": None,
    "hang_watch": None,
    "pauses": [],
    "gloo_threads": {},
}
#: The fields, in the order they are written.
FIELDS: tuple[str, ...] = tuple(DEFAULTS)


def write(path: str, record: StatusRecord) -> None:
    """Write a record whole; its fields must be exactly the schema's."""
    unknown = set(record) - set(FIELDS)
    missing = set(FIELDS) - set(record)
    if unknown or missing:
        raise ValueError(f"status record fields off the schema: unknown {sorted(unknown)}, missing {sorted(missing)}")
    files.write_json(path, record)


def normalized(raw: dict) -> ReadRecord:
    """A record as read, with every field of the schema (an older record lacks some)."""
    record = {name: _copy(default) for name, default in DEFAULTS.items()}
    record.update(raw)
    return cast(ReadRecord, record)  # an older record's values are of the types it was written with


def read_all(status_dir: str) -> list[ReadRecord]:
    """Every status record in ``status_dir``, normalized; an unreadable one comes back as
    ``{"file": NAME, "unreadable": REASON}``."""
    import json

    records: list[ReadRecord] = []
    try:
        entries = sorted(os.listdir(status_dir))
    except OSError:
        return records
    for entry in entries:
        if not entry.endswith(".json"):
            continue
        try:
            with open(os.path.join(status_dir, entry)) as handle:
                raw = json.load(handle)
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            records.append(cast(ReadRecord, {"file": entry, "unreadable": str(exc)}))
            continue
        record = normalized(raw)
        record["file"] = entry
        if record["ended"] is None:  # its count may have gone on since its last write: the mark has it
            marked = stepmark.read(os.path.join(status_dir, entry))
            if marked is not None:  # on another host it shows the last page the kernel wrote back
                record["steps"], record["marked"] = max(marked, record["steps"]), record["host"] == names.host()
        records.append(record)
    return records


def read_dir(output_dir: str) -> list[ReadRecord]:
    return read_all(names.status_dir(output_dir))


def alive_here(record: Mapping[str, Any]) -> bool:
    """Whether the record's process still runs on this host (a record may be read mid-run)."""
    if record.get("host") != names.host() or not isinstance(record.get("pid"), int):
        return False
    try:
        os.kill(record["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_under_way(record: Mapping[str, Any]) -> dict | None:
    """The window whose stop (its export with it) began and never returned, if any: the process
    ended in it, or, read while it runs (alive_here), is in it now."""
    for window in reversed(record.get("windows") or ()):
        if isinstance(window, dict) and isinstance(window.get("stop_began_ns"), int):
            return window
    return None


def _copy(value):
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


def attempt_of(record: Mapping[str, Any]) -> int:
    """Which attempt of its job a process belongs to: 0 for the first, N after the Nth restart
    (older records lack the field; their worker name still says it)."""
    attempt = record.get("attempt")
    if isinstance(attempt, int) and attempt > 0:
        return attempt
    return names.attempt_of_worker(record.get("worker"))


def process_count(rows: Sequence[Mapping[str, Any]]) -> int:
    """Processes counted once: a process with several stages (``--scenario rl`` without ``--split``)
    has a report row, and a record, per stage."""
    return len({(row.get("host"), row.get("pid"), attempt_of(row)) for row in rows})
