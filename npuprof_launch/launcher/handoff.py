"""The hand-off to msprof-analyze: one window's NPU sessions, one per rank, laid out as it reads them.

msprof-analyze's cluster analysis (the mstt repository, ``profiler/msprof_analyze/cluster_analyse``:
``cluster_analysis.py`` allocate_prof_data, ``cluster_data_preprocess/pytorch_data_preprocessor.py``
get_data_map, ``data_preprocessor.py`` get_rank_id; version 8.1.0) walks the directory given with
``-d`` (ten levels down) for every directory whose name ends in ``ascend_pt``; takes its rank from the
name of its ``profiler_info_{rank}.json`` (a session with ``profiler_info.json`` alone, whose job had
no rank when its window stopped, is dropped: "fail to get rankid"); keeps, of each rank's sessions,
the one whose name's third field from the end (the session's time) sorts first, the **oldest**,
dropping the others without a word (the newest since 8.2.0, by its name's time as a number,
among sessions that hold an ``ASCEND_PROFILER_OUTPUT/``); and reads the export type from every ``profiler_info``
(``db`` wherever db was exported; text and db sessions in one directory are refused). Each with exit
status 0. An output directory holds several windows, runs and restart attempts, so a plain
``-d OUT`` analyses the oldest window of the oldest run, or the newest of the newest, by version.

So the report lays out, for one window (``--window N`` of ``--check``, by default the first complete
window of the run's latest attempt), ``OUT/msprof_handoff/{run}_steps_{a}-{b}/``: one directory per
rank, named as its session, holding **hard links** to what msprof-analyze reads of a session
(``ASCEND_PROFILER_OUTPUT/`` and the session's own JSON files) and, where torch_npu wrote no rank
into the names (``profiler_info.json``, ``ascend_pytorch_profiler.db``), links under the rank's
names, the rank taken from the status record; the job's files are never changed. Hard links cost
no space and look like the files themselves: msprof-analyze refuses symbolic links in its path
checks (PathManager: "Invalid input path which is a soft link"), so a session that cannot be
linked (another file system) is left out and said. What a plain ``-d OUT`` would read otherwise
is told as a note (``handoff_differs``).

A second ``--check`` finds the hand-off in place: each lay-out is kept beside its folder
(``.{name}.json``) with the inode and change time of every directory it listed or linked into and
of each profiler_info it read, and taken while all are as they were (a session parsed again, a link
taken out: laid out again), so that ``--check`` of a thousand ranks links and reads none again.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from typing import NamedTuple

from npuprof_launch.common import deliverables, files, names
from npuprof_launch.launcher import answer, wording

#: The hand-off directories' folder inside the output directory.
FOLDER = names.HANDOFF_DIR
#: What msprof-analyze reads of a session: this folder whole, and the session's top-level JSON files.
READ_FOLDER = deliverables.ASCEND_OUTPUT
#: The shape of a kept lay-out (``_kept``); one of another shape is laid out again.
KEPT_VERSION = 1
#: A directory or file that changed less than this before it was seen is not vouched for: a change
#: later in the same tick of a coarse file-system clock would not show in its change time.
SETTLED_NS = 2 * 10**9


class Session(NamedTuple):
    rank: int
    #: The session directory, relative to the output directory.
    path: str


class Plan(NamedTuple):
    """One window's hand-off: its stage (``--scenario``), steps, and its sessions, one per rank."""

    stage: str | None
    first: int
    last: int
    sessions: list[Session]


def windows(processes: list[dict]) -> list[tuple[str | None, int, int]]:
    """The NPU windows of the report's processes, each once, in step order: ``(stage, first, last)``,
    of the latest attempt (an attempt's ranks are never mixed with another's: torchelastic's
    restart renumbers nothing, and msprof-analyze would take one session of each)."""
    npu = [p for p in processes if p.get("backend") == "npu"]
    if not npu:
        return []
    latest = max(p.get("attempt") or 0 for p in npu)
    found = {
        (p.get("stage"), w["first_step"], w.get("last_step") or w["first_step"])
        for p in npu
        if (p.get("attempt") or 0) == latest
        for w in p.get("windows") or ()
        if w.get("traces") and w.get("first_step") is not None
    }
    return sorted(found, key=lambda key: (key[1], key[2], key[0] or ""))


