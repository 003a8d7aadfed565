"""The whole npu path with the recording torch_npu stand-in (launcher, hook, backend choice,
schedule, stop), asserting on what torch_npu was asked to do and on the files and report."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import pytest
from answers import check_json, texts
from compare import profiled_against_bare
from jobs import PYTHON, assert_ok, clean_env, npuprof, script
from npu_standin import calls, only, standin_env
from outputs import status_records, step_counts

TRAIN = script("train_loop.py")
TRAIN_ON_NPU = script("train_on_npu.py")
STEPS = "6"


@pytest.fixture
def record(tmp_path) -> str:
    return str(tmp_path / "torch_npu_calls.jsonl")


def run(out: str, record: str, flags: list[str], job: str = TRAIN, steps: str = STEPS, **env) -> object:
    return npuprof(["--output-dir", out, *flags, "--", PYTHON, job, "--steps", steps], env=standin_env(record, **env))


def run_against_bare(out: str, record: str, flags: list[str], job: str = TRAIN, **env):
    """``run``, whose stdout must be the bare job's: a loss and an exact weight checksum, the same
    from train_on_npu.py as from train_loop.py (run bare, without the stand-in)."""
    runs = profiled_against_bare(
        [job, "--steps", STEPS],
        ["--output-dir", out, *flags],
        env=standin_env(record, **env),
        bare_job=[TRAIN, "--steps", STEPS],
        bare_env=clean_env(),
    )
    return runs.profiled


def profiler_calls(record: str) -> list[str]:
    return [c["call"] for c in calls(record) if c["call"] in ("start", "step", "stop")]


@pytest.mark.xdist_group("npu_backend")
def test_every_npu_option_reaches_torch_npu_and_one_window_records_two_steps(out, record):
    """--backend npu --level level1 --export-type db --aic-metrics PipeUtilization --with-stack
    --record-shapes --skip-first 1 --active 2: one profile, 2 steps, one window, stopped, same results."""
    flags = ["--backend", "npu", "--level", "level1", "--export-type", "db", "--aic-metrics", "PipeUtilization"]
    flags += ["--with-stack", "--record-shapes", "--skip-first", "1", "--active", "2"]
    result = run_against_bare(out, record, flags)  # the job's results unchanged
    assert "Profiler won't be using warmup" in result.stderr, "torch_npu's build-time warnings go to stderr"

    experimental = {"profiler_level": "Level1", "aic_metrics": "ACL_AICORE_PIPE_UTILIZATION", "export_type": "db"}
    assert only(record, "_ExperimentalConfig")["kwargs"] == experimental
    profile = only(record, "profile")["kwargs"]
    assert profile["activities"] == ["CPU", "NPU"]
    assert profile["record_shapes"] is True and profile["with_stack"] is True
    assert not (profile["profile_memory"] or profile["with_flops"] or profile["with_modules"])
    assert profile["experimental_config"] == experimental
    assert profile["schedule"] == {"wait": 0, "warmup": 0, "active": 2, "repeat": 1, "skip_first": 0}
    assert profile["on_trace_ready"] == "<callable>"
    (window,) = calls(record, "trace_ready")
    assert window["steps"] == ["ProfilerStep#2", "ProfilerStep#3"], "ProfilerStep# holds the job's step numbers"
    assert only(record, "trace_handler")["analyse_flag"] is True
    assert profiler_calls(record) == ["start", "step", "step", "stop"]
    assert all(c.get("positional", []) == [] for c in calls(record)), "every argument is passed by keyword"

    (status,) = status_records(out)
    assert status["backend"] == "npu" and status["state"] == "done"
    assert status["steps"] == int(STEPS) and status["window_steps"] == [2, 3] and status["windows_completed"] == 1
    handler = only(record, "tensorboard_trace_handler")
    assert handler["kwargs"] == {"dir_name": out, "worker_name": status["worker"], "analyse_flag": True}
    names = [c["call"] for c in calls(record)]
    assert names.index("tensorboard_trace_handler") < names.index("start"), "the output path is set before start"
    assert len({c["pid"] for c in calls(record)}) == 1

    # The stand-in writes the session directory torch_npu writes: exported, found as the worker's, checked.
    code, report = check_json(out)
    assert code == 0 and report["passed"] is True, report["problems"]
    (session,) = status["traces"]
    assert session.startswith(status["worker"] + "_") and session.endswith("_ascend_pt")
    assert glob.glob(os.path.join(out, session, "ASCEND_PROFILER_OUTPUT", "ascend_pytorch_profiler*.db"))


def test_defaults_are_the_fields_own_example(out, record):
    assert_ok(run(out, record, ["--backend", "npu"]))
    assert only(record, "_ExperimentalConfig")["kwargs"] == {
        "profiler_level": "Level0",
        "aic_metrics": "ACL_AICORE_NONE",
        "export_type": "text",
    }
    assert only(record, "profile")["kwargs"]["activities"] == ["CPU", "NPU"]
    assert "async_mode" not in only(record, "tensorboard_trace_handler")["kwargs"]
    (status,) = status_records(out)
    assert status["warnings"] == []


def test_every_npu_option_reaches_torch_npu(out, record):
    flags = ["--backend", "npu", "--level", "level2", "--aic-metrics", "MemoryAccess", "--export-type", "text,db"]
    flags += ["--l2-cache", "--no-data-simplification", "--mstx", "--host-sys", "cpu,numa", "--sys-io"]
    flags += ["--sys-interconnection", "--op-attr", "--record-op-args", "--gc-detect-threshold", "2.5"]
    flags += ["--async-mode", "--no-analyse", "--profile-memory", "--with-modules", "--with-flops"]
    assert_ok(run(out, record, flags))
    assert only(record, "_ExperimentalConfig")["kwargs"] == {
        "profiler_level": "Level2",
        "aic_metrics": "ACL_AICORE_MEMORY_ACCESS",
        "export_type": ["text", "db"],
        "l2_cache": True,
        "data_simplification": False,
        "mstx": True,
        "host_sys": ["cpu", "numa"],
        "sys_io": True,
        "sys_interconnection": True,
        "op_attr": True,
        "record_op_args": True,
        "gc_detect_threshold": 2.5,
    }
    profile = only(record, "profile")["kwargs"]
    assert profile["profile_memory"] and profile["with_modules"] and profile["with_flops"]
    handler = only(record, "tensorboard_trace_handler")["kwargs"]
    assert handler["analyse_flag"] is False and handler["async_mode"] is True
    assert only(record, "trace_handler")["analyse_flag"] is False
    (status,) = status_records(out)
    assert status["warnings"] == []


def test_options_also_come_from_the_environment(out, record):
    env = {"NPU_PROF_BACKEND": "npu", "NPU_PROF_L2_CACHE": "yes", "NPU_PROF_HOST_SYS": "mem,cpu"}
    env.update({"NPU_PROF_GC_DETECT_THRESHOLD": "0", "NPU_PROF_ANALYSE": "off", "NPU_PROF_EXPORT_TYPE": "db"})
    assert_ok(run(out, record, [], **env))
    experimental = only(record, "_ExperimentalConfig")["kwargs"]
    assert experimental["l2_cache"] is True and experimental["host_sys"] == ["mem", "cpu"]
    assert experimental["gc_detect_threshold"] == 0 and experimental["export_type"] == "db"
    assert only(record, "tensorboard_trace_handler")["kwargs"]["analyse_flag"] is False


@pytest.mark.xdist_group("npu_backend")
def test_an_older_torch_npu_gets_one_warning_per_missing_option(out, record):
    flags = ["--backend", "npu", "--level", "level1", "--aic-metrics", "MemoryAccess", "--export-type", "text,db"]
    flags += ["--async-mode", "--host-sys", "cpu", "--sys-io", "--mstx"]
    result = run_against_bare(out, record, flags, version="2.4.0")
    missing = ["--aic-metrics MemoryAccess", "--export-type text,db", "--async-mode", "--host-sys", "--sys-io"]
    (status,) = status_records(out)
    for flag in missing:
        lines = [line for line in result.stderr.splitlines() if line.startswith(f"npuprof: {flag}:")]
        assert len(lines) == 1, f"{flag}: expected one warning, got {lines}\n{result.stderr}"
        assert "torch_npu 2.4.0" in lines[0]
        assert lines[0].removeprefix("npuprof: ") in status["warnings"]
    # 2.4.0 knows mstx as msprof_tx, exports one type per run, and has no MemoryAccess.
    assert only(record, "_ExperimentalConfig")["kwargs"] == {
        "profiler_level": "Level1",
        "export_type": "text",
        "msprof_tx": True,
    }
    assert "async_mode" not in only(record, "tensorboard_trace_handler")["kwargs"]
    assert status["windows_completed"] == 1 and status["backend"] == "npu"


@pytest.mark.xdist_group("npu_backend")
@pytest.mark.parametrize(
    ("job", "npu_present", "backend"),
    [(TRAIN_ON_NPU, True, "npu"), (TRAIN_ON_NPU, False, "torch"), (TRAIN, True, "torch")],
    ids=["job-imports-torch_npu-with-npu", "job-imports-torch_npu-without-npu", "job-without-torch_npu"],
)
def test_backend_auto(out, record, job, npu_present, backend):
    run_against_bare(out, record, ["--backend", "auto"], job=job, npu=npu_present)
    (status,) = status_records(out)
    assert status["backend"] == backend
    if backend == "npu":
        assert len(calls(record, "profile")) == 1 and step_counts(out) == []
    else:
        assert calls(record, "profile") == [] and step_counts(out) == [1], "torch.profiler traced the window"
    if job == TRAIN:
        assert calls(record) == [], "auto must not import torch_npu into a job that does not use it"


@pytest.mark.xdist_group("npu_backend")
@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("PROF_CONFIG_PATH", "<tmp>"),
        ("MSMONITOR_USE_DAEMON", "1"),
        ("KINETO_USE_DAEMON", "1"),
        ("PROFILER_SAMPLECONFIG", '{"ai_core_profiling": "on"}'),
        ("PROFILING_MODE", "dynamic"),
    ],
)
def test_another_profiler_owns_the_process(out, record, tmp_path, variable, value):
    value = str(tmp_path) if value == "<tmp>" else value
    result = run_against_bare(out, record, ["--backend", "npu"], **{variable: value})
    assert calls(record) == [], "no torch_npu call at all: not even an import"
    said = [line for line in result.stderr.splitlines() if line.startswith("npuprof: ") and variable in line]
    assert len(said) == 1, result.stderr
    (status,) = status_records(out)
    assert status["state"] == "off" and variable in status["declined"]
    assert status["warnings"] == [status["declined"]] and status["steps"] == int(STEPS)
    code, report = check_json(out)
    assert code == 1 and any("not profiled" in p and variable in p for p in texts(report["problems"]))


def test_a_daemon_flag_of_0_is_no_conflict(out, record):
    """torch_npu reads MSMONITOR_USE_DAEMON before KINETO_USE_DAEMON: 0 there means no daemon."""
    assert_ok(run(out, record, ["--backend", "npu"], MSMONITOR_USE_DAEMON="0", KINETO_USE_DAEMON="1"))
    assert len(calls(record, "profile")) == 1


def test_wait_warmup_and_repeat_give_one_handed_over_window_each(out, record):
    flags = ["--backend", "npu", "--skip-first", "1", "--wait", "1", "--warmup", "1", "--active", "1"]
    assert_ok(run(out, record, [*flags, "--repeat", "2"], steps="8"))
    # Each window has a profiler of its own, built for its warmup and active steps; the wait is ours.
    schedules = calls(record, "schedule")
    assert [s["kwargs"] for s in schedules] == [{"wait": 0, "warmup": 1, "active": 1, "repeat": 1, "skip_first": 0}] * 2
    assert [w["steps"] for w in calls(record, "trace_ready")] == [["ProfilerStep#4"], ["ProfilerStep#7"]]
    assert len(calls(record, "trace_handler")) == 2
    (status,) = status_records(out)
    assert status["windows_completed"] == 2 and status["window_steps"] == [4, 7]
    assert [(w["first_step"], w["last_step"], w["complete"]) for w in status["windows"]] == [(4, 4, True), (7, 7, True)]


def test_a_window_cut_short_by_the_end_of_the_job_is_stopped_and_handed_over(out, record):
    result = run(out, record, ["--backend", "npu", "--skip-first", "4", "--active", "5"])
    assert_ok(result)
    assert profiler_calls(record)[-1] == "stop"
    (window,) = calls(record, "trace_ready")
    # Steps 5 and 6 only: the ProfilerStep# range torch_npu opens after the last step() is put
    # aside for the stop (it belongs to a step the process never made), so it is never reported.
    assert window["steps"] == ["ProfilerStep#5", "ProfilerStep#6"]
    (status,) = status_records(out)
    assert status["partial_traces"] == 1 and status["windows_completed"] == 0
    assert any("cut short" in warning for warning in status["warnings"])
    assert status["windows"][0]["profiler_steps_from"] == 5
    # Stopped at the process's exit, torch_npu's parse cannot start its pool ("can't register atexit
    # after shutdown") and warns that it failed: the aftercare waits for no parse. It waited 600 s
    # for one, so the launcher's report found it still running (the process's end and the launcher
    # each waited 120 s for it).
    assert any("Profiling data parsing failed" in warning for warning in status["warnings"])
    care = json.loads((Path(out) / status["windows"][0]["aftercare"]).read_text())
    assert care["status"] == "done" and care["traces"], care
    code, report = check_json(out)
    assert any("never parsed; run npuprof-run --analyse" in problem for problem in texts(report["problems"]))


def test_a_window_torch_npu_refuses_to_parse_in_a_daemon_process_is_waited_for_by_no_one(out, record):
    """torch_npu parses nothing in a daemon process and prints an error: the window's aftercare does
    not wait for that parse (it waited 600 s, and the trainer's exit was held 120 s of the job's own
    time for it); the answer names the error and the offline parse."""
    result = npuprof(
        ["--output-dir", out, "--backend", "npu", "--skip-first", "2", "--active", "2", "--", PYTHON]
        + [script("daemon_train.py"), "--steps", "8"],
        env=standin_env(record),
    )
    assert_ok(result)
    assert "exit 0" in result.stdout
    (status,) = status_records(out)
    assert status["windows_completed"] == 1 and len(status["profiler_errors"]) == 1
    assert "during the daemon process" in status["profiler_errors"][0]
    care = json.loads((Path(out) / status["windows"][0]["aftercare"]).read_text())
    assert care["status"] == "done" and care["traces"], care
    code, report = check_json(out)
    problems = texts(report["problems"])
    assert code == 1 and any("never parsed; run npuprof-run --analyse" in problem for problem in problems)


def test_a_release_without_a_step_offset_numbers_each_window_from_0(out, record):
    """torch_npu 2.4.0 (and up to 2.5.1) has no _step_num_offset: its own numbering, said in the record."""
    assert_ok(run(out, record, ["--backend", "npu", "--skip-first", "2", "--active", "2"], version="2.4.0"))
    (window,) = calls(record, "trace_ready")
    assert window["steps"] == ["ProfilerStep#0", "ProfilerStep#1"]
    (status,) = status_records(out)
    assert status["windows"][0]["profiler_steps_from"] == 0 and status["window_steps"] == [3, 4]


def test_an_error_torch_npus_profiler_prints_reaches_the_record_and_fails_check(out, record):
    """torch_npu prints its profiler's errors with print_error_msg (stdout); they are counted into the
    status record, named in the report, and --check fails on them."""
    problem = "Call _export_to_db failed. Exception: disk quota exceeded"
    result = run(out, record, ["--backend", "npu", "--skip-first", "1"], TORCH_NPU_STANDIN_ERROR=problem)
    assert_ok(result)
    assert "[ERROR] [" in result.stdout and problem in result.stdout, "torch_npu's own line is unchanged"
    (status,) = status_records(out)
    assert status["profiler_messages"] == {"error": 1}
    assert [problem in error for error in status["profiler_errors"]] == [True], status["profiler_errors"]
    assert status["errors"] == [], "the profiler's words are kept apart from the tool's failures"
    code, report = check_json(out)
    assert code == 1
    # Printed in the job's process and logged by the parse: told once, as the log has it.
    told = [p for p in texts(report["problems"]) if problem in p]
    assert len(told) == 1 and "torch_npu logged:" in told[0], report["problems"]
