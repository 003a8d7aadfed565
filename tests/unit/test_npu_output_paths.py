"""The paths only real NPU output reaches, in-process: the session directories a worker finds as
its own, the folders the aftercare makes, a staged session tree moved home whole, and a window kept
as raw data (--no-analyse) that nothing waits for and the report tells as kept, not as a problem.

Each of these failed on every Ascend machine from 2026-12-01 on: no test reached them,
since the torch_npu stand-in wrote no session directory."""

from __future__ import annotations

import json
import os
import time

import npu_layout
import pytest

from npuprof_launch.common import deliverables, files
from npuprof_launch.inprocess import aftercare
from npuprof_launch.inprocess.backends import npu
from npuprof_launch.launcher import windowfiles

WORKER = "node1_rank0_pid4242"


def test_a_worker_finds_its_sessions_in_both_of_torch_npus_name_forms(tmp_path):
    made = [
        f"{WORKER}_20261204120000123_ascend_pt",  # 2.4.0 and before: {worker}_{timestamp}
        f"{WORKER}_4242_20261204120001456_ascend_pt",  # later: {worker}_{pid}_{timestamp}
    ]
    others = [
        "node1_rank0_pid42421_4242_20261204120000123_ascend_pt",  # a worker whose name extends ours
        "node1_rank1_pid4243_4243_20261204120000123_ascend_pt",  # another rank's
        f"{WORKER}_4242_20261204120000123_ascend_pt.tmp",  # not a session directory
        "ASCEND_PROFILER_OUTPUT",
    ]
    for name in made + others:
        (tmp_path / name).mkdir()
    assert npu._session_dirs(str(tmp_path), WORKER) == set(made)
    assert npu._session_dirs(str(tmp_path / "gone"), WORKER) == set()


@pytest.mark.parametrize("tail", ["session/.", "session/sub/..", "session/", "session"])
def test_make_dirs_makes_the_folder_a_path_leads_to(tmp_path, tail):
    files.make_dirs(os.path.join(str(tmp_path), "out", tail))
    assert (tmp_path / "out" / "session").is_dir()
    assert not (tmp_path / "out" / "session" / "sub").exists()
    assert (tmp_path / "out").stat().st_mode & 0o002 == 0, "never world-writable"


def test_make_dirs_on_a_file_says_so(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError):
        files.make_dirs(str(tmp_path / "file" / "."))


def _tree(root: str) -> dict[str, bytes]:
    found = {}
    for folder, dirs, entries in os.walk(root):
        for entry in dirs:
            found[os.path.relpath(os.path.join(folder, entry), root) + "/"] = b""
        for entry in entries:
            with open(os.path.join(folder, entry), "rb") as handle:
                found[os.path.relpath(os.path.join(folder, entry), root)] = handle.read()
    return found


def _care(tmp_path, session: str, *flags: str) -> dict:
    result = str(tmp_path / "out" / "npuprof_status" / "windows" / "r.window1.json")
    assert aftercare.main(["--result", result, "--kind", "npu", "--home", str(tmp_path / "out"), *flags, session]) == 0
    with open(result) as handle:
        return json.load(handle)


def test_a_staged_session_tree_comes_home_whole(tmp_path):
    stage = tmp_path / "stage"
    stage.mkdir()
    session = npu_layout.session(str(stage), WORKER, export=("text", "db"))
    os.makedirs(os.path.join(session, "PROF_000001_20260101120000123_ABCDEFGHIJ", "host", "data"))  # empty
    before = _tree(session)
    assert any("/" not in rel.rstrip("/") for rel in before), "files at the session's top level"
    outcome = _care(tmp_path, session, "--parsed", "--stage", str(stage))
    home = str(tmp_path / "out" / os.path.basename(session))
    assert outcome["status"] == "done", outcome
    assert outcome["left"] == [] and outcome["errors"] == []
    assert outcome["traces"] == [os.path.basename(session)]
    assert _tree(home) == before, "every file and folder, byte for byte"
    assert not os.path.exists(session), "nothing left in the stage"
    assert deliverables.check_ascend_dir(home, ("text", "db")) == []


