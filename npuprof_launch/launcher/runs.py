"""The runs of one output directory, told apart: which one a report is about, and what else is there.

Several jobs may write into one ``--output-dir`` (the README's examples all use the default
``./npuprof_output``). Each launcher gives its job a run id (``_NPU_PROF_RUN_ID``), and every
status record, process-log line and launcher account (``runs/RUN_ID.json``) carries it. A report
is about one run, the latest unless ``--run ID`` names another, and names the others: merging
unrelated jobs compared a 4-process job with a 1-process one and suggested runs the tool refused.
Records of a version before run ids, and of a job that exported the variables by hand, carry an
empty run id: together they are one unnamed run.

Within a run, a torchelastic restart starts the workers again under the same run id: each
attempt is its own, and its processes are never compared with another attempt's.

A job on several nodes runs one launcher a node, each with its own run id: runs that ran at the
same time, with the same command, on different hosts are one job (``joined``), reported together.
"""

from __future__ import annotations

import os

from npuprof_launch.common import names, options
from npuprof_launch.common.record import ReadRecord, attempt_of, stop_under_way


def listed(records: list[ReadRecord], accounts: dict[str, dict], log: list[dict], output_dir: str) -> list[dict]:
    """Every run found in the directory, oldest first: its id, command, when it started and ended,
    how many processes recorded, and its attempts."""
    found: dict[str, dict] = {}

    def entry(run_id: str) -> dict:
        return found.setdefault(
            run_id,
            {"run_id": run_id, "command": None, "started_ns": 0, "last_ns": 0, "processes": 0}
            | {"attempts": [], "hosts": []},
        )

    for run_id, account in accounts.items():
        item = entry(run_id)
        item["command"] = account.get("command")
        item["status"] = account.get("status")
        item["started_ns"] = account.get("started_ns") or 0
        item["last_ns"] = account.get("ended_ns") or _mtime_ns(_account_path(output_dir, run_id))
    for record in records:
        if "unreadable" in record:
            continue
        item = entry(record.get("run_id") or "")
        item["processes"] += 1
        started = record.get("started_ns") or 0
        item["started_ns"] = min(item["started_ns"] or started, started) if started else item["started_ns"]
        item["last_ns"] = max(item["last_ns"], record.get("updated_ns") or 0)
        attempt = attempt_of(record)
        if attempt not in item["attempts"]:
            item["attempts"].append(attempt)
        if record.get("host") and record["host"] not in item["hosts"]:
            item["hosts"].append(record["host"])
    for line in log:
        entry(line.get("run_id") or "")
    for item in found.values():
        item["attempts"].sort()
    return sorted(found.values(), key=lambda item: (max(item["last_ns"], item["started_ns"]), item["run_id"]))


def chosen(runs: list[dict], run_id: str | None) -> str | None:
    """The run a report is about: ``run_id`` when given and present, else the latest; None when the
    directory holds no run at all, or ``run_id`` is not one of them (the caller says so)."""
    if run_id is not None:
        return run_id if any(item["run_id"] == run_id for item in runs) else None
    return runs[-1]["run_id"] if runs else None


def joined(runs: list[dict], run_id: str | None) -> set[str]:
    """The runs reported with ``run_id``: itself, and the runs of the same job on other nodes (one
    launcher a node): the same command, at the same time, on hosts of their own."""
    mine = next((item for item in runs if item["run_id"] == run_id), None)
    if mine is None or not run_id:
        return {run_id} if run_id is not None else set()
    found = {run_id}
    for item in runs:
        if not item["run_id"] or item["run_id"] in found or not item["hosts"] or not mine["hosts"]:
            continue
        same_command = item.get("command") == mine.get("command")
        overlap = item["started_ns"] <= mine["last_ns"] and mine["started_ns"] <= item["last_ns"]
        if same_command and overlap and not set(item["hosts"]) & set(mine["hosts"]):
            found.add(item["run_id"])
    return found


def described(item: dict) -> str:
    """One run in a line: its id, when it started, its command, its processes."""
    import datetime
    import shlex

    parts = [item["run_id"] or "(unnamed: records without a run id)"]
    if item.get("started_ns"):
        parts.append(f"{datetime.datetime.fromtimestamp(item['started_ns'] / 1e9):%Y-%m-%d %H:%M:%S}")
    if item.get("command"):
        command = shlex.join(str(arg) for arg in item["command"])
        parts.append(command if len(command) <= 80 else command[:77] + "...")
    parts.append(f"{item['processes']} process record{'s' if item['processes'] != 1 else ''}")
    return ", ".join(parts)


def others_text(runs: list[dict], reported: str | None, output_dir: str, every: bool = True) -> str | None:
    """The line that says which other runs share the directory, and how to report one; ``every``:
    with the last three described (else they are left to ``--explain``)."""
    others = [item for item in runs if not item.get("reported") and item["run_id"] != reported]
    if not others:
        return None
    pick = next((item["run_id"] for item in reversed(others) if item["run_id"]), "ID")
    plural = "s" if len(others) != 1 else ""
    if not every:
        return f"{len(others)} other run{plural} in this directory: npuprof-run --check {output_dir} --run {pick}"
    shown = "; ".join(described(item) for item in reversed(others[-3:]))
    more = f"; and {len(others) - 3} older" if len(others) > 3 else ""
    return (
        f"{len(others)} other run{plural} in this directory, not in this report: {shown}{more}; "
        f"npuprof-run --check {output_dir} --run {pick} reports one"
    )


