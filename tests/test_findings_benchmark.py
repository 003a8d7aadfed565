"""The findings benchmark (benchmarks/findings.py) keeps running, and its two quick runs hold.

Real runs: npuprof-run around torchrun (gloo) around benchmarks/findings_job.py. Two alike ranks
give "no rank stands out" with its reason; one rank sleeping a whole step more in every step is
named, with the evidence that named it (30 % more was within what a loaded machine did to the
steps of a 3-worker suite, now and then). Spikes are not asserted here: a busy machine may stall a step
of a healthy run for real (the benchmark counts them).
"""

from __future__ import annotations

import json
import os

from jobs import ROOT, clean_env, python


def test_quick_findings_benchmark_names_the_slow_rank_and_no_rank_among_alike_ones(tmp_path):
    verdicts = tmp_path / "verdicts.json"
    result = python(
        [os.path.join(ROOT, "benchmarks", "findings.py"), "--quick", "--json", str(verdicts)],
        cwd=str(tmp_path),
        env=clean_env(),
        timeout=900,
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "false findings: " in result.stdout and "detection: " in result.stdout, result.stdout
    runs = {run["case"]["name"]: run for run in json.loads(verdicts.read_text())}
    alike = runs["healthy-2r-alone-5ms"]["job"]
    assert alike["ranks"] == 2 and alike["slow_ranks"] == [], alike
    assert alike["slow_rank_verdict"]["found"] is False and alike["no_rank_stands_out"], alike
    slow = runs["slow-2r-alone-1"]["job"]
    assert [found["rank"] for found in slow["slow_ranks"]] == [1], slow
    (found,) = slow["slow_ranks"]
    assert found["method"] == "step_times" and found["p_value"] < found["level"]
    assert found["slowest_in"] >= 0.75 * found["steps"] and found["ratio"] > 1.5
