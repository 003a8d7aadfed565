"""Deliverable rules: what a finished trace must contain to count, in one place.

torch backend: a Chrome trace JSON that parses, has events, and has ``ProfilerStep#`` spans.
npu backend: the Ascend layout checks (see ``check_ascend_dir``).
The report, ``--check`` and the tests all use these functions.
"""

from __future__ import annotations

import contextlib
import csv
import gc
import json
import os
import sqlite3
from typing import TYPE_CHECKING

from npuprof_launch.common import names, tracecollectives

if TYPE_CHECKING:
    from collections.abc import Iterable

STEP_PREFIX = "ProfilerStep#"

# The Ascend layout: names and columns as torch_npu writes them (its profiler/analysis/prof_common_func sources;
# tests/npu_layout.py builds session directories in this layout).
PROFILER_INFO_PREFIX = "profiler_info"
ASCEND_OUTPUT = "ASCEND_PROFILER_OUTPUT"
#: torch_npu writes it into ASCEND_PROFILER_OUTPUT/ when a parse ends (2.7.1.post11, 2.8.0.post5,
#: 2.9.0.post9, 2.10 and later), whether the parse succeeded or not: "finished", not "complete".
ANALYSE_DONE = "analyse.done"
#: torch_npu's parse workers log here, inside the session directory (2.1.0.post17, 2.6 and later).
NPU_LOG_DIR = "logs"
NPU_LOG_ERROR = "] [ERROR] ["
TRACE_VIEW = "trace_view.json"
KERNEL_DETAILS = "kernel_details.csv"
OP_STATISTIC = "op_statistic.csv"
OP_TYPE_COLUMN = "OP Type"
OP_TOTAL_COLUMN = "Total Time(us)"
KERNEL_TYPE_COLUMN = "Type"
KERNEL_DURATION_COLUMN = "Duration(us)"
#: Columns each text CSV must have (a subset; kernel_details gains metric columns per --aic-metrics).
CSV_COLUMNS = {
    KERNEL_DETAILS: ("Name", KERNEL_TYPE_COLUMN, KERNEL_DURATION_COLUMN),
    OP_STATISTIC: (OP_TYPE_COLUMN, "Count", OP_TOTAL_COLUMN),
}
#: The profiler levels whose parse writes each text CSV, for a session that traced the NPU (torch_npu's
#: parser lists, the same in 2.4.0 and 2.14.0: kernel_details.csv comes from KernelViewParser, which
#: Level_none's list lacks; op_statistic.csv from IntegrateParser's LEVEL_PARSER_CONFIG, at Level1 and
#: Level2 only). A session of the CPU alone has neither (torch_npu parses it with ONLY_FWK_CONFIG).
CSV_LEVELS = {KERNEL_DETAILS: ("Level0", "Level1", "Level2"), OP_STATISTIC: ("Level1", "Level2")}
#: torch_npu's default level, for a session whose profiler_info does not say.
DEFAULT_LEVEL = "Level0"
DB_PREFIX = "ascend_pytorch_profiler"
DB_DEVICE_TABLE = "NPU_INFO"
#: At least one of these must hold a row: framework, CANN or device activity.
DB_MAIN_TABLES = ("PYTORCH_API", "CANN_API", "TASK", "COMPUTE_TASK_INFO")


#: Collective communication on a torch timeline, by backend: gloo's and NCCL's ranges on the CPU
#: ("gloo:all_reduce", "nccl:all_reduce"), NCCL's kernels, HCCL's ops on an NPU ("hcom_allReduce_").
COLLECTIVE_MARKS = ("gloo:", "nccl:", "ncclDevKernel", "ncclKernel", "hcom_", "Hccl")


