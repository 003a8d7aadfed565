"""The hand-off to msprof-analyze: one window's NPU sessions, one per rank, each with its rank, as
msprof-analyze's own code (msprof_wheels.py, two releases) reads them; and what a plain ``-d OUT``
would read instead, told as a note.

The sessions are built by hand (npu_layout.py, named as torch_npu names them, each with its time)
for two runs of two windows on two ranks; one real run of the launcher with the stand-in covers a
job without a rank, end to end.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import msprof_wheels
import npu_layout
import pytest
from answers import check_json
from jobs import PYTHON, npuprof, script
from npu_standin import standin_env

from npuprof_launch.common import deliverables
from npuprof_launch.launcher import handoff, report

FIRST_STEPS = (3, 8)


def sessions_of_two_runs(root: str, export: tuple[str, ...] = ("text",)) -> dict[str, list[dict]]:
    """Two runs, each of two windows on ranks 0 and 1, their sessions under ``root`` timed in that
    order; returns each run's report rows (the fields handoff.py reads)."""
    rows: dict[str, list[dict]] = {}
    clock = 20261205100000000  # torch_npu's session time, to the millisecond
    for run in ("run1", "run2"):
        rows[run] = [{"backend": "npu", "rank": rank, "attempt": 0, "stage": None, "windows": []} for rank in (0, 1)]
        for first in FIRST_STEPS:
            for row in rows[run]:
                clock += 1000
                worker = f"node1_rank{row['rank']}_pid{4242 + row['rank']}"
                made = npu_layout.session(root, worker, rank=row["rank"], export=export)
                name = f"{worker}_{4242 + row['rank']}_{clock}_ascend_pt"
                os.rename(made, os.path.join(root, name))
                row["windows"].append({"first_step": first, "last_step": first + 1, "complete": True, "traces": [name]})
    return rows


def chosen_names(made: dict) -> dict[int, str]:
    return {one["rank"]: one["session"] for one in made["sessions"]}


def read_by(version: str, directory: str) -> dict[int, str]:
    found = msprof_wheels.discover(version, directory)
    return {int(rank): os.path.basename(path) for rank, path in found["data_map"].items()}


@pytest.fixture(scope="module")
def wheels():
    try:
        for version in msprof_wheels.VERSIONS:
            msprof_wheels.extracted(version)
    except RuntimeError as exc:
        pytest.skip(f"msprof-analyze's wheels cannot be had here: {exc}")
    return msprof_wheels.VERSIONS


def test_the_hand_off_holds_the_window_alone_and_msprof_analyze_reads_it_so(tmp_path, wheels):
    root = str(tmp_path)
    rows = sessions_of_two_runs(root)
    made, notes = handoff.build(root, "run2", rows["run2"])
    first_window = {row["rank"]: row["windows"][0]["traces"][0] for row in rows["run2"]}
    assert made["steps"] == [3, 4] and chosen_names(made) == first_window
    assert sorted(os.listdir(made["path"])) == sorted(first_window.values())
    for version in wheels:  # msprof-analyze itself takes exactly these sessions from the hand-off
        assert read_by(version, made["path"]) == first_window, version
    # A plain -d OUT takes run 1's first window (8.1.0) or run 2's last (8.2.0 and later).
    assert read_by("8.1.0", root) == {row["rank"]: row["windows"][0]["traces"][0] for row in rows["run1"]}
    assert read_by("26.2.0", root) == {row["rank"]: row["windows"][1]["traces"][0] for row in rows["run2"]}
    (note,) = notes
    assert note["kind"] == "handoff_differs" and note["evidence"]["dropped"] == 6
    assert note["evidence"]["oldest_elsewhere"] == [0, 1] == note["evidence"]["newest_elsewhere"]
    # Links, not copies: the job's own files, under the same inode.
    for rank, name in first_window.items():
        trace_view = os.path.join(deliverables.ASCEND_OUTPUT, deliverables.TRACE_VIEW)
        for relative in (f"profiler_info_{rank}.json", trace_view):
            assert os.path.samefile(os.path.join(root, name, relative), os.path.join(made["path"], name, relative))

    second, _ = handoff.build(root, "run2", rows["run2"], window=2)  # --check --window 2
    assert second["steps"] == [8, 9] and second["path"] != made["path"]
    assert read_by("26.2.0", second["path"]) == {row["rank"]: row["windows"][1]["traces"][0] for row in rows["run2"]}


def test_a_session_without_a_rank_is_handed_off_under_the_rank_its_record_holds(tmp_path, wheels):
    """torch_npu names profiler_info.json and ascend_pytorch_profiler.db without a rank when the job
    had none as the window stopped (mpirun, srun, one process); msprof-analyze drops such a session."""
    root = str(tmp_path)
    session = npu_layout.session(root, "node1_pid7", rank=None, export=("text", "db"))
    window = {"first_step": 2, "last_step": 3, "complete": True, "traces": [os.path.basename(session)]}
    rows = [{"backend": "npu", "rank": None, "attempt": 0, "stage": None, "windows": [window]}]
    for version in wheels:
        assert read_by(version, root) == {}, version  # dropped: "fail to get rankid"
    made, notes = handoff.build(root, "run1", rows)
    linked = os.path.join(made["path"], os.path.basename(session))
    assert os.path.exists(os.path.join(linked, "profiler_info_0.json"))
    assert os.path.exists(os.path.join(linked, deliverables.ASCEND_OUTPUT, f"{deliverables.DB_PREFIX}_0.db"))
    for version in wheels:
        assert read_by(version, made["path"]) == {0: os.path.basename(session)}, version
    assert msprof_wheels.discover("26.2.0", made["path"])["data_type"] == "db"
    kinds = {tuple(sorted(note["evidence"])) for note in notes}
    assert ("unranked",) in kinds and ("export_types",) in kinds, notes
    assert made["export_types"] == ["db", "text"]


