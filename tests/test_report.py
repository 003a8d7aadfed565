"""The chain is verified and every broken link is named with its fix."""

from __future__ import annotations

import os
import sys

from answers import check_json, texts
from compare import profiled_against_bare
from jobs import assert_ok, clean_env, npuprof, script
from outputs import read_trace, status_records, write_trace

TRAIN = script("train_loop.py")


def test_complete_run_passes_with_the_documented_fields(out):
    assert_ok(npuprof(["--output-dir", out, "--", sys.executable, TRAIN, "--steps", "12"]))
    code, report = check_json(out)
    assert code == 0
    assert report["passed"] is True and report["problems"] == []
    (process,) = report["processes"]
    for key in ("host", "pid", "rank", "backend", "steps", "windows_planned", "windows_completed", "traces", "errors"):
        assert key in process
    assert process["steps"] == 12 and process["windows_completed"] == 1 and process["backend"] == "torch"
    assert process["profiler_steps"] == 1
    names = [op["name"] for op in process["top_operators"]]
    assert names and any(name.startswith("aten::") for name in names), names
    selfs = [op["self_us"] for op in process["top_operators"]]
    assert selfs == sorted(selfs, reverse=True) and selfs[0] > 0


def test_window_longer_than_the_job_fails_check_with_its_numbers(out):
    # The job's exit status stays its own (0) and its stdout unchanged.
    result = profiled_against_bare([TRAIN, "--steps", "12"], ["--skip-first", "5", "--active", "20"], out=out).profiled
    expected = (
        "0 of 1 windows completed: the job ran 12 steps, the schedule needs skip_first + (wait + warmup + active) "
        "x repeat = 5 + (0 + 0 + 20) x 1 = 25"
    )
    assert expected in result.stderr
    code, report = check_json(out)
    assert code == 1 and report["passed"] is False
    assert any(expected in problem for problem in texts(report["problems"]))
    (process,) = report["processes"]
    assert process["partial_traces"] == 1, "what was recorded before the end is still saved"


def test_job_without_optimizer_is_told_to_use_target(out):
    result = npuprof(["--output-dir", out, "--", sys.executable, TRAIN, "--mode", "none", "--steps", "4"])
    assert_ok(result)
    assert "no process saw a step" in result.stderr and "--target MOD:QUALNAME" in result.stderr
    assert "  1 process imported torch but never stepped" in result.stderr, "the only one: no 'other'"
    code, report = check_json(out)
    assert code == 1 and report["idle_processes"] == 1
    assert any("--target" in problem for problem in texts(report["problems"]))


def test_ranks_that_match_no_process_are_named(out):
    result = npuprof(
        ["--ranks", "5", "--output-dir", out, "--", sys.executable, TRAIN, "--steps", "4"], env=clean_env(RANK="0")
    )
    assert_ok(result)
    assert "--ranks 5 matched no process; the ranks that stepped were [0]" in result.stderr


def test_two_ranks_at_different_speeds_flag_the_slower(out):
    result = npuprof(["--output-dir", out, "--", sys.executable, script("two_speeds.py")])
    assert_ok(result)
    code, report = check_json(out)
    slow = [p for p in report["processes"] if p.get("slowest_rank")]
    assert [p["rank"] for p in slow] == [1], report
    assert any(f["kind"] == "slow_rank" and f["ranks"] == [1] for f in report["findings"]), report["findings"]
    assert code == 0 and report["passed"], "a slow rank is a finding about the job, not a failed collection"
    assert "<- slowest" in result.stderr


def test_missing_or_broken_trace_fails_check(out):
    assert_ok(npuprof(["--output-dir", out, "--", sys.executable, TRAIN, "--steps", "4"]))
    (record,) = status_records(out)
    trace = os.path.join(out, record["traces"][0])
    write_trace(trace, '{"traceEvents": [')
    code, report = check_json(out)
    assert code == 1
    assert any("not a readable Chrome trace" in problem for problem in texts(report["problems"]))
    write_trace(trace, {"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 0, "dur": 1}]})
    code, report = check_json(out)
    assert code == 1
    assert any("no ProfilerStep# events" in problem for problem in texts(report["problems"]))


def test_check_on_a_directory_that_is_not_there(tmp_path):
    result = npuprof(["--check", str(tmp_path / "nothing")])
    assert result.returncode == 2 and result.stderr.startswith("npuprof: --check")


def test_a_cuda_trace_counts_each_step_once(out):
    """With CUDA, torch's trace repeats each ProfilerStep# on the GPU's timeline (category
    gpu_user_annotation), as seen on an H200 with torch 2.11: a 2-step window is still 2 steps."""
    assert_ok(npuprof(["--skip-first", "2", "--active", "2", "--output-dir", out, "--", sys.executable, TRAIN]))
    (record,) = status_records(out)
    trace = os.path.join(out, record["traces"][0])
    data = read_trace(trace)
    steps = [e for e in data["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(steps) == 2
    data["traceEvents"] += [{**e, "cat": "gpu_user_annotation", "pid": 0, "tid": 7} for e in steps]
    write_trace(trace, data)
    code, report = check_json(out)
    assert code == 0 and report["passed"], report
    assert report["processes"][0]["profiler_steps"] == 2