def plan(processes: list[dict], window: int | None = None) -> Plan | None:
    """The hand-off of the ``window``-th NPU window (1-based, in step order), or by default of the
    first window complete on every rank that recorded it; None when there is none."""
    keys = windows(processes)
    if window is not None:
        keys = keys[window - 1 : window] if 0 < window <= len(keys) else []
    latest = max((p.get("attempt") or 0 for p in processes if p.get("backend") == "npu"), default=0)
    for stage, first, last in keys:
        sessions, complete = [], True
        for process in processes:
            if process.get("backend") != "npu" or (process.get("attempt") or 0) != latest:
                continue
            if process.get("stage") != stage:
                continue
            for w in process.get("windows") or ():
                if (w.get("first_step"), w.get("last_step") or w.get("first_step")) != (first, last):
                    continue
                complete = complete and bool(w.get("complete"))
                rank = process.get("rank")
                sessions += [Session(rank if rank is not None else 0, path) for path in w.get("traces") or ()][:1]
        if sessions and (complete or window is not None):
            return Plan(stage, first, last, sorted(sessions))
    return None


def folder_of(output_dir: str, run_id: str, chosen: Plan) -> str:
    """The hand-off directory of ``chosen``."""
    name = f"{run_id or 'run'}{'_' + chosen.stage if chosen.stage else ''}_steps_{chosen.first}-{chosen.last}"
    return os.path.join(output_dir, FOLDER, name)


def lay_out(output_dir: str, run_id: str, chosen: Plan, seen: dict | None = None) -> tuple[str, list[str]]:
    """Make the hand-off directory of ``chosen`` (or bring it up to date: msprof-analyze's own output
    there is kept); returns its path and the sessions that could not be linked, each with why.
    ``seen``: where to note each directory listed or linked into (``_note``)."""
    folder = folder_of(output_dir, run_id, chosen)
    left_out = []
    for session in chosen.sessions:
        source = os.path.join(output_dir, session.path)
        target = os.path.join(folder, os.path.basename(os.path.normpath(session.path)))
        try:
            _link_session(source, target, session.rank, {} if seen is None else seen)
        except OSError as exc:
            left_out.append(f"{session.path}: {exc.strerror or exc}")
    return folder, left_out


def _link_session(source: str, target: str, rank: int, seen: dict) -> None:
    """Hard links of what msprof-analyze reads of one session, with the rank in the names it reads.
    Each source directory is noted before it is listed, each target one once its links are made."""
    _note(seen, source)
    entries = os.listdir(source)
    os.makedirs(target, exist_ok=True)
    for entry in entries:
        path = os.path.join(source, entry)
        if entry.endswith(".json") and os.path.isfile(path):
            _link(path, os.path.join(target, entry))
    info = [e for e in entries if e.startswith(deliverables.PROFILER_INFO_PREFIX) and e.endswith(".json")]
    if info and not any(_rank_in_name(e) is not None for e in info):
        _link(os.path.join(source, sorted(info)[0]), os.path.join(target, f"profiler_info_{rank}.json"))
    _link_tree(os.path.join(source, READ_FOLDER), os.path.join(target, READ_FOLDER), rank, seen)
    _note(seen, target)


def _link_tree(inside: str, here: str, rank: int, seen: dict) -> None:
    """``inside`` linked into ``here``, folder by folder (os.walk's: no link to a folder followed)."""
    _note(seen, inside)
    try:
        with os.scandir(inside) as listing:
            entries = list(listing)
    except OSError:
        return
    os.makedirs(here, exist_ok=True)
    for entry in entries:
        if entry.is_dir():
            if not entry.is_symlink():
                _link_tree(entry.path, os.path.join(here, entry.name), rank, seen)
            continue
        linked = entry.name
        if linked == f"{deliverables.DB_PREFIX}.db":  # torch_npu's name without a rank
            linked = f"{deliverables.DB_PREFIX}_{rank}.db"
        _link(entry.path, os.path.join(here, linked))
    _note(seen, here)