def test_a_run_without_npu_windows_hands_nothing_off(tmp_path):
    rows = [{"backend": "torch", "rank": 0, "attempt": 0, "windows": [{"first_step": 2, "traces": ["a.json"]}]}]
    assert handoff.build(str(tmp_path), "run1", rows) == (None, [])
    assert not os.path.exists(os.path.join(str(tmp_path), handoff.FOLDER))


def test_a_restarted_job_hands_off_its_latest_attempt(tmp_path):
    root = str(tmp_path)
    rows = sessions_of_two_runs(root)["run1"]
    for row in rows:  # torchelastic's restart: the same ranks again, attempt 1, later windows
        row["windows"] = row["windows"][:1]
    later = sessions_of_two_runs(str(tmp_path / "again"))["run1"]
    for row in later:
        row["attempt"] = 1
        row["windows"] = [dict(w, traces=[os.path.join("again", w["traces"][0])]) for w in row["windows"][1:]]
    made, _ = handoff.build(root, "run1", rows + later)
    assert made["steps"] == [8, 9] and all(one["session"].startswith("again") for one in made["sessions"])


def test_the_answer_gives_the_hand_off_of_a_real_run(tmp_path):
    """One process under the stand-in, two windows: the answer names the first window's directory
    and its command; --window picks the second; a window the run does not have is a usage error."""
    out = str(tmp_path / "out")
    job = [PYTHON, script("train_loop.py"), "--steps", "8"]
    flags = ["--backend", "npu", "--skip-first", "1", "--active", "1", "--wait", "1", "--repeat", "2"]
    result = npuprof(["--output-dir", out, *flags, "--", *job], env=standin_env(str(tmp_path / "calls.jsonl")))
    assert result.returncode == 0, result.stderr
    code, report = check_json(out)
    made = report["handoff"]
    spans = [[w["first_step"], w["last_step"]] for w in report["processes"][0]["windows"]]
    assert code == 0 and len(spans) == 2 and made["steps"] == spans[0]
    assert [one["rank"] for one in made["sessions"]] == [0]
    assert f"all ranks: {made['command']}" in result.stderr
    (session,) = os.listdir(made["path"])
    assert os.path.exists(os.path.join(made["path"], session, "profiler_info_0.json"))
    code, second = check_json(out, "--window", "2")
    assert code == 0 and second["handoff"]["steps"] == spans[1]
    missing = npuprof(["--check", out, "--window", "3"])
    assert missing.returncode == 2 and "the run has 2 NPU window(s)" in missing.stderr
    with open(os.path.join(out, "npuprof_report.html")) as handle:
        assert json.dumps(made["command"])[1:-1].split(" -d ")[0] in handle.read()


def test_a_hand_off_already_in_place_is_taken_until_a_session_or_a_link_changes(tmp_path, monkeypatch):
    """The lay-out is kept with the inode and change time of every folder it listed or linked into
    and each profiler_info it read: the next build links and reads nothing and gives the same; a
    session parsed again (its file replaced) or a link taken out of the folder is laid out again. A
    lay-out of folders changed just now is not kept (a coarse clock would hide a change after it)."""
    root = str(tmp_path)
    rows = sessions_of_two_runs(root)["run1"]
    first = handoff.build(root, "run1", rows)
    folder = first[0]["path"]
    kept = os.path.join(os.path.dirname(folder), f".{os.path.basename(folder)}.json")
    assert not os.path.exists(kept), "its sessions were made just now"
    monkeypatch.setattr(handoff, "SETTLED_NS", 0)
    assert handoff.build(root, "run1", rows) == first and os.path.exists(kept)

    def refused(*_args):
        raise AssertionError("laid out or read again")

    with monkeypatch.context() as patched:
        patched.setattr(handoff, "_link_session", refused)
        patched.setattr(deliverables, "recorded_export_types", refused)
        assert handoff.build(root, "run1", rows) == first
    session = first[0]["sessions"][0]["session"]
    name = os.path.join(deliverables.ASCEND_OUTPUT, deliverables.TRACE_VIEW)
    source, linked = os.path.join(root, session, name), os.path.join(folder, session, name)
    shutil.copy(source, source + ".new")
    os.replace(source + ".new", source)  # parsed again
    assert not os.path.samefile(source, linked)
    assert handoff.build(root, "run1", rows) == first and os.path.samefile(source, linked)
    os.unlink(linked)
    assert handoff.build(root, "run1", rows) == first and os.path.samefile(source, linked)


def test_the_answer_from_a_kept_hand_off_is_the_answer_laid_out_again(tmp_path, monkeypatch):
    """``--check --json`` over NPU sessions whose hand-off is in place and kept, then with the kept
    lay-out gone (laid out and read again): the same answer, and the kept one taken as it was."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    import synthetic_npu_output

    out = str(tmp_path)
    synthetic_npu_output.write_output(out, 4)
    monkeypatch.setattr(handoff, "SETTLED_NS", 0)
    report.build(out)  # lays the hand-off out and keeps it
    (kept,) = [
        os.path.join(out, handoff.FOLDER, n) for n in os.listdir(os.path.join(out, handoff.FOLDER)) if n[0] == "."
    ]
    before = os.stat(kept).st_mtime_ns
    code, taken = check_json(out)
    assert code == 0 and os.stat(kept).st_mtime_ns == before, "the kept lay-out was taken, not made again"
    os.unlink(kept)
    assert check_json(out) == (code, taken)
    assert taken["handoff"]["sessions"] and not taken["handoff"]["left_out"]
