"""The Ascend deliverable checks, on session directories built from the documented layout,
each broken in one way; and --check on a real (stand-in) npu run once its session directory exists."""

from __future__ import annotations

import glob
import json
import os
import shutil
import sqlite3

import npu_layout
import pytest
from answers import check_json
from jobs import PYTHON, assert_ok, npuprof, script
from npu_standin import standin_env

from npuprof_launch.common import deliverables, names


def output(path: str) -> str:
    return os.path.join(path, "ASCEND_PROFILER_OUTPUT")


@pytest.mark.parametrize("export", [("text",), ("db",), ("text", "db")])
def test_a_complete_session_passes(tmp_path, export):
    path = npu_layout.session(str(tmp_path), export=export)
    assert deliverables.check_ascend_dir(path, export) == []


def test_a_session_without_rank_passes(tmp_path):
    path = npu_layout.session(str(tmp_path), rank=None)
    assert os.path.exists(os.path.join(path, "profiler_info.json"))
    assert deliverables.check_ascend_dir(path, ("text",)) == []


def test_never_stopped(tmp_path):
    path = npu_layout.session(str(tmp_path), stopped=False, parsed=False)
    (problem,) = deliverables.check_ascend_dir(path, ("text",))
    assert "profiler_info" in problem and "never stopped properly" in problem


def test_unreadable_profiler_info_counts_as_never_stopped(tmp_path):
    path = npu_layout.session(str(tmp_path))
    with open(os.path.join(path, "profiler_info_0.json"), "w") as handle:
        handle.write('{"config": ')  # cut off mid-write
    (problem,) = deliverables.check_ascend_dir(path, ("text",))
    assert "never stopped properly" in problem


def test_never_parsed_points_to_analyse(tmp_path):
    path = npu_layout.session(str(tmp_path), parsed=False)
    (problem,) = deliverables.check_ascend_dir(path, ("text",))
    assert "ASCEND_PROFILER_OUTPUT" in problem and f"npuprof-run --analyse {tmp_path}" in problem


def test_missing_directory(tmp_path):
    assert deliverables.check_ascend_dir(str(tmp_path / "gone_ascend_pt"), ("text",)) == [
        f"{tmp_path / 'gone_ascend_pt'}: missing"
    ]


def _remove(name):
    return lambda out: os.remove(os.path.join(out, name))


def _write(name, text):
    def write(out):
        with open(os.path.join(out, name), "w") as handle:
            handle.write(text)

    return write


def _header_only(name, header):
    return lambda out: npu_layout.write_csv(os.path.join(out, name), header, [])


TEXT_BREAKS = {
    "trace_view.json missing": (_remove("trace_view.json"), "trace_view.json: missing"),
    "trace_view.json cut off": (_write("trace_view.json", '[{"ph": "X"'), "trace_view.json: not readable JSON"),
    "trace_view.json empty": (_write("trace_view.json", "[]"), "trace_view.json: holds no events"),
    "trace_view.json no events": (_write("trace_view.json", '{"traceEvents": []}'), "holds no events"),
    "kernel_details.csv missing": (_remove("kernel_details.csv"), "kernel_details.csv: missing"),
    "kernel_details.csv header only": (
        _header_only("kernel_details.csv", npu_layout.KERNEL_HEADER),
        "kernel_details.csv: a header but no rows",
    ),
    "kernel_details.csv wrong header": (
        _write("kernel_details.csv", "Name,Type\nMatMulV2,MatMulV2\n"),
        "kernel_details.csv: the header lacks Duration(us)",
    ),
    "op_statistic.csv missing": (_remove("op_statistic.csv"), "op_statistic.csv: missing"),
    "op_statistic.csv header only": (
        _header_only("op_statistic.csv", npu_layout.OP_STATISTIC_HEADER),
        "op_statistic.csv: a header but no rows",
    ),
    "op_statistic.csv empty file": (_write("op_statistic.csv", ""), "op_statistic.csv: the header lacks OP Type"),
}


@pytest.mark.parametrize("case", list(TEXT_BREAKS))
def test_broken_text_deliverable(tmp_path, case):
    path = npu_layout.session(str(tmp_path))
    breaker, expected = TEXT_BREAKS[case]
    breaker(output(path))
    (problem,) = deliverables.check_ascend_dir(path, ("text",))
    assert expected in problem


def _db(path: str) -> str:
    (found,) = glob.glob(os.path.join(output(path), "ascend_pytorch_profiler*.db"))
    return found