def _export_types(output_dir: str, session: str, seen: dict) -> tuple[str, ...]:
    """deliverables.recorded_export_types, each profiler_info it may read noted first."""
    path = os.path.join(output_dir, session)
    try:
        entries = os.listdir(path)
    except OSError:
        entries = []
    for entry in entries:
        if entry.startswith(deliverables.PROFILER_INFO_PREFIX) and entry.endswith(".json"):
            _note(seen, os.path.join(path, entry))
    return deliverables.recorded_export_types(path)


def _note(seen: dict, path: str) -> None:
    """``path``'s inode and change time, None where it is not there."""
    try:
        stat = os.stat(path)
    except OSError:
        seen[path] = None
        return
    seen[path] = [stat.st_ino, stat.st_ctime_ns]


def _keep(output_dir: str, kept: str, chosen: Plan, types: list[str], seen: dict | None) -> None:
    """Keep the lay-out just made for the next ``--check`` (``_kept``), or forget the last one where
    this one cannot be vouched for (a session left out, a directory or file changed just now)."""
    settled = time.time_ns() - SETTLED_NS
    try:
        if seen is None or any(value is not None and value[1] > settled for value in seen.values()):
            os.unlink(kept)
            return
        relative = {os.path.relpath(path, output_dir): value for path, value in seen.items()}
        layout = {"version": KEPT_VERSION, "sessions": chosen.sessions, "export_types": types, "seen": relative}
        files.write_json(kept, layout)
    except OSError:
        pass  # none kept (FileNotFoundError: none was): the next --check lays it out again