def test_raw_data_kept_is_not_waited_for_and_is_no_problem(tmp_path, monkeypatch):
    """--no-analyse: no parse will write analyse.done, so the aftercare goes on at once (it waited
    PARSE_WAIT_S, 600 s, for it), and the check tells the session as kept."""
    monkeypatch.setattr(aftercare, "PARSE_WAIT_S", 30.0)
    (tmp_path / "out").mkdir()
    session = npu_layout.session(str(tmp_path / "out"), WORKER, parsed=False)
    started = time.monotonic()
    outcome = _care(tmp_path, session)
    assert time.monotonic() - started < 10, "nothing waits for a parse that was not asked for"
    assert outcome["status"] == "done" and outcome["errors"] == []
    assert deliverables.check_ascend_dir(session, ("text",), parse_asked=False) == []
    assert deliverables.unparsed(session)
    (problem,) = deliverables.check_ascend_dir(session, ("text",))
    assert "never parsed" in problem and "npuprof-run --analyse" in problem, "asked for a parse: a problem"


def test_a_parse_asked_for_is_waited_for_until_it_is_done(tmp_path, monkeypatch):
    monkeypatch.setattr(aftercare, "PARSE_WAIT_S", 0.6)
    (tmp_path / "out").mkdir()
    session = npu_layout.session(str(tmp_path / "out"), WORKER, parsed=False)
    started = time.monotonic()
    _care(tmp_path, session, "--parsed")
    assert time.monotonic() - started >= 0.5, "an unfinished parse is waited for, up to PARSE_WAIT_S"


def test_the_raw_sessions_kept_come_with_the_command_that_parses_them():
    rows = [{"raw_sessions": 2}, {}, {"raw_sessions": 1}]
    assert windowfiles.raw_kept(rows, "/data/my runs") == {
        "sessions": 3,
        "command": "npuprof-run --analyse '/data/my runs'",
    }
    assert windowfiles.raw_kept([{}], "/data") is None


def test_the_aftercare_waits_for_a_parse_only_when_torch_npu_parses():
    args = dict(traces=["s_ascend_pt"], result="r.json", kind="npu", gzip_traces=False, stage=None, home="/o")
    assert "--parsed" in aftercare.command(**args, parsed=True)
    assert "--parsed" not in aftercare.command(**args, parsed=False)


def _sparse(path: str, size: int) -> None:
    with open(path, "ab") as handle:
        handle.truncate(size)  # no disk used: the size is what is read


def test_an_npu_sessions_raw_data_is_not_a_trace_too_large_to_open(tmp_path):
    """Gigabytes of raw data are normal on Ascend and no viewer loads them whole: the guard holds
    the viewers' limits against trace_view.json, the file they do load (it held the whole tree)."""
    session = npu_layout.session(str(tmp_path), WORKER)
    _sparse(os.path.join(session, "FRAMEWORK", "torch.op_range"), 3 * 2**30)
    window = {"first_step": 3, "last_step": 4}
    size = windowfiles.tree_bytes(session)
    assert size > 3 * 2**30
    assert windowfiles.size_warnings(window, size, windowfiles.viewed_bytes(session), "npu") == []
    _sparse(os.path.join(session, deliverables.ASCEND_OUTPUT, deliverables.TRACE_VIEW), 300 * 2**20)
    (warning,) = windowfiles.size_warnings(window, size, windowfiles.viewed_bytes(session), "npu")
    assert warning.startswith("window steps 3-4: its trace_view.json is 300 MB of trace, more than chrome://tracing")
    assert windowfiles.size_warnings(window, size, 0, "npu") == [], "db export: no JSON to open"
    (torch_warning,) = windowfiles.size_warnings(window, 300 * 2**20, 0, "torch")
    assert torch_warning.startswith("window steps 3-4 is 300 MB of trace")