class TraceSummary:
    """What one torch trace holds, as far as the report cares."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[str] = []
        self.step_names: list[str] = []
        self.step_durations_us: list[float] = []
        self.self_time_us: dict[str, float] = {}
        #: Time in collectives inside the recorded steps, overlaps counted once (_covered).
        self.collective_us = 0.0
        #: Each collective of the recorded steps with this rank's wait in it, as the window's summary
        #: keeps them (tracecollectives.py); None where the trace does not tell them apart.
        self.collectives: dict | None = None
        self.events = 0


@contextlib.contextmanager
def collector_paused():
    """Pause the cyclic garbage collector while a trace is parsed and walked, or a report built.

    A trace becomes millions of acyclic lists, dicts and tuples: the collector has nothing to
    free there, but it would traverse them again and again as they pile up, more per MB the
    larger the trace (``--check`` time must grow linearly with trace size). A report of 1,024
    ranks is alike: each rank's collectives and step times, half a million small tuples (the
    collector's passes over them were a tenth of ``--check``'s time).
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def open_trace(path: str):
    """A torch trace for reading, plain or gzip (``--gzip``: ``.pt.trace.json.gz``)."""
    import gzip

    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def load_trace_events(path: str) -> list:
    with open_trace(path) as handle, collector_paused():
        data = json.load(handle)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ValueError("no traceEvents list")
    return events


def summarize_torch_trace(path: str, threads: dict[str, str] | None = None) -> TraceSummary:
    """Parse a Chrome trace once: its step spans and the self time of each CPU operator; with the
    process's gloo worker threads (``threads``, the status record's ``gloo_threads``) each
    collective is matched within its process group."""
    with collector_paused():
        return _summarize_torch_trace(path, threads)


def _summarize_torch_trace(path: str, threads: dict[str, str] | None) -> TraceSummary:
    summary = TraceSummary(path)
    try:
        events = load_trace_events(path)
    except (OSError, ValueError) as exc:
        summary.problems.append(f"{path}: not a readable Chrome trace ({exc})")
        return summary
    spans = []
    collectives: list[tuple[float, float]] = []
    step_spans: list[tuple[float, float]] = []
    steps_seen: set[str] = set()
    each = tracecollectives.Gathered(threads)
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        summary.events += 1
        name = str(event.get("name", ""))
        if name.startswith(COLLECTIVE_MARKS) or any(mark in name for mark in COLLECTIVE_MARKS[2:]):
            ts, dur = float(event.get("ts", 0)), float(event.get("dur", 0))
            collectives.append((ts, dur))
            each.marked(name, ts, dur, event.get("args"), event.get("tid"))
        if name.startswith(STEP_PREFIX):
            if str(event.get("cat", "")).startswith("gpu_") or name in steps_seen:
                continue  # a CUDA trace repeats each step on the GPU's timeline: one step, not two
            steps_seen.add(name)
            summary.step_names.append(name)
            summary.step_durations_us.append(float(event.get("dur", 0)))
            step_spans.append((float(event.get("ts", 0)), float(event.get("dur", 0))))
        elif event.get("cat") == "cpu_op":
            spans.append(
                (event.get("pid"), event.get("tid"), float(event.get("ts", 0)), float(event.get("dur", 0)), name)
            )
            if name.startswith(tracecollectives.CALL):
                each.called(name, float(event.get("ts", 0)))
    summary.self_time_us = _self_times(spans)
    summary.collective_us = _covered(collectives, step_spans)
    numbered = [(start, start + dur, _step_number(name)) for (start, dur), name in zip(step_spans, summary.step_names)]
    summary.collectives = each.record(numbered)
    if summary.events == 0:
        summary.problems.append(f"{path}: the trace holds no events")
    elif not summary.step_names:
        summary.problems.append(f"{path}: the trace holds no {STEP_PREFIX} events")
    return summary


def _step_number(name: str) -> int:
    """The job's step of a ``ProfilerStep#N`` span (N); 0 where it does not say."""
    try:
        return int(name[len(STEP_PREFIX) :])
    except ValueError:
        return 0


def _self_times(spans: list) -> dict[str, float]:
    """Self time per operator name: each span's duration less its direct children's, per thread."""
    totals: dict[str, float] = {}
    spans.sort(key=lambda s: (str(s[0]), str(s[1]), s[2], -s[3]))
    stack: list[list] = []
    thread = None
    for pid, tid, ts, dur, name in spans:
        if (pid, tid) != thread:
            _close(stack, float("inf"), totals)
            thread = (pid, tid)
        _close(stack, ts, totals)
        if stack:
            stack[-1][2] -= dur
        stack.append([ts + dur, name, dur])
    _close(stack, float("inf"), totals)
    return totals


