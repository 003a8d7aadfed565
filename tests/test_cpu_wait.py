"""A step whose thread got no CPU is no finding of the job's, and says why; a sleep in the same run
stays one. The real job (tests/scripts/cpu_contention.py) pins itself to one core, has sixteen
spinning processes share it in step 12 and sleeps 0.5 s in step 30; the kernel's run-queue counter,
read by the hook every tenth of a second of steps, is the evidence (inprocess/cpuwait.py)."""

from __future__ import annotations

import sys

import pytest
from answers import check_json
from compare import profiled_against_bare
from jobs import npuprof, script
from suggestions import suggestions

from npuprof_launch.common import findings
from npuprof_launch.inprocess import cpuwait

JOB = [script("cpu_contention.py"), "--steps", "60", "--contended-step", "12", "--sleep-step", "30"]


@pytest.mark.skipif(cpuwait.read_ns() is None, reason="this kernel keeps no run-queue counter per thread")
def test_a_step_spent_waiting_for_a_cpu_is_told_apart_and_a_sleep_is_the_jobs_spike(tmp_path):
    out = str(tmp_path / "out")
    result = profiled_against_bare(JOB, ["--skip-first", "45", "--active", "2"], out=out).profiled
    code, report = check_json(out)
    assert code == 0, report["problems"]
    job = report["job"]
    (process,) = report["processes"]
    assert process["cpu_wait"]["covered"], "the hook read the thread's run-queue wait"
    named = {spike["step"]: spike for spike in job["spikes"]}
    assert 30 in named, job
    assert "waiting for a CPU, still" in named[30]["cpu_evidence"], "the sleep's evidence: its wait was small"
    told = {spike["step"]: spike for spike in job["undecidable_spikes"] if spike.get("cpu_wait")}
    assert 12 in told and 12 not in named, job
    assert "waiting for a CPU; under the spike bar" in told[12]["undecidable"]
    assert any(line.startswith("step") and "12" in line for line in job["cpu_wait_lines"]), job["cpu_wait_lines"]
    waits = [note for note in report["notes"] if note["kind"] == "cpu_wait"]
    assert any(12 in note["steps"] and note["evidence"]["spikes"] for note in waits), report["notes"]
    assert any(line.startswith("  ") and "told apart" in line for line in result.stderr.splitlines()), result.stderr
    explained = npuprof(["--check", out, "--explain"]).stdout
    assert f"  - {findings.CPU_WAIT_MEANING}: step" in explained, explained
    # On a loaded machine other steps may wait for a CPU too (told apart as well) or spike on their own.
    worst = max(job["spikes"], key=lambda spike: spike["vs_median"])["step"]
    assert suggestions(result.stderr) == [
        f"npuprof-run --skip-first {worst - 1} --active 1 --output-dir {out} -- {sys.executable} {' '.join(JOB)}"
    ], "the next run profiles the job's worst spike, never the step that waited for a CPU"
