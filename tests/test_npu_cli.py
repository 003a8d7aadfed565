"""``--analyse DIR`` (offline parsing, a mode) and ``--analyse``/``--no-analyse`` (the option)
side by side on one command line, through the real launcher."""

from __future__ import annotations

import os

import npu_layout
import pytest
from jobs import PYTHON, assert_ok, clean_env, npuprof, script
from npu_standin import calls, only, standin_env

TRAIN = script("train_loop.py")


@pytest.fixture
def record(tmp_path) -> str:
    return str(tmp_path / "torch_npu_calls.jsonl")


@pytest.fixture
def raw(tmp_path) -> str:
    """An output directory holding one stopped but unparsed session (a --no-analyse run)."""
    folder = tmp_path / "raw"
    folder.mkdir()
    npu_layout.session(str(folder), parsed=False)
    return str(folder)


def test_analyse_dir_calls_torch_npus_offline_analyse_then_checks(raw, record):
    result = npuprof(["--analyse", raw], env=standin_env(record))
    (call,) = calls(record, "analyse")
    assert call["kwargs"] == {"profiler_path": raw}, "without --export-type torch_npu reads it from profiler_info"
    # The stand-in parses as torch_npu does: the session has its deliverables now, and the check passes.
    assert result.returncode == 0, result.stdout + result.stderr
    assert "analyse passed" in result.stdout
    (session,) = os.listdir(raw)
    assert os.path.isfile(os.path.join(raw, session, "ASCEND_PROFILER_OUTPUT", "trace_view.json"))
    assert calls(record, "profile") == []


def test_analyse_dir_passes_when_every_session_is_complete(tmp_path, record):
    npu_layout.session(str(tmp_path), worker="a", export=("text", "db"))
    npu_layout.session(str(tmp_path), worker="b", export=("db",))
    result = npuprof([f"--analyse={tmp_path}"], env=standin_env(record))
    assert_ok(result)
    assert "2 session(s)" in result.stdout and "analyse passed" in result.stdout
    assert only(record, "analyse")["kwargs"] == {"profiler_path": str(tmp_path)}


def test_analyse_dir_of_one_session(raw, record):
    (session,) = [os.path.join(raw, name) for name in os.listdir(raw)]
    npuprof(["--analyse", session], env=standin_env(record))
    assert only(record, "analyse")["kwargs"] == {"profiler_path": session}


@pytest.mark.parametrize(("version", "passed"), [("2.14.0", {"export_type": "db"}), ("2.4.0", {})])
def test_analyse_dir_with_an_export_type(raw, record, version, passed):
    result = npuprof(["--analyse", raw, "--export-type", "db"], env=standin_env(record, version=version))
    assert only(record, "analyse")["kwargs"] == {"profiler_path": raw, **passed}
    warned = [line for line in result.stderr.splitlines() if line.startswith("npuprof: --export-type:")]
    assert len(warned) == (0 if passed else 1)
    if not passed:
        assert "torch_npu 2.4.0" in warned[0]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--analyse", "{raw}", "--", PYTHON, TRAIN], "runs no command"),
        (["--analyse", PYTHON, TRAIN], "runs no command"),
        (["--analyse", "{raw}/nothing-here"], "not a directory"),
        (["--analyse", "{empty}"], "no *_ascend_pt directory"),
    ],
)
def test_analyse_dir_usage_errors(raw, tmp_path, record, args, says):
    (tmp_path / "empty").mkdir()
    args = [arg.format(raw=raw, empty=tmp_path / "empty") for arg in args]
    result = npuprof(args, env=standin_env(record))
    assert result.returncode == 2
    assert result.stderr.startswith("npuprof: ") and says in result.stderr
    assert calls(record, "analyse") == []


def test_analyse_dir_without_torch_npu(raw):
    result = npuprof(["--analyse", raw], env=clean_env())
    assert result.returncode == 2
    assert "--analyse needs torch_npu" in result.stderr


@pytest.mark.parametrize(
    ("flag", "environment", "analyse_flag"),
    [("--analyse", "0", True), ("--no-analyse", "1", False)],
)
def test_the_option_beside_the_mode(tmp_path, record, flag, environment, analyse_flag):
    """``--analyse --`` and ``--no-analyse`` are the option (and win over NPU_PROF_ANALYSE)."""
    out = str(tmp_path / "out")
    args = ["--backend", "npu", flag, "--output-dir", out, "--", PYTHON, TRAIN, "--steps", "3"]
    result = npuprof(args, env=standin_env(record, NPU_PROF_ANALYSE=environment))
    assert_ok(result)
    assert only(record, "tensorboard_trace_handler")["kwargs"]["analyse_flag"] is analyse_flag
    assert calls(record, "analyse") == []


def test_the_option_before_other_options_takes_no_value(record):
    result = npuprof(["--print-env", "--no-analyse", "--active", "2"], env=standin_env(record))
    assert_ok(result)
    assert "export NPU_PROF_ANALYSE=0" in result.stdout and "export NPU_PROF_ACTIVE=2" in result.stdout
    result = npuprof(["--print-env", "--analyse", "--active", "2"], env=standin_env(record))
    assert_ok(result)
    assert "NPU_PROF_ANALYSE" not in result.stdout and "export NPU_PROF_ACTIVE=2" in result.stdout