def _covered(spans: list, within: list) -> float:
    """The time the ``(ts, dur)`` spans cover inside the ``within`` spans (the recorded steps),
    overlaps counted once. A trace is one process's, and a rank waits in a collective however many
    threads or streams carry it: two gloo worker threads running two all-reduces at once (DDP's
    buckets, or its map of unused parameters, as Hugging Face's Trainer asks) are one wait, as an
    NCCL collective's CPU launch and its kernel are (tried: summed per thread, a Trainer job's rank
    spent 190 % of its window in collectives). Outside the steps (the profiler's start, its stop)
    nothing counts: the window's time is its steps'."""
    total = 0.0
    steps = _merged(within)
    index = 0
    for start, end in _merged(spans):
        while index < len(steps) and steps[index][1] <= start:
            index += 1
        probe = index
        while probe < len(steps) and steps[probe][0] < end:
            total += min(end, steps[probe][1]) - max(start, steps[probe][0])
            probe += 1
    return total


def _merged(spans: list) -> list[tuple[float, float]]:
    """``(ts, dur)`` spans as sorted, disjoint ``(start, end)`` ranges."""
    merged: list[list[float]] = []
    for ts, dur in sorted(spans):
        if merged and ts <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], ts + dur)
        else:
            merged.append([ts, ts + dur])
    return [(start, end) for start, end in merged]


def _close(stack: list, ts: float, totals: dict[str, float]) -> None:
    while stack and stack[-1][0] <= ts:
        _, name, self_time = stack.pop()
        totals[name] = totals.get(name, 0.0) + max(self_time, 0.0)


def count_profiler_steps(path: str) -> int:
    """The number of ``ProfilerStep#`` spans in a torch trace (used by tests and benchmarks)."""
    return len(summarize_torch_trace(path).step_names)


def ascend_dirs(directory: str) -> list[str]:
    """The torch_npu session directories at ``directory``: itself, or its direct subdirectories,
    as torch_npu's own ``analyse`` finds them."""
    if os.path.basename(os.path.normpath(directory)).endswith(names.ASCEND_DIR_SUFFIX):
        return [directory]
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        return []
    return [
        os.path.join(directory, name)
        for name in entries
        if name.endswith(names.ASCEND_DIR_SUFFIX) and os.path.isdir(os.path.join(directory, name))
    ]


def _profiler_info(path: str, names: list[str]) -> dict | None:
    """The first ``profiler_info*.json`` that parses (torch_npu writes it when the profiler stops)."""
    for name in sorted(names):
        if name.startswith(PROFILER_INFO_PREFIX) and name.endswith(".json"):
            try:
                with open(os.path.join(path, name)) as handle:
                    info = json.load(handle)
            except (OSError, ValueError):
                continue
            if isinstance(info, dict):
                return info
    return None


def recorded_export_types(path: str) -> tuple[str, ...]:
    """The export types torch_npu recorded for a session in its profiler_info*.json (text if unknown)."""
    return _export_types(_read_info(path))


def _read_info(path: str) -> dict | None:
    try:
        return _profiler_info(path, os.listdir(path))
    except OSError:
        return None


def _export_types(info: dict | None) -> tuple[str, ...]:
    experimental = ((info or {}).get("config") or {}).get("experimental_config") or {}
    value = experimental.get("_export_type") if isinstance(experimental, dict) else None
    if isinstance(value, str):
        value = [value]
    types = tuple(t for t in (value or []) if t in ("text", "db"))
    return types or ("text",)


def _records_npu(info: dict | None) -> bool:
    """Whether the session traced the NPU (the recorded activities; assumed when unrecorded)."""
    if info is None:
        return True
    try:
        activities = info["config"]["common_config"]["activities"]
    except (KeyError, TypeError):
        return True
    return any(str(activity).endswith("NPU") for activity in activities)


