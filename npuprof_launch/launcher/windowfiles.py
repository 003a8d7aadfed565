"""A window's files as the report finds them: where each is now, its size, and its aftercare's summary.

A window's aftercare (compression, the move home from --stage-dir, the summary) may still run, or
have died, when the report reads: a trace is looked for where it will be, where it was, and in
the stage directory, and read again where it went when it moves under the reader. Its size is
held against what the trace viewers open. And the output's filesystem, when it is full.
"""

from __future__ import annotations

import os
import shlex

from npuprof_launch.common import deliverables, names
from npuprof_launch.common.record import ReadRecord


def locate(output_dir: str, rel: str, staged: list[str] | None = None) -> tuple[str | None, str | None]:
    """Where a recorded trace is now: at home as recorded, or still plain (its compression did not
    finish), or still in the stage directory (its move did not); and a note when it is not home."""
    path = os.path.join(output_dir, rel)
    if os.path.exists(path):
        return path, None
    if path.endswith(".gz") and os.path.exists(path[:-3]):
        return path[:-3], None
    for candidate in staged or ():
        plain = candidate[:-3] if candidate.endswith(".gz") else candidate
        if os.path.basename(plain) == os.path.basename(path[:-3] if path.endswith(".gz") else path):
            for found in (candidate, plain, candidate + ".gz"):
                if os.path.exists(found):
                    return found, f"left in the stage directory: {found} (its move did not finish)"
    return None, None


#: What a window's trace may weigh before a viewer cannot open it (Perfetto's documentation on large
#: traces: about 2 GB of memory in the browser, JSON costing several times
#: its size; catapult's chrome://tracing: a 256 MB string; MindStudio Insight: 10 GB a JSON file).
VIEWER_LIMITS = (
    (10 * 2**30, "MindStudio Insight (10 GB a JSON file)"),
    (1 * 2**30, "Perfetto in the browser (a JSON trace over about 1 GB; its trace_processor server takes more)"),
    (256 * 2**20, "chrome://tracing (256 MB)"),
)
SMALLER = "fewer --active steps, --ranks, a lower --level, no --with-stack or --record-shapes"


def size_warnings(window: dict, size: int, plain: int, backend: str | None) -> list[str]:
    """A window too large for the viewers, with the options that make it smaller.

    A torch window is its trace (``plain``: its size before compression). An NPU window is a
    session directory whose raw data (often gigabytes) no viewer opens as such: what a viewer
    loads whole is its ``trace_view.json``, so ``plain`` is that file's size there, and a session
    without one (db export, raw data kept) is never too large to open."""
    weight = plain if backend == "npu" else (plain or size)
    for limit, viewer in VIEWER_LIMITS:
        if weight > limit:
            what = f"window steps {window.get('first_step')}-{window.get('last_step')}"
            if backend == "npu":
                what += f": its {deliverables.TRACE_VIEW}"
            return [
                f"{what} is {weight / 2**20:.0f} MB of trace, more than {viewer} opens; to make it smaller: {SMALLER}"
            ]
    return []


def viewed_bytes(session: str) -> int:
    """The size of an NPU session's ``trace_view.json``, the file a viewer loads whole (0 if none)."""
    try:
        return os.path.getsize(os.path.join(session, deliverables.ASCEND_OUTPUT, deliverables.TRACE_VIEW))
    except OSError:
        return 0


def summarize_where_it_is(
    output_dir: str, rel: str, staged: list[str] | None, path: str | None, threads: dict[str, str] | None = None
):
    """A trace read while its aftercare runs (a live --check, an aftercare outliving its job) may be
    compressed or moved under the reader: read it again where it went. Returns (path, summary),
    the summary None when the trace is nowhere. ``threads``: the record's ``gloo_threads``."""
    for _ in range(3):
        if path is None:
            break
        parsed = deliverables.summarize_torch_trace(path, threads)
        if not parsed.problems or os.path.exists(path):
            return path, parsed
        path, _note = locate(output_dir, rel, staged)
    return path, None


def aftercare_result(output_dir: str, window: dict) -> dict | None:
    path = window.get("aftercare")
    if not path:
        return None
    try:
        import json

        with open(os.path.join(output_dir, path)) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def tree_bytes(path: str) -> int:
    """A file's or a tree's size; a file moved away while it is counted (its aftercare) counts 0."""
    if os.path.isdir(path):
        return _dir_bytes(path)
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _dir_bytes(path: str) -> int:
    """What os.walk finds under ``path``, each file stat'ed once: its links to files counted at their
    targets' size, its links to directories not followed, what cannot be listed or stat'ed 0."""
    try:
        with os.scandir(path) as listing:
            entries = list(listing)
    except OSError:
        return 0
    total = 0
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if not is_dir:
            try:
                total += entry.stat().st_size
            except OSError:
                pass
        elif not _is_link(entry):
            total += _dir_bytes(entry.path)
    return total


def _is_link(entry: os.DirEntry) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


#: Where a report row holds, while it is built, the lines its windows' parse logged as errors.
LOGGED = "_logged"


def logged(text: str, lines: list[str]) -> bool:
    """Whether the profiler's printed error ``text`` is one its parse logged too: torch_npu's log
    line is ``[time] [ERROR] [pid] [module] MESSAGE`` (its _log.py), the message at its end."""
    return any(line.endswith(text) for line in lines)


def unrepeated(errors: list[str], trace_problems: list[str]) -> list[str]:
    """The reader of records from before the profiler's errors were kept apart (``profiler_errors``
    None): a process's errors less those its windows' parse logged too, found by their words: an
    error torch_npu printed in the job's process is also a line of its parse's log, which says more
    (its time, its step)."""
    logged = [problem for problem in trace_problems if names.NPU_LOGGED in problem]
    return [
        error
        for error in errors
        if not (
            error.startswith(names.PROFILER_ERROR)
            and any(p.endswith(error[len(names.PROFILER_ERROR) :]) for p in logged)
        )
    ]


def trace_bytes(output_dir: str, records: list[ReadRecord]) -> int:
    """What the records' traces weigh on disk, wherever each is now."""
    total = 0
    for record in records:
        for rel in record.get("traces") or ():
            path, _ = locate(output_dir, rel)
            total += tree_bytes(path) if path else 0
    return total


def raw_kept(processes: list[dict], output_dir: str) -> dict | None:
    """The NPU sessions kept as raw data, unparsed as --no-analyse asked (the report's rows count
    them: ``raw_sessions``), and the command that parses them; None when there are none."""
    sessions = sum(process.get("raw_sessions", 0) for process in processes)
    if not sessions:
        return None
    return {"sessions": sessions, "command": f"npuprof-run --analyse {shlex.quote(output_dir)}"}


#: Free space below which a run's problems are told with the cause they most likely share.
FULL_DISK_BYTES = 1 << 20


def full_disk(output_dir: str) -> str | None:
    """Where the output's filesystem is all but full: said first, since a full disk makes every
    later write fail (traces, records, the page) and each of those problems is its effect."""
    try:
        stat = os.statvfs(output_dir)
    except (OSError, AttributeError):  # gone, or not a POSIX system
        return None
    free = stat.f_bavail * stat.f_frsize
    if free >= FULL_DISK_BYTES:
        return None
    return (
        f"the filesystem of {output_dir} is full ({free // 1024} KB free): traces and records written after it "
        "filled may be missing or stale; free space there or give another --output-dir (or --stage-dir)"
    )
