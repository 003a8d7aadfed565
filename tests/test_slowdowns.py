"""Slowdowns in the job's answer, from real jobs under the real launcher: one process and a 2-rank
gloo job under torchrun whose steps slow 3x from step 30 on (20 ms to 60 ms of sleep: clear of a
loaded machine's jitter), and a healthy run that has none. The step found may be a step or two
off where a loaded machine stretched one step beside the change."""

from __future__ import annotations

import sys

from answers import check_json
from jobs import PYTHON, assert_ok, npuprof, script
from outputs import read_trace, status_records, torch_traces

SLOWING = script("slowing_job.py")
SLOW = ["--step-ms", "20", "--from-step", "30", "--factor", "3"]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]


def slowdowns_of(out: str, job: list[str]) -> tuple[list[dict], dict]:
    result = npuprof(["--output-dir", out, "--", *job])
    assert_ok(result)
    _, report = check_json(out)
    return report["job"]["slowdowns"], report


def test_one_process_slowing_from_a_step_is_found_at_that_step(out):
    found, report = slowdowns_of(out, [PYTHON, SLOWING, *SLOW])
    (slowdown,) = found
    assert 28 <= slowdown["step"] <= 32 and slowdown["to_end"], slowdown
    assert 1.8 <= slowdown["ratio"] <= 3.5, slowdown
    (evidence,) = slowdown["evidence"]
    assert evidence["p"] < 1e-4 and evidence["steps_before"] >= 20 and evidence["steps_after"] >= 20
    assert any(f["kind"] == "slowdown" and f["steps"] == [slowdown["step"]] for f in report["findings"])


def test_one_rank_slowing_in_lockstep_slows_every_rank(out):
    found, _ = slowdowns_of(out, [*TORCHRUN, SLOWING, *SLOW, "--rank", "1"])
    (slowdown,) = found
    assert slowdown["every_rank"] and slowdown["ranks"] == [0, 1] and 28 <= slowdown["step"] <= 32, slowdown


def test_a_healthy_run_has_no_slowdown(out):
    found, report = slowdowns_of(out, [PYTHON, SLOWING, "--step-ms", "20"])
    assert found == [] and not any(finding["kind"] == "slowdown" for finding in report["findings"])


def test_a_slowdown_on_slowdown_did_not_see_is_said_and_gets_a_run_on_its_steps(out):
    """A slowdown after a short job's last checkpoint (steps 1, 2, 4, ... 32, 64) reaches the
    launcher only at the end: --on-slowdown asked for nothing, and the answer says why and suggests
    the run that profiles the slow steps."""
    job = [PYTHON, SLOWING, "--steps", "60", "--step-ms", "10", "--from-step", "40", "--factor", "3"]
    result = npuprof(["--on-slowdown", "1", "--skip-first", "5", "--active", "2", "--output-dir", out, "--", *job])
    assert_ok(result)
    code, report = check_json(out)
    (slowdown,) = [one for one in report["findings"] if one["kind"] == "slowdown"]
    (unseen,) = [one for one in report["notes"] if one["kind"] == "slowdown_unseen"]
    assert unseen["steps"] == slowdown["steps"] and 38 <= slowdown["steps"][0] <= 42, slowdown
    step = slowdown["steps"][0]
    assert f"npuprof-run --skip-first {step} --active 2 " in report["job"]["suggestions"][-1]


def test_on_slowdown_asks_every_rank_for_a_window_in_the_slow_regime(out):
    """--on-slowdown: the launcher finds the slowdown while the job runs and triggers one aligned
    window; every rank's trace holds steps after the slowdown began, and the record says why."""
    job = [*TORCHRUN, SLOWING, "--steps", "400", "--step-ms", "20", "--from-step", "60", "--factor", "3"]
    result = npuprof(["--on-slowdown", "1", "--active", "2", "--output-dir", out, "--", *job])
    assert_ok(result)
    assert "every process was asked for a window of 2 steps at step" in result.stderr, result.stderr
    records = status_records(out)
    assert len(records) == 2
    asked = [[w for w in r["windows"] if "reason" in w] for r in records]
    assert all(len(windows) == 1 for windows in asked), asked
    steps = {(w[0]["first_step"], w[0]["last_step"]) for w in asked}
    assert len(steps) == 1, f"every rank records the same steps: {steps}"
    ((first, last),) = steps
    assert first > 60 and last == first + 1 and all(w[0]["complete"] for w in asked)
    assert asked[0][0]["reason"].startswith("a slowdown from step ")
    labels = set()
    for path in torch_traces(out):
        events = read_trace(path)["traceEvents"]
        labels |= {e["name"] for e in events if str(e.get("name", "")).startswith("iteration#")}
    assert {f"iteration#{first}", f"iteration#{last}"} <= labels, sorted(labels)
