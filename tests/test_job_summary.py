"""The job's answer from whole-run step times and the window's traces.

A real torchrun job of 4 gloo ranks where rank 2 sleeps before every step and rank 1 once at
step 7: in lockstep the collectives name rank 2, and step 7 spikes on every rank; the suggested
command, run, records step 7. The same job with ranks that train alone: step times name both.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import sys

import pytest
from answers import check_json, slow_rank_evidence
from compare import profiled_against_bare, rank_lines
from jobs import ROOT, assert_ok, clean_env, npuprof, once
from outputs import status_records, windows

from npuprof_launch.common import tracecollectives
from npuprof_launch.launcher import stepwaits

JOB = os.path.join(ROOT, "examples", "stragglers.py")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "4"]


def env():
    environ = clean_env()
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        environ.pop(var, None)
    environ["OMP_NUM_THREADS"] = "1"
    return environ


#: Each mode's run is shared by the tests of its own xdist group, so the two run on two workers.
MODES = [pytest.param(mode, marks=pytest.mark.xdist_group(f"job_summary_{mode}")) for mode in ("lockstep", "alone")]


@pytest.fixture(params=MODES)
def straggler_run(request, tmp_path_factory):
    return once(("straggler_run", request.param), lambda: _straggler_run(request.param, tmp_path_factory))


def _straggler_run(mode: str, tmp_path_factory):
    out = str(tmp_path_factory.mktemp(mode) / "out")
    # Rank 2 sleeps 100 ms, not the example's 30: on a busy 2-core machine a starved rank arrives at
    # the all-reduce tens of ms late too, and in a 3-step window that noise can outweigh 30 ms a step
    # (then no rank stands out, rightly: findings.py); the stall stays 4x those steps or more.
    job = [*TORCHRUN, JOB, "--slow-s", "0.1", "--stall-s", "0.6", *(["--alone"] if mode == "alone" else [])]
    options = ["--skip-first", "2", "--active", "3", "--output-dir", out]
    if mode == "lockstep":  # the same job and hook as "alone": one bare run of the two is enough
        # The results unchanged, rank by rank.
        result = profiled_against_bare(job[1:], options, env=env(), compare=[("stdout", rank_lines)]).profiled
    else:
        result = npuprof([*options, "--", *job], env=env())
        assert_ok(result)
    return mode, out, result


def test_the_summary_names_the_slow_rank_and_the_spike(straggler_run):
    mode, out, result = straggler_run
    code, report = check_json(out)
    assert code == 0, report["problems"]
    job = report["job"]
    assert job["processes"] == 4 and job["ranks"] == 4 and job["hosts"] == 1 and job["steps"] == 20
    assert set(job["step_time_s"]) == {"median", "p90", "max"}
    assert job["slow_ranks"] and job["slow_ranks"][0]["rank"] == 2, slow_rank_evidence(report)
    assert job["slow_ranks"][0]["method"] == ("collectives" if mode == "lockstep" else "step_times")
    worst = job["spikes"][0]
    assert worst["step"] == 7, job["spikes"]
    assert worst["ranks"] == ([0, 1, 2, 3] if mode == "lockstep" else [1])
    assert worst["vs_median"] > 3
    if mode == "lockstep":
        assert "step 7: all 4 ranks" in result.stderr
        assert "<- the others wait for it" in result.stderr  # not "slowest": its step time is not the highest
    assert "rank 2 is" in result.stderr
    for process in report["processes"]:
        assert windows(process) == [{"first_step": 3, "last_step": 5, "complete": True, "traces": process["traces"]}]
        assert process["step_times"] and os.path.isfile(os.path.join(out, process["step_times"]))


def test_each_window_keeps_when_its_rank_reached_each_steps_collectives_from_the_steps_start(straggler_run):
    """What the reach rule (stepwaits.reached_last) reads: rank 2 sleeps 100 ms at each step's start,
    so it reaches the step's all-reduce that much later than the others from its own step's start,
    wherever each rank's step began."""
    mode, out, _ = straggler_run
    if mode != "lockstep":
        pytest.skip("ranks that train alone hold no collectives")
    reach = {}
    for path in glob.glob(os.path.join(out, "npuprof_status", "windows", "*.json")):
        with open(path) as handle:
            window = json.load(handle)
        rank = int(re.search(r"rank(\d+)_", os.path.basename(path)).group(1))
        reach[rank] = stepwaits.reach_by_step({"_collectives": tracecollectives.of(window["summary"]["collectives"])})
    assert sorted(reach) == [0, 1, 2, 3] and all(sorted(steps) == [3, 4, 5] for steps in reach.values()), reach
    for step in (3, 4, 5):
        assert reach[2][step] - max(reach[rank][step] for rank in (0, 1, 3)) > 0.08, reach


