"""heldback.judge: a rank whose thread waits for a CPU in step after step, the others' not, named
with its evidence where the job pays for it; alike ranks of a busy machine, a rank with more work
and a rank whose waits cost nothing are not."""

from __future__ import annotations

import random

from npuprof_launch.common import stepstats
from npuprof_launch.launcher import heldback, jobview

STEPS = range(5, 30)


def row(rank: int, waits: list[float], ran: float = 0.007, collective_s: float | None = None, median_s=0.037) -> dict:
    """A process row as the report holds it: per-step readings past warm-up, one window at 6-8."""
    readings = {"ran": [[s, ran] for s in STEPS], "waited": [[s, w] for s, w in zip(STEPS, waits)]}
    window = {"first_step": 6, "last_step": 8, "complete": True, "traces": []}
    process = {"rank": rank, "windows": [window], "cpu_wait": readings, "step_stats": {"median_s": median_s}}
    if collective_s is not None:
        process.update(collective_s=collective_s, window_s=0.12, window_label="steps 6-8")
    return process


def test_a_rank_whose_core_is_shared_is_named_with_what_the_others_waited():
    """The pinned case of the module's docstring: rank 1 waits 8 ms a step, rank 0 under a ms."""
    noise = random.Random(1)
    rank0 = row(0, [noise.uniform(0, 0.001) for _ in STEPS], collective_s=0.037)
    rank1 = row(1, [noise.uniform(0.006, 0.01) for _ in STEPS], ran=0.006, collective_s=0.0093)
    held = heldback.judge([rank0, rank1], 0.037, lockstep=True)
    assert held is not None and held["rank"] == 1 and held["rule"] == heldback.RULE, held
    assert held["longest_in"] == held["steps"] == 23, "warm-up and the tool's steps beside the window left out"
    assert held["p_value"] < held["level"] and held["ran_ratio"] == 0.857 and "(not more work)" in held["evidence"]
    assert (
        "in lockstep the others wait for it: in steps 6-8 it spent 9.3 ms in collectives against 37 ms"
        in (held["evidence"])
    )
    assert "on rank 0" in held["evidence"] and "another process shares its cores" in held["evidence"]
    # The job pays nothing: it did not spend less time in collectives than the others.
    assert heldback.judge([rank0, dict(rank1, collective_s=0.04)], 0.037, lockstep=True) is None
    # More work: its thread ran 2x the other's and waited 3x as long, about in proportion (cputime's to name).
    base = dict(rank0, cpu_wait=dict(rank0["cpu_wait"], waited=[[s, 0.003] for s in STEPS]))
    busier = dict(rank1, cpu_wait={"ran": [[s, 0.014] for s in STEPS], "waited": [[s, 0.009] for s in STEPS]})
    assert heldback.judge([base, busier], 0.037, lockstep=True) is None
    # Its core shared: 1.39x the other's time on a CPU (its cache and the switches cost it) and 150x the waits.
    thrashed = dict(rank1, cpu_wait=dict(rank1["cpu_wait"], ran=[[s, 0.00973] for s in STEPS]))
    held = heldback.judge([rank0, thrashed], 0.037, lockstep=True)
    assert held["ran_ratio"] == 1.39 and "more work would wait about 1.39x as long, not" in held["evidence"], held
    # Waits too small for the job's step: 8 ms of a 100 ms step is under a tenth of it.
    assert heldback.judge([rank0, rank1], 0.1, lockstep=True) is None


def test_alike_ranks_of_a_busy_machine_are_not_named():
    """Beside CPU hogs every rank waits, in turn: no rank the longest in more steps than chance."""
    noise = random.Random(7)
    for trial in range(20):
        rows = [row(r, [noise.expovariate(1 / 0.008) for _ in STEPS], collective_s=0.03) for r in range(4)]
        assert heldback.judge(rows, 0.037, lockstep=True) is None, trial


def test_out_of_lockstep_its_longer_median_step_is_the_cost():
    noise = random.Random(3)
    rank0 = row(0, [noise.uniform(0, 0.001) for _ in STEPS], median_s=0.026)
    rank1 = row(1, [noise.uniform(0.004, 0.012) for _ in STEPS], ran=0.006, median_s=0.034)
    held = heldback.judge([rank0, rank1], 0.03, lockstep=False)
    assert held is not None and held["rank"] == 1
    assert "its median step took 34.0 ms against 26.0 ms on the others" in held["evidence"]
    assert heldback.judge([rank0, dict(rank1, step_stats={"median_s": 0.0262})], 0.03, lockstep=False) is None


def test_the_job_view_names_it_as_its_own_finding_and_no_rank_stands_out_goes():
    noise = random.Random(5)
    rank0 = row(0, [noise.uniform(0, 0.001) for _ in STEPS], collective_s=0.037)
    rank1 = row(1, [noise.uniform(0.006, 0.01) for _ in STEPS], ran=0.006, collective_s=0.0093)
    for process in (rank0, rank1):
        process.update(steps=30, step_stats=stepstats.rank_stats([0.037] * 25))
    job = jobview.summarize([rank0, rank1])
    assert job["slow_ranks"] == [] and [held["rank"] for held in job["held_back"]] == [1], job
    assert "no_rank_stands_out" not in job


def test_a_rank_named_by_its_time_on_a_cpu_that_the_machine_holds_back_is_told_held_back():
    """Sharing a core costs a thread CPU time too: under a test suite's load, a DDP rank bound to a
    core with three spinning processes ran 1.21x its peer's time and waited 6.6x as long, and was
    named "the one the others wait for" by its time on a CPU. Where the held-back rule names the
    same rank, it is told held back; a rank named by its work (waits in proportion) stays."""
    noise = random.Random(3)
    rank0 = row(0, [noise.uniform(0.003, 0.005) for _ in STEPS], ran=0.0066, collective_s=0.122)
    rank1 = row(1, [noise.uniform(0.025, 0.030) for _ in STEPS], ran=0.0080, collective_s=0.031)
    named = [{"rank": 1, "method": "collectives", "rule": "cpu_time"}]
    found, back = heldback.weigh(named, [rank0, rank1], 0.06, lockstep=False)
    assert found == [] and back is not None and back["rank"] == 1 and back["lockstep"], back
    # Named by another rule (the rounds of collectives): left as it is, no held-back rank looked for.
    rounds = [dict(named[0], rule="per_collective")]
    assert heldback.weigh(rounds, [rank0, rank1], 0.06, lockstep=False) == (rounds, None)
    # More work, its waits in proportion: named by its time on a CPU, as before.
    busier = row(1, [noise.uniform(0.005, 0.008) for _ in STEPS], ran=0.0120, collective_s=0.031)
    assert heldback.weigh(named, [rank0, busier], 0.06, lockstep=False) == (named, None)