def _corrupt(db: str) -> None:
    """Overwrite a page in the middle of the file: it still opens, but its b-tree is damaged."""
    size = os.path.getsize(db)
    with open(db, "r+b") as handle:
        handle.seek(size // 2 // 4096 * 4096)
        handle.write(b"\xa5" * 4096)


def _damage_free_space(db: str) -> None:
    """Zero the cell-content offset in the header of NPU_INFO's page: reads may still work,
    PRAGMA quick_check reports the page."""
    connection = sqlite3.connect(db)
    root = connection.execute("SELECT rootpage FROM sqlite_master WHERE name = 'NPU_INFO'").fetchone()[0]
    page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    connection.close()
    with open(db, "r+b") as handle:
        handle.seek((root - 1) * page_size + 5)
        handle.write(b"\x00\x00")


DB_BREAKS = {
    "no db file": (lambda db: os.remove(db), "no ascend_pytorch_profiler*.db"),
    "not sqlite": (lambda db: open(db, "wb").write(b"not a database" * 300), "not a readable SQLite database"),
    "damaged page": (_corrupt, "database disk image is malformed"),
    "quick_check fails": (_damage_free_space, "PRAGMA quick_check failed"),
    "NPU_INFO empty": (lambda db: (os.remove(db), npu_layout.make_db(db, npu_info=False)), "NPU_INFO is missing"),
    "main tables empty": (lambda db: (os.remove(db), npu_layout.make_db(db, rows=False)), "none of the tables"),
}


@pytest.mark.parametrize("case", list(DB_BREAKS))
def test_broken_db_deliverable(tmp_path, case):
    path = npu_layout.session(str(tmp_path), export=("db",))
    breaker, expected = DB_BREAKS[case]
    breaker(_db(path))
    problems = deliverables.check_ascend_dir(path, ("db",))
    assert len(problems) == 1 and expected in problems[0], problems


def test_cpu_only_db_needs_no_npu_info(tmp_path):
    path = npu_layout.session(str(tmp_path), export=("db",), activities=("CPU",))
    db = _db(path)
    os.remove(db)
    npu_layout.make_db(db, npu_info=False)
    assert deliverables.check_ascend_dir(path, ("db",)) == []


def test_each_export_type_asked_for_must_be_there(tmp_path):
    path = npu_layout.session(str(tmp_path), export=("db",))
    problems = deliverables.check_ascend_dir(path, ("text", "db"))
    assert len(problems) == 3 and all("missing (text export)" in p for p in problems)


def test_recorded_export_types_and_operator_totals(tmp_path):
    text = npu_layout.session(str(tmp_path / "a"), export=("text", "db"))
    assert deliverables.recorded_export_types(text) == ("text", "db")
    old = npu_layout.session(str(tmp_path / "b"), export=("db",))
    info = os.path.join(old, "profiler_info_0.json")
    with open(info) as handle:
        data = json.load(handle)
    data["config"]["experimental_config"]["_export_type"] = "db"  # releases before 2.5.1 kept a string
    npu_layout.write_json(info, data)
    assert deliverables.recorded_export_types(old) == ("db",)
    assert deliverables.recorded_export_types(str(tmp_path)) == ("text",)
    totals = deliverables.npu_operator_totals(text)
    assert totals == {name: total for name, (count, total) in npu_layout.OPERATORS.items()}


def test_ascend_dirs_finds_sessions_like_torch_npu(tmp_path):
    first = npu_layout.session(str(tmp_path), worker="a")
    second = npu_layout.session(str(tmp_path), worker="b")
    (tmp_path / "npuprof_status").mkdir()
    assert deliverables.ascend_dirs(str(tmp_path)) == [first, second]
    assert deliverables.ascend_dirs(first) == [first]


# -- through the launcher: --check on a real npu run (the recording stand-in) -------------------


def _run_session(tmp_path, out: str, export: tuple[str, ...], level: str = "level1") -> str:
    """Run a job under the stand-in, which writes the session directory torch_npu writes for its
    window (at Level1 with op_statistic.csv); returns it, as the npu backend recorded it."""
    record = str(tmp_path / "calls.jsonl")
    flags = ["--output-dir", out, "--backend", "npu", "--export-type", ",".join(export), "--level", level]
    result = npuprof([*flags, "--", PYTHON, script("train_loop.py"), "--steps", "4"], env=standin_env(record))
    assert_ok(result)
    (status_file,) = glob.glob(os.path.join(names.status_dir(out), "*.json"))
    with open(status_file) as handle:
        status = json.load(handle)
    (path,) = status["traces"]
    return os.path.join(out, path)


def test_check_passes_on_a_complete_npu_run_and_reports_its_top_operators(tmp_path, out):
    _run_session(tmp_path, out, ("text", "db"))
    code, report = check_json(out)
    assert code == 0 and report["passed"] is True, report["problems"]
    (process,) = report["processes"]
    assert process["backend"] == "npu"
    assert [op["name"] for op in process["top_operators"]] == ["MatMulV2", "Add", "Cast"]
    assert process["top_operators"][0]["self_us"] == npu_layout.OPERATORS["MatMulV2"][1]


def test_check_fails_on_an_unparsed_npu_run_and_says_how_to_parse_it(tmp_path, out):
    path = _run_session(tmp_path, out, ("text",))
    shutil.rmtree(output(path))
    result = npuprof(["--check", out])
    assert result.returncode == 1
    assert f"npuprof-run --analyse {out}" in result.stdout and "check FAILED" in result.stdout
