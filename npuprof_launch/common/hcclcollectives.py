"""Each HCCL operation of an NPU session, with how long this rank waited in it.

The same list per rank as tracecollectives.py makes of a torch trace, ``(key, group, step, wait_s,
start_s)``, for the test of which rank the others wait for (launcher/collectives.py): the rank that
reaches a collective last waits least in it. Read from what torch_npu's parse writes into the
session's ``ASCEND_PROFILER_OUTPUT/`` (its sources: ``prof_view/_communication_parser.py`` for the
text export, ``prof_view/prof_db_parse/_trace_step_time_db_parser.py`` and
``_step_info_db_parser.py`` for the db's ``COMMUNICATION_OP`` and ``STEP_TIME``):

- text, ``communication.json``: per step (``step{N}``), each collective operation keyed
  ``{op name}@{group}``, its "Communication Time Info": "Wait Time(ms)" (the wait for the other
  ranks: what the test reads), "Elapse Time(ms)", "Start Timestamp(us)". An op's name carries the
  group's and the op's own numbers (``hcom_allReduce__123_0_1``), the same on every rank.
- db, ``ascend_pytorch_profiler[_{rank}].db``: ``COMMUNICATION_OP`` (opName and groupName through
  ``STRING_IDS``, startNs, endNs) and ``STEP_TIME`` (id, startNs, endNs): an op's wait is not kept
  there, its duration stands for it (the last to arrive has the shortest), and its step is the one
  whose span holds its start.

An op starts when the rank's stream gets to it: one queued behind the ops before it is read as
reached when they began (_reached), as a call is on CPU (tracecollectives.py); a DDP step's later
buckets are queued so on every rank while the transfers run, and a rank late at the step shows in
the run of them, not in its last op's own wait.

The text export is read where both are. None where the session holds neither (a one-process job,
Level_none, a parse that did not run): the report then judges as it can without them.
"""

from __future__ import annotations

import json
import os
import sqlite3

from npuprof_launch.common import deliverables, tracecollectives

Found = list[tuple[str, str, int, float, float]]
COMMUNICATION = "communication.json"
TIME_INFO = "Communication Time Info"
COLLECTIVE = "collective"
STEP_PREFIX = "step"
#: An op of the db export that starts this long before its step's span still belongs to it (the
#: step boundary is the host's, the op's start the device's).
DB_SLACK_NS = 0
#: An op that starts this soon (s) after the ops before it on the rank's stream were done was queued
#: behind them: the rank had reached it already (the stand-in's ops, 4-rank DDP: queued ones started
#: at most 0.07 ms after, ones the rank reached later 0.37 ms after at least; a device stream's next
#: task follows within microseconds).
QUEUED_S = 0.0001


class Read(list):
    """The operations ``of_session`` read, and where from (``source``: ``communication.json``, or
    ``COMMUNICATION_OP (db export)``), for the answer to say which files it read."""

    source = ""


