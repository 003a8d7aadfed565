"""A job resumed from a checkpoint is numbered as the job numbers its steps.

tests/scripts/resume_job.py is a hand-written loop with Adam that saves a checkpoint after the
job's step 5 (model, optimizer state, its own ``global_step``); the runs here load it and make the
job's steps 6-10. Profiled with ``--skip-first 1 --active 2`` the window holds this process's
steps 2 and 3, the job's 7 and 8: the trace's ``ProfilerStep#`` and ``iteration#`` labels, the
record and ``--check`` say 7 and 8, and the job's results are bit-identical to the bare resumed
run. ``--from-step`` places windows by the job's steps, and says when one had passed before the
process began. The Hugging Face Trainer's resume is in test_frameworks.py; the pure logic in
tests/unit/test_job_numbering.py.
"""

from __future__ import annotations

import pytest
from answers import check_json, texts
from compare import profiled_against_bare
from jobs import assert_ok, npuprof, python, script
from outputs import status_records, step_spans, torch_traces

JOB = script("resume_job.py")


@pytest.fixture(scope="module")
def resumed(tmp_path_factory) -> dict:
    """One checkpoint after the job's step 5, the bare resumed run, and two profiled resumed runs:
    ``--skip-first 1 --active 2``, and ``--from-step 4 --wait 3 --active 2 --repeat 2`` (windows at
    the job's steps 4-5, passed, and 9-10)."""
    root = tmp_path_factory.mktemp("resumed")
    checkpoint = str(root / "ckpt.pt")
    assert_ok(python([JOB, "--save", checkpoint, "--steps", "5"]))
    resume = [JOB, "--load", checkpoint, "--steps", "10"]
    runs = {}
    for name, schedule in (
        ("skip", ["--skip-first", "1", "--active", "2"]),
        ("from", ["--from-step", "4", "--wait", "3", "--active", "2", "--repeat", "2"]),
    ):
        runs[name] = profiled_against_bare(resume, schedule, out=str(root / name), compare=())
    return runs


def checksum(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("checksum "))


@pytest.mark.xdist_group("resumed")
def test_a_resumed_runs_window_is_labelled_with_the_jobs_steps(resumed):
    runs = resumed["skip"]
    result, out = runs.profiled, runs.out
    assert "job steps 6-10" in result.stdout
    runs.assert_same(("stdout", checksum))  # the load is the job's, untouched
    (trace,) = torch_traces(out)
    assert step_spans(trace) == ["ProfilerStep#7", "iteration#7", "ProfilerStep#8", "iteration#8"]
    (record,) = status_records(out)
    assert record["steps"] == 5, "the process counts its own 5 steps"
    assert (record["step_offset"], record["numbered_by"]) == (5, "optimizer_state")
    assert record["window_steps"] == [7, 8]
    code, report = check_json(out)
    assert code == 0 and report["passed"], report
    assert [(w["first_step"], w["last_step"]) for w in report["processes"][0]["windows"]] == [(7, 8)]
    check = npuprof(["--check", out])
    assert "this run began at the job's step 6" in check.stdout and "windows: steps 7-8" in check.stdout


@pytest.mark.xdist_group("resumed")
def test_from_step_places_windows_by_the_jobs_steps_and_tells_one_already_passed(resumed):
    runs = resumed["from"]
    out = runs.out
    runs.assert_same(("stdout", checksum))
    (trace,) = torch_traces(out)
    assert step_spans(trace) == ["ProfilerStep#9", "iteration#9", "ProfilerStep#10", "iteration#10"]
    (record,) = status_records(out)
    assert record["window_steps"] == [9, 10]
    (passed,) = [o for o in record["outcomes"] if o["kind"] == "from_step_passed"]
    assert (passed["first"], passed["last"], passed["began"]) == (4, 5, 6)
    code, report = check_json(out)
    assert code != 0 and not report["passed"], "a window asked for and never recorded fails the check"
    (problem,) = texts(report["problems"])
    assert "1 of 2 windows completed" in problem and "had passed before this process's first step" in problem
    assert "the job's step 6" in problem