def check_ascend_dir(path: str, export_types, parse_asked: bool = True, sound: Sound | None = None) -> list[str]:
    """Problems of one ``*_ascend_pt`` directory, in the order the field checks them.

    ``profiler_info*.json`` is written when the profiler stops, so without it the collection never
    ended properly. ``ASCEND_PROFILER_OUTPUT/`` is written by parsing; without it the raw data is
    there but unparsed: a problem when a parse was asked for (a job killed first, a parse that
    failed), and ``npuprof-run --analyse`` fixes it; what was asked for when it was not
    (``parse_asked`` False: --no-analyse, raw data kept to parse later; see ``unparsed``).
    Then each exported deliverable must exist and hold data; those ``sound`` vouches for (read whole
    once, unchanged since: keptreading.py) are not read again.
    """
    if not os.path.isdir(path):
        return [f"{path}: missing"]
    entries = os.listdir(path)
    info = _profiler_info(path, entries)
    if info is None:
        return [f"{path}: no readable profiler_info*.json: the profiler was never stopped properly"]
    output = os.path.join(path, ASCEND_OUTPUT)
    if not os.path.isdir(output):
        if not parse_asked:
            return []
        return [
            f"{path}: no {ASCEND_OUTPUT}/: the raw data was never parsed; run npuprof-run --analyse "
            f"{os.path.dirname(os.path.abspath(path))}"
        ]
    problems = []
    sound = sound or Sound()
    if "text" in export_types:
        problems.extend(_check_text(output, _expected_csvs(info), sound))
    if "db" in export_types:
        problems.extend(_check_db(output, _records_npu(info), sound))
    return problems


class Sound:
    """What a session's deliverables were found to be when last read whole, for ``check_ascend_dir``
    to take instead of reading them again: ``passed``, the text export's files that passed their
    check (trace_view.json decoded and held events; a CSV had its columns and rows); ``db_tables``,
    each db that passed ``PRAGMA quick_check``, by name, with its tables that hold a row. Only a
    file that passed is vouched for: one that did not is read again, and its problem told in the
    words and with the path of that reading.

    A plain class, not a dataclass: this module may be imported first in a job's process while it
    ends, and a dataclass is made with ``exec``, which clears the interpreter's mark of an
    unhandled KeyboardInterrupt: the job would then exit 1 instead of by SIGINT (130) as it does
    bare (tests/test_robustness.py, SIGINT to the job)."""

    def __init__(self, passed: frozenset[str] = frozenset(), db_tables: dict[str, list[str]] | None = None) -> None:
        self.passed = passed
        self.db_tables = db_tables if db_tables is not None else {}


def sound_files(output: str) -> Sound:
    """Read a session output's deliverables whole, as ``check_ascend_dir`` does: what a window's
    aftercare keeps of them (keptreading.py), so that ``--check`` of a thousand ranks need not
    decode every timeline and every db again."""
    passed = set()
    if not _trace_view_problems(os.path.join(output, TRACE_VIEW)):
        passed.add(TRACE_VIEW)
    passed.update(name for name, columns in CSV_COLUMNS.items() if not _check_csv(os.path.join(output, name), columns))
    tables = {}
    try:
        found = db_names(output)
    except OSError:
        found = []
    for name in found:
        filled = _db_tables(os.path.join(output, name))
        if isinstance(filled, set):
            tables[name] = sorted(filled)
    return Sound(frozenset(passed), tables)


def recorded_level(info: dict | None) -> str:
    """The profiler level torch_npu recorded for a session (``_profiler_level``), its default if none."""
    experimental = ((info or {}).get("config") or {}).get("experimental_config") or {}
    level = experimental.get("_profiler_level") if isinstance(experimental, dict) else None
    return level if isinstance(level, str) else DEFAULT_LEVEL


def _expected_csvs(info: dict | None) -> list[str]:
    """The text CSVs this session's parse writes: by what it traced and at which level."""
    if not _records_npu(info):
        return []
    level = recorded_level(info)
    return [name for name, levels in CSV_LEVELS.items() if level in levels]