@pytest.mark.parametrize(
    ("level", "activities", "csvs"),
    [
        ("Level0", ("CPU", "NPU"), ["kernel_details.csv"]),
        ("Level1", ("CPU", "NPU"), ["kernel_details.csv", "op_statistic.csv"]),
        ("Level_none", ("CPU", "NPU"), []),
        ("Level1", ("CPU",), []),
    ],
)
def test_a_session_needs_the_csvs_its_level_writes_and_no_others(tmp_path, level, activities, csvs):
    """torch_npu writes op_statistic.csv at Level1 and Level2 only, kernel_details.csv from Level0 on,
    neither for the CPU alone: the default Level0 failed --check on op_statistic.csv missing."""
    session = npu_layout.session(str(tmp_path), WORKER, level=level, activities=activities)
    output = os.path.join(session, deliverables.ASCEND_OUTPUT)
    assert sorted(name for name in os.listdir(output) if name.endswith(".csv")) == csvs
    assert deliverables.check_ascend_dir(session, ("text",)) == []
    assert deliverables.looks_parsed(session)
    for name in csvs:
        os.unlink(os.path.join(output, name))
        (problem,) = deliverables.check_ascend_dir(session, ("text",))
        assert problem.endswith(f"{name}: missing (text export)")
        break


def test_the_operators_device_time_comes_from_kernel_details_at_level0(tmp_path):
    level0 = npu_layout.session(str(tmp_path / "a"), WORKER, level="Level0")
    level1 = npu_layout.session(str(tmp_path / "b"), WORKER, level="Level1")
    assert deliverables.npu_operator_totals(level0) == pytest.approx(deliverables.npu_operator_totals(level1))
    assert set(deliverables.npu_operator_totals(level1)) == set(npu_layout.OPERATORS)
    cpu = npu_layout.session(str(tmp_path / "c"), WORKER, activities=("CPU",))
    assert deliverables.npu_operator_totals(cpu) == {}


def test_a_printed_error_is_found_among_the_parse_s_log_lines_by_its_message():
    """A record that keeps the profiler's printed errors apart (profiler_errors): each is matched with
    the log lines by its message, at their end, as torch_npu's _log.py writes them."""
    lines = ["[2026-12-04-22:17:55.381] [ERROR] [1234] [Parser:106] msprof exited 1"]
    assert windowfiles.logged("msprof exited 1", lines) and not windowfiles.logged("another", lines)


def test_an_error_printed_and_logged_is_told_once_as_the_log_has_it():
    logged = ["rank 0 (pid 1 on vm): torch_npu logged: [2026-12-04-22:17:55.381] [ERROR] [Parser:106] msprof exited 1"]
    errors = ["the profiler logged an error: msprof exited 1", "the profiler logged an error: another"]
    assert windowfiles.unrepeated(errors, logged) == ["the profiler logged an error: another"]
    assert windowfiles.unrepeated(errors, []) == errors


def test_a_trees_size_is_what_os_walk_finds_there(tmp_path):
    """Each file stat'ed once, as os.walk lists it: a link to a file counts at its target's size, a
    link to a folder is not followed, a broken link counts 0; a plain file is its own size."""
    session = npu_layout.session(str(tmp_path), WORKER)
    _sparse(os.path.join(session, "FRAMEWORK", "torch.op_range"), 5000)
    os.symlink(os.path.join(session, "FRAMEWORK", "torch.op_range"), os.path.join(session, "linked_file"))
    os.symlink(os.path.join(session, "FRAMEWORK"), os.path.join(session, "linked_folder"))
    os.symlink(os.path.join(session, "gone"), os.path.join(session, "broken"))
    walked = 0
    for root, _dirs, names_ in os.walk(session):
        for name in names_:
            try:
                walked += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    assert windowfiles.tree_bytes(session) == walked > 10000
    trace = os.path.join(session, "profiler_info_0.json")
    assert windowfiles.tree_bytes(trace) == os.path.getsize(trace)
    assert windowfiles.tree_bytes(os.path.join(session, "gone")) == 0