def test_the_suggested_command_records_the_spike(straggler_run, tmp_path):
    mode, out, result = straggler_run
    if mode != "lockstep":
        pytest.skip("one suggested run is enough")
    # The run for step 7's stall (a busy machine may stall another step for real; its run is another line).
    lines = result.stderr.splitlines()
    (suggestion,) = [line for line in lines if line.startswith("npuprof: next: npuprof-run --skip-first 6 --active 1 ")]
    args = shlex.split(suggestion.split("npuprof: next: npuprof-run ", 1)[1])
    # The run's own options are kept: its --output-dir here; the rerun writes elsewhere.
    assert args[: args.index("--")] == ["--skip-first", "6", "--active", "1", "--output-dir", out]
    again = str(tmp_path / "again")
    args[args.index("--output-dir") + 1] = again
    rerun = npuprof(args, env=env())
    assert_ok(rerun)
    for record in status_records(again):
        assert record["windows"][0]["first_step"] == 7 and record["windows"][0]["complete"]
    # Its answer is the spike's: one recorded step names no slow rank, but whom step 7 waited for.
    _, report = check_json(again)
    (once,) = report["job"]["waited_for"]
    assert once["rank"] == 1 and once["window"] == "step 7" and once["vs_median"] >= 3, once
    assert "step 7, profiled: the others waited for rank 1: it spent " in rerun.stderr, rerun.stderr


def test_the_processes_come_in_rank_order_and_the_agent_is_no_idle_process(straggler_run):
    _, out, result = straggler_run
    _, report = check_json(out)
    assert [p["rank"] for p in report["processes"]] == [0, 1, 2, 3]
    # torchrun's agent imports torch to start the ranks, never to step: counted apart, not told.
    assert report["launcher_processes"] == 1 and report["idle_processes"] == 0, report["launcher_processes"]
    assert "never stepped" not in result.stderr, result.stderr


def test_the_tools_own_steps_are_never_the_jobs_spikes(tmp_path):
    """Tried on a plain run: the step before the window (where the watch of the job's ranges and
    its TorchScript compile begin, 36x the median) came out as the job's worst spike, with a
    suggested run for it. The window's edges are left out; a spike while the window's aftercare
    ran beside the job says so."""
    out = str(tmp_path / "out")
    job = [sys.executable, os.path.join(ROOT, "tests", "scripts", "patterns.py"), "--steps", "30"]
    result = npuprof(["--skip-first", "8", "--active", "3", "--output-dir", out, "--", *job])
    assert_ok(result)
    (record,) = status_records(out)
    (window,) = record["windows"]
    first, last = window["aftercare_steps"]
    assert first == 12 and 12 <= last <= 30, window
    code, report = check_json(out)
    assert code == 0
    (process,) = report["processes"]
    assert not 8 <= process["step_stats"]["max_step"] <= 12
    for spike in report["job"]["spikes"]:
        assert not 8 <= spike["step"] <= 12, report["job"]["spikes"]
        assert spike.get("beside_aftercare", False) == (first <= spike["step"] <= last), spike
        if spike.get("beside_aftercare"):
            assert f"step {spike['step']}: 1 process" in result.stderr
            assert "while npuprof's aftercare of a window (compression, summary) ran beside the job" in result.stderr
    for suggestion in report["job"]["suggestions"]:
        assert not 8 <= int(suggestion.split("--skip-first ", 1)[1].split()[0]) + 1 <= 12, suggestion
    assert "step 8:" not in result.stderr


def test_a_stall_inside_a_long_window_is_told_against_the_windows_own_steps(tmp_path):
    """A window's steps are left out of the job's spikes (the profiler works in them): a stall inside
    a long window was told under --explain only, and by its window's time in collectives the rank
    that stalled was "the one the others wait for". Now the step is a spike of the window, against
    its own steps, with the rank the others waited for there, and no rank is named slow for it."""
    out = str(tmp_path / "out")
    stall = ["--slow-rank", "-1", "--stall-rank", "1", "--stall-step", "9", "--stall-s", "1.0", "--steps", "16"]
    job = [*TORCHRUN[:-1], "2", JOB, *stall]
    result = npuprof(["--skip-first", "3", "--active", "10", "--output-dir", out, "--", *job], env=env())
    assert_ok(result)
    code, report = check_json(out)
    assert code == 0, report["problems"]
    (spike,) = report["job"]["window_spikes"]
    assert (spike["step"], spike["ranks"], spike["window"], spike["waited_for"]) == (9, [0, 1], [4, 13], 1), spike
    assert spike["vs_median"] > 3 and spike["waited_s"] > 0.5, spike
    (told,) = [item for item in report["findings"] if item["kind"] == "spike"]
    assert told["steps"] == [9] and told["evidence"]["window"] == [4, 13] and told["evidence"]["waited_for"] == 1
    assert "step 9: both ranks, " in result.stderr and "the median of its window's steps 5-13" in result.stderr
    assert "longer for rank 1 there" in result.stderr
    assert report["job"]["slow_ranks"] == [], slow_rank_evidence(report)