def _kept(output_dir: str, kept: str, chosen: Plan) -> list[str] | None:
    """The export types of the lay-out kept for the same sessions, where every directory it listed or
    linked into and every profiler_info it read is as it was: the folder already holds this hand-off.
    None where there is none, or anything changed."""
    try:
        with open(kept) as handle:
            found = json.load(handle)
        if found["version"] != KEPT_VERSION or [tuple(s) for s in found["sessions"]] != chosen.sessions:
            return None
        for path, value in found["seen"].items():
            try:
                stat = os.stat(os.path.join(output_dir, path))
            except OSError:
                if value is not None:
                    return None
                continue
            if value != [stat.st_ino, stat.st_ctime_ns]:
                return None
        return [str(t) for t in found["export_types"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _link(source: str, target: str) -> None:
    if os.path.exists(target):
        if os.path.samefile(source, target):
            return
        os.unlink(target)  # a session's file replaced since the last hand-off (a re-parse)
    os.link(source, target)


def _rank_in_name(name: str) -> int | None:
    """The rank msprof-analyze reads from a ``profiler_info_{rank}.json`` name (None: it drops the session)."""
    middle = name[len(deliverables.PROFILER_INFO_PREFIX) + 1 : -len(".json")]
    return int(middle) if name.startswith(deliverables.PROFILER_INFO_PREFIX + "_") and middle.isdigit() else None


def plain_reading(output_dir: str) -> dict[int | None, list[str]]:
    """What a plain ``msprof-analyze cluster -d OUT`` finds: the sessions under OUT by the rank it
    reads from their names (None: no rank, dropped), the hand-off folder left out, each rank's
    sessions oldest first as it orders them (the name's third field from the end)."""
    found: dict[int | None, list[str]] = {}
    top = os.path.normpath(output_dir)
    for root, dirs, _files in os.walk(top):
        if root == top and FOLDER in dirs:
            dirs.remove(FOLDER)
        for name in list(dirs):
            if not name.endswith("ascend_pt"):
                continue
            dirs.remove(name)  # msprof-analyze walks into a session too; no session holds another
            try:
                infos = [
                    e for e in os.listdir(os.path.join(root, name)) if e.startswith(deliverables.PROFILER_INFO_PREFIX)
                ]
            except OSError:
                continue
            ranks = [_rank_in_name(e) for e in infos if e.endswith(".json")]
            rank = next((r for r in ranks if r is not None), None)
            found.setdefault(rank, []).append(os.path.relpath(os.path.join(root, name), top))
    for paths in found.values():
        paths.sort(key=lambda path: _time_field(path))
    return found


def _time_field(path: str) -> str:
    parts = os.path.basename(path).split("_")
    return parts[-3] if len(parts) >= 3 else ""


def build(output_dir: str, run_id: str, processes: list[dict], window: int | None = None) -> tuple[dict | None, list]:
    """The run's hand-off, laid out, and the notes of what a plain ``-d OUT`` would read instead:
    ``({"stage", "steps", "path", "command", "sessions", "left_out", "export_types"}, notes)``, or
    (None, []) for a run with no NPU window."""
    chosen = plan(processes, window)
    if chosen is None:
        return None, []
    folder = folder_of(output_dir, run_id, chosen)
    kept = os.path.join(os.path.dirname(folder), f".{os.path.basename(folder)}.json")
    types = _kept(output_dir, kept, chosen)
    left_out: list[str] = []
    if types is None:
        seen: dict[str, list[int] | None] = {}
        folder, left_out = lay_out(output_dir, run_id, chosen, seen)
        types = sorted({t for s in chosen.sessions for t in _export_types(output_dir, s.path, seen)})
        _keep(output_dir, kept, chosen, types, seen if not left_out else None)
    command = _cluster_command(folder)
    handoff = {
        "stage": chosen.stage,
        "steps": [chosen.first, chosen.last],
        "path": folder,
        "command": command,
        "sessions": [{"rank": s.rank, "session": s.path} for s in chosen.sessions],
        "left_out": left_out,
        "export_types": types,
    }
    return handoff, _differs(output_dir, chosen, types)


def _differs(output_dir: str, chosen: Plan, types: list[str]) -> list[dict]:
    """The notes of what a plain ``-d OUT`` reads other than the hand-off (each with its evidence)."""
    reading = plain_reading(output_dir)
    notes = []
    unranked = reading.pop(None, [])
    wanted = {s.path for s in chosen.sessions}
    # Each rank's session a plain -d OUT takes: the oldest up to msprof-analyze 8.1.0, the newest from 8.2.0.
    oldest = sorted(rank for rank, paths in reading.items() if rank is not None and paths[0] not in wanted)
    newest = sorted(rank for rank, paths in reading.items() if rank is not None and paths[-1] not in wanted)
    extra = sum(len(paths) - 1 for paths in reading.values())
    if oldest or newest or extra:
        other = sorted({*oldest, *newest})
        text = (
            f"msprof-analyze cluster -d {output_dir} keeps one session a rank (up to 8.1.0 the oldest, from "
            f"8.2.0 the newest) and drops {extra} other(s)"
            + (f"; it would read rank(s) {wording.compact_ranks(other)} from another window" if other else "")
            + "; the hand-off holds this window's alone"
        )
        evidence = {"dropped": extra, "oldest_elsewhere": oldest, "newest_elsewhere": newest}
        notes.append(answer.item("handoff_differs", text, other, [chosen.first], **evidence))
    if unranked:
        text = (
            f"{len(unranked)} session(s) under {output_dir} have no rank in their names (profiler_info.json): "
            "msprof-analyze drops them; the hand-off names each by the rank its status record holds"
        )
        notes.append(answer.item("handoff_differs", text, [], [chosen.first], unranked=len(unranked)))
    if len(types) > 1:
        text = "these sessions exported text and db: msprof-analyze reads their db export alone"
        notes.append(answer.item("handoff_differs", text, [], [chosen.first], export_types=types))
    return notes


def command_line(handoff: dict | None, output_dir: str) -> str:
    """The command the answer gives for all ranks at once."""
    return _cluster_command(output_dir) if handoff is None else str(handoff["command"])


def _cluster_command(directory: str) -> str:
    return f"msprof-analyze cluster -d {shlex.quote(directory)}"