def _check_text(output: str, csvs: list[str], sound: Sound) -> list[str]:
    problems = [] if TRACE_VIEW in sound.passed else _trace_view_problems(os.path.join(output, TRACE_VIEW))
    for name in csvs:
        if name not in sound.passed:
            problems.extend(_check_csv(os.path.join(output, name), CSV_COLUMNS[name]))
    return problems


def _trace_view_problems(trace: str) -> list[str]:
    """trace_view.json decoded whole: a file cut short or damaged anywhere is not readable JSON."""
    try:
        if not load_trace_events(trace):
            return [f"{trace}: holds no events"]
    except FileNotFoundError:
        return [f"{trace}: missing (text export)"]
    except (OSError, ValueError) as exc:
        return [f"{trace}: not readable JSON ({exc})"]
    return []


def read_csv(path: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a torch_npu CSV (UTF-8, possibly with a byte-order mark)."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def _check_csv(path: str, columns: tuple[str, ...]) -> list[str]:
    try:
        header, rows = read_csv(path)
    except FileNotFoundError:
        return [f"{path}: missing (text export)"]
    except (OSError, ValueError, csv.Error) as exc:
        return [f"{path}: not a readable CSV ({exc})"]
    missing = [column for column in columns if column not in header]
    if missing:
        return [f"{path}: the header lacks {', '.join(missing)}"]
    if not rows:
        return [f"{path}: a header but no rows"]
    return []


def db_names(output: str, present: Iterable[str] | None = None) -> list[str]:
    """The ``ascend_pytorch_profiler*.db`` files of a session's output directory, by name, sorted;
    among ``present``, its names where the caller listed it already (os.listdir's OSError goes to
    the caller)."""
    listed = os.listdir(output) if present is None else present
    return sorted(name for name in listed if name.startswith(DB_PREFIX) and name.endswith(".db"))


def read_only(path: str) -> sqlite3.Connection:
    """A SQLite file opened read-only: the report never modifies what torch_npu wrote."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _check_db(output: str, traced_npu: bool, sound: Sound) -> list[str]:
    found = db_names(output)
    if not found:
        return [f"{output}: no {DB_PREFIX}*.db (db export)"]
    problems = []
    for name in found:
        path = os.path.join(output, name)
        kept = sound.db_tables.get(name)
        filled = set(kept) if kept is not None else _db_tables(path)
        problems.extend(_db_problems(path, filled, traced_npu))
    return problems


def _db_tables(path: str) -> set[str] | str:
    """A db's tables that hold a row, after ``PRAGMA quick_check``, read-only (the file is never
    modified); the problem where it does not open, fails the check or cannot be read."""
    try:
        connection = read_only(path)
    except sqlite3.Error as exc:
        return f"{path}: does not open as SQLite ({exc})"
    try:
        verdict = [row[0] for row in connection.execute("PRAGMA quick_check")]
        if verdict != ["ok"]:
            return f"{path}: PRAGMA quick_check failed: {'; '.join(map(str, verdict[:3]))}"
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return {table for table in tables if connection.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone()}
    except sqlite3.Error as exc:
        return f"{path}: not a readable SQLite database ({exc})"
    finally:
        connection.close()


def _db_problems(path: str, filled: set[str] | str, traced_npu: bool) -> list[str]:
    """What a db lacks: its tables that hold a row (_db_tables), or why they could not be read."""
    if isinstance(filled, str):
        return [filled]
    problems = []
    if traced_npu and DB_DEVICE_TABLE not in filled:
        problems.append(f"{path}: table {DB_DEVICE_TABLE} is missing or empty")
    if not filled.intersection(DB_MAIN_TABLES):
        problems.append(f"{path}: none of the tables {', '.join(DB_MAIN_TABLES)} holds a row")
    return problems


def unparsed(path: str) -> bool:
    """Whether a session directory holds raw data only: torch_npu's parse never wrote its output."""
    return os.path.isdir(path) and not os.path.isdir(os.path.join(path, ASCEND_OUTPUT))