def of_session(path: str, most: int = 512) -> Read | None:
    """The session's collective operations, the first ``most`` of each step alike, each as reached
    (_reached); None where it holds no communication data."""
    output = os.path.join(path, deliverables.ASCEND_OUTPUT)
    found = _text(os.path.join(output, COMMUNICATION))
    source = COMMUNICATION
    if found is None:
        found, source = _db(output), "COMMUNICATION_OP (db export)"
    if found is None:
        return None
    by_step: dict[int, Found] = {}
    for item in _reached(found):
        by_step.setdefault(item[2], []).append(item)
    kept = max(1, most // max(1, len(by_step)))
    read = Read(item for step in sorted(by_step) for item in by_step[step][:kept])
    read.source = source
    return read


def _reached(found: list[tuple[str, str, int, float, float, float]]) -> Found:
    """Each op as the judge takes a collective, from when this rank reached it: an HCCL op starts
    when the rank's stream gets to it, and one queued behind the ops before it (started within
    QUEUED_S of their end, or while they ran) was reached when the first of them was; its wait
    runs from there. A step's DDP buckets offered while the others' transfers still run are queued
    on every rank, so their own waits are alike: a rank late at the step's first bucket waits less
    in the whole run, not in its last op alone (which the judge reads). Runs end at a step's end.
    In the order of each step's ops, by their own start."""
    reached = []
    runs: dict[tuple[str, int], tuple[float, float]] = {}  # (group, step) -> its run's start and end
    for key, group, step, wait, start, end in sorted(found, key=lambda item: (item[2], item[4])):
        run = runs.get((group, step))
        run = (start, end) if run is None or start > run[1] + QUEUED_S else (run[0], max(run[1], end))
        runs[group, step] = run
        reached.append((key, group, step, wait + (start - run[0]), run[0]))
    return reached


def _text(path: str) -> list[tuple[str, str, int, float, float, float]] | None:
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    found = []
    for step_name, split in data.items():
        if not (isinstance(step_name, str) and step_name.startswith(STEP_PREFIX)) or not isinstance(split, dict):
            continue
        try:
            step = int(step_name[len(STEP_PREFIX) :])
        except ValueError:
            continue
        for key, op in (split.get(COLLECTIVE) or {}).items():
            info = op.get(TIME_INFO) if isinstance(op, dict) else None
            if not isinstance(info, dict) or "@" not in key:
                continue
            group = key.rsplit("@", 1)[1]
            elapse_ms = info.get("Elapse Time(ms)")
            wait_ms = info.get("Wait Time(ms)", elapse_ms)
            try:
                start = float(info.get("Start Timestamp(us)") or 0.0) / 1e6
                end = start + float(elapse_ms or wait_ms or 0.0) / 1e3
                found.append((key, group, step, float(wait_ms or 0.0) / 1e3, start, end))
            except (TypeError, ValueError):
                continue
    return found


def _db(output: str) -> list[tuple[str, str, int, float, float, float]] | None:
    try:
        names = deliverables.db_names(output)
    except OSError:
        return None
    for name in names:
        try:
            connection = deliverables.read_only(os.path.join(output, name))
        except sqlite3.Error:
            continue
        try:
            strings = dict(connection.execute("SELECT id, value FROM STRING_IDS").fetchall())
            steps = sorted(
                connection.execute("SELECT id, startNs, endNs FROM STEP_TIME").fetchall(), key=lambda s: s[1]
            )
            ops = connection.execute("SELECT opName, groupName, startNs, endNs FROM COMMUNICATION_OP").fetchall()
        except sqlite3.Error:
            continue
        finally:
            connection.close()
        found = []
        for op, group, start, end in ops:
            if tracecollectives.point_to_point(str(strings.get(op, op))):
                continue  # a pipeline's send or receive: no collective (the text export keeps them apart)
            step = next((number for number, low, high in steps if low - DB_SLACK_NS <= start < high), None)
            if step is None:
                continue
            group_name = str(strings.get(group, group))
            key = f"{strings.get(op, op)}@{group_name}"
            found.append((key, group_name, int(step), (end - start) / 1e9, start / 1e9, end / 1e9))
        return found
    return None


STEP_TRACE_TIME = "step_trace_time.csv"


def step_rows(path: str) -> list[tuple]:
    """Each recorded step's row of the session's step trace: ``(step, computing, communication not
    overlapped, free, communication)`` as written (strings from the text export; the step is the
    profiler's ``ProfilerStep#`` number, "" for a window with none). Empty where there is none."""
    import csv

    output = os.path.join(path, deliverables.ASCEND_OUTPUT)
    columns = ("Step", "Computing", "Communication(Not Overlapped)", "Free", "Communication")
    try:
        with open(os.path.join(output, STEP_TRACE_TIME), newline="") as handle:
            return [tuple(row.get(c) for c in columns) for row in csv.DictReader(handle)]
    except (OSError, csv.Error):
        return _analysis_rows(os.path.join(output, ANALYSIS_DB))


def totals(rows: list[tuple]) -> tuple[int, float, float] | None:
    """A session's recorded steps, their time and the time they spent in communication (us), from
    its ``step_rows``: ``step_trace_time.csv`` (text) or ``analysis.db``'s ``StepTraceTime`` (db;
    torch_npu's ``_trace_step_time_parser.py`` and ``_trace_step_time_db_parser.py``: per step,
    Computing, Communication(Not Overlapped), Overlapped, Communication, Free; a step's time is its
    computing, its communication not overlapped and its free time, as msprof-analyze adds them);
    None where the session has neither (Level_none, a parse that did not run)."""
    steps, window, communication = 0, 0.0, 0.0
    for _, computing, not_overlapped, free, total in rows:
        try:
            window += float(computing) + float(not_overlapped) + float(free)
            communication += float(total)
        except (TypeError, ValueError):
            continue
        steps += 1
    return (steps, window, communication) if steps else None


def computing(rows: list[tuple]) -> list[tuple[int, float]] | None:
    """The device's computing time (s) in each recorded step of ``step_rows``, by the profiler's
    step number: the NPU's own work, whoever held the host's cores (launcher/cputime.py judges it
    as a thread's time on a CPU). None where no row has a step number and a time."""
    found = []
    for step, time_us, *_ in rows:
        try:
            found.append((int(step), float(time_us) / 1e6))
        except (TypeError, ValueError):
            continue
    return found or None


ANALYSIS_DB = "analysis.db"


def _analysis_rows(path: str) -> list[tuple]:
    if not os.path.exists(path):
        return []
    try:
        connection = deliverables.read_only(path)
        try:
            query = "SELECT step, computing, communication_not_overlapped, free, communication FROM StepTraceTime"
            return connection.execute(query).fetchall()
        finally:
            connection.close()
    except sqlite3.Error:
        return []