def given_options(run: dict | None, records: list[ReadRecord], output_dir: str) -> dict[str, str]:
    """The options the run was given, as text (as ``cli.given_options`` has them), for a suggested
    run that keeps them all: the launcher's flags where it wrote its account, and every option the
    processes resolved away from its default (an exported NPU_PROF_* variable, the --print-env
    route), with the output directory always (a suggestion without it profiles into another; as the
    flag gave it, else absolute)."""
    given: dict[str, str] = {}
    resolved = next((r.get("options") for r in records if "unreadable" not in r and r.get("options")), None) or {}
    scenario = resolved.get("scenario") or None
    for option in options.OPTIONS:
        if option.name not in resolved or option.name == "output-dir":
            continue
        value = resolved[option.name]
        value = tuple(value) if isinstance(value, list) else value
        default = options.default_for(option.name, scenario) if scenario else option.default
        default = tuple(default) if isinstance(default, list) else default
        if value is not None and value != default:
            given[option.name] = option.format(value)
    given.update((run or {}).get("options") or {})
    # As the flag was given where there is one: the run's command is relative to the same directory.
    given.setdefault("output-dir", os.path.abspath(output_dir))
    return given


def ids(output_dir: str) -> list[str]:
    """The ids of the runs in ``output_dir``, oldest first ("" for records without one)."""
    from npuprof_launch.common import processlog, record
    from npuprof_launch.launcher import launch

    output_dir = os.path.abspath(output_dir)
    found = listed(record.read_dir(output_dir), launch.read_runs(output_dir), processlog.read(output_dir), output_dir)
    return [item["run_id"] for item in found]


def route(run: dict | None, records: list[ReadRecord]) -> str:
    """How the run was started, for a suggested next run that starts the same way: the prefix
    (the launcher wrote its account), else the variables (``--print-env`` or exported by hand)."""
    return "prefix" if run or not records else "env"


def untracked_problem(output_dir: str, records: list[ReadRecord]) -> str | None:
    """The report's problem for the traces no record accounts for (``untracked_traces``), if any."""
    untracked = untracked_traces(output_dir, records)
    if not untracked:
        return None
    shown = ", ".join(untracked[:3]) + (f" and {len(untracked) - 3} more" if len(untracked) > 3 else "")
    what = "1 trace" if len(untracked) == 1 else f"{len(untracked)} traces"
    return (
        f"{what} on disk that no status record accounts for (a process killed before it wrote its record, or "
        f"files copied in; whose they are is unknown): {shown}"
    )


def untracked_traces(output_dir: str, records: list[ReadRecord]) -> list[str]:
    """Traces on disk (torch's Chrome traces, torch_npu's session directories) that no record of any
    run accounts for: a process killed before it wrote its record, or files copied in. The report
    names them; it cannot say whose they are. Those named for a process that ended in its window's
    stop are its own (left_by_stop), told with it."""
    known = _listed(records)
    cut = [record.get("worker") or "" for record in records if stop_under_way(record)]
    return [
        rel
        for rel in _on_disk(output_dir)
        if os.path.normpath(rel) not in known and not any(names.of_worker(rel, worker) for worker in cut)
    ]


def left_by_stop(output_dir: str, record: ReadRecord) -> list[str]:
    """What a process that ended in its window's stop (record.stop_under_way) left of that window's
    export: the traces on disk named for it (names.of_worker) that its record does not list."""
    if not stop_under_way(record):
        return []
    known, worker = _listed([record]), record.get("worker") or ""
    return [rel for rel in _on_disk(output_dir) if os.path.normpath(rel) not in known and names.of_worker(rel, worker)]


def _listed(records: list[ReadRecord]) -> set[str]:
    """The traces the records list, normalized, each with and without its compression's ``.gz``."""
    known: set[str] = set()
    for record in records:
        rels = list(record.get("traces") or ())
        for window in record.get("windows") or ():
            rels.extend(window.get("traces") or ())
        for rel in rels:
            plain = rel[:-3] if rel.endswith(".gz") else rel
            known.update((os.path.normpath(plain), os.path.normpath(plain + ".gz")))
    return known


def _on_disk(output_dir: str) -> list[str]:
    """The traces under ``output_dir``, relative to it, sorted; not those of the tool's own folders."""
    found = []
    skipped = {names.STATUS_DIR, names.REQUESTS_DIR, names.HANDOFF_DIR}  # the hand-off: links to known sessions
    for folder, dirs, files in os.walk(output_dir):
        dirs[:] = sorted(d for d in dirs if d not in skipped)
        for name in sorted(dirs):
            if name.endswith(names.ASCEND_DIR_SUFFIX):
                found.append(os.path.relpath(os.path.join(folder, name), output_dir))
        dirs[:] = [d for d in dirs if not d.endswith(names.ASCEND_DIR_SUFFIX)]
        for name in sorted(files):
            if name.endswith(names.TORCH_TRACE_SUFFIXES):
                found.append(os.path.relpath(os.path.join(folder, name), output_dir))
    return sorted(found)


def _account_path(output_dir: str, run_id: str) -> str:
    return os.path.join(names.status_dir(output_dir), "runs", f"{run_id}.json")


def _mtime_ns(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0