def parsed_enough(path: str) -> bool:
    """Whether a session directory has every deliverable its export asked for (releases before
    ``analyse.done``: what an async parse is waited for)."""
    return not check_ascend_dir(path, recorded_export_types(path))


def looks_parsed(path: str) -> bool:
    """A cheap look, for progress lines only: ``analyse.done``, or every deliverable file the
    export asked for is there (nothing is opened; ``check_ascend_dir`` is the real check)."""
    output = os.path.join(path, ASCEND_OUTPUT)
    try:
        present = set(os.listdir(output))
    except OSError:
        return False
    if ANALYSE_DONE in present:
        return True
    info = _read_info(path)
    export_types = _export_types(info)
    if "text" in export_types and not {TRACE_VIEW, *_expected_csvs(info)} <= present:
        return False
    return "db" not in export_types or any(name.startswith(DB_PREFIX) for name in present)


def npu_log_errors(path: str, limit: int = 20) -> list[str]:
    """The ``[ERROR]`` lines torch_npu's parse logged in a session directory, the first ``limit``."""
    found: list[str] = []
    folder = os.path.join(path, NPU_LOG_DIR)
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return found
    for entry in entries:
        if not entry.endswith(".log"):
            continue
        try:
            with open(os.path.join(folder, entry), errors="replace") as handle:
                for line in handle:
                    if NPU_LOG_ERROR in line:
                        found.append(line.strip()[:300])
                        if len(found) >= limit:
                            return found
        except OSError:
            continue
    return found


def npu_operator_totals(path: str) -> dict[str, float]:
    """Total device time (us) per operator type: from a session's op_statistic.csv (Level1 and
    Level2), else summed from its kernel_details.csv (Level0, torch_npu's default, writes no
    op_statistic.csv), else from its db export's compute tasks (``_db_operator_totals``); empty
    when none is there (the CPU alone, Level_none)."""
    for name, type_column, us_column in (
        (OP_STATISTIC, OP_TYPE_COLUMN, OP_TOTAL_COLUMN),
        (KERNEL_DETAILS, KERNEL_TYPE_COLUMN, KERNEL_DURATION_COLUMN),
    ):
        try:
            _, rows = read_csv(os.path.join(path, ASCEND_OUTPUT, name))
        except (OSError, ValueError, csv.Error):
            continue
        totals: dict[str, float] = {}
        for row in rows:
            try:
                us = float(row.get(us_column) or 0)
            except ValueError:
                continue
            kind = row.get(type_column) or "?"
            totals[kind] = totals.get(kind, 0.0) + us
        return totals
    return _db_operator_totals(os.path.join(path, ASCEND_OUTPUT))


#: A kernel's device time by operator type in a db export: msprof's COMPUTE_TASK_INFO (its name and
#: type as STRING_IDS ids) joined to TASK (start and end, ns) on globalTaskId, as msprof-analyze's
#: own reader joins them (compare_tools' npu_profiling_db_parser.py, _query_compute_op_data).
DB_OPERATOR_TOTALS = (
    "SELECT OPTYPE_IDS.value, SUM(TASK.endNs - TASK.startNs) FROM COMPUTE_TASK_INFO "
    "INNER JOIN TASK ON TASK.globalTaskId == COMPUTE_TASK_INFO.globalTaskId "
    "LEFT JOIN STRING_IDS AS OPTYPE_IDS ON OPTYPE_IDS.id == COMPUTE_TASK_INFO.opType "
    "GROUP BY OPTYPE_IDS.value"
)


def _db_operator_totals(output: str) -> dict[str, float]:
    try:
        found = db_names(output)
    except OSError:
        return {}
    totals: dict[str, float] = {}
    for name in found:
        try:
            connection = read_only(os.path.join(output, name))
        except sqlite3.Error:
            continue
        try:
            for kind, ns in connection.execute(DB_OPERATOR_TOTALS):
                totals[kind or "?"] = totals.get(kind or "?", 0.0) + (ns or 0) / 1e3
        except sqlite3.Error:  # no COMPUTE_TASK_INFO (Level_none, the CPU alone): nothing to total
            pass
        finally:
            connection.close()
    return totals
