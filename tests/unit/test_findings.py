"""The findings' statistics on synthetic step times (in-process, standard library, microseconds).

Each case of a slow rank or a spike: alike ranks with noise give no finding, one rank 10 %, 30 % or 100 %
slower in every step is found, overlapping ranks and millisecond steps are not, a 10x step is a
spike, the tool's steps never are, and a spike beside the aftercare is undecidable unless
overwhelming.
"""

from __future__ import annotations

import random

import pytest

from npuprof_launch.common import findings, stepstats
from npuprof_launch.launcher import jobview


def ranks_of(count: int, steps: int, step_s: float, jitter: float, seed: int, slow: dict | None = None) -> dict:
    """``count`` ranks' durations of ``steps`` shared steps: ``step_s`` with relative ``jitter``
    (gaussian), rank r ``slow[r]`` times slower."""
    rng = random.Random(seed)
    slow = slow or {}
    return {
        rank: [step_s * slow.get(rank, 1.0) * max(0.05, 1 + rng.gauss(0, jitter)) for _ in range(steps)]
        for rank in range(count)
    }


def test_binomial_tail_is_the_exact_one_sided_probability():
    assert findings.binomial_tail(0, 5, 0.3) == 1.0
    assert findings.binomial_tail(10, 10, 0.5) == pytest.approx(2**-10)
    assert findings.binomial_tail(5, 6, 0.25) == pytest.approx(6 * 0.25**5 * 0.75 + 0.25**6)


@pytest.mark.parametrize("count", [2, 4, 8])
def test_alike_ranks_with_noise_give_no_finding_over_many_seeds(count):
    for seed in range(200):
        verdict = findings.slow_rank(ranks_of(count, 30, 0.020, 0.05, seed))
        assert not verdict["found"], (seed, verdict)
        assert verdict["reason"]


@pytest.mark.parametrize("factor", [1.10, 1.30, 2.00])
@pytest.mark.parametrize("count", [2, 4, 8])
def test_one_rank_slower_in_every_step_is_found_with_its_evidence(factor, count):
    verdict = findings.slow_rank(ranks_of(count, 30, 0.020, 0.02, seed=1, slow={count - 1: factor}))
    assert verdict["found"], verdict
    assert verdict["rank"] == count - 1
    assert verdict["steps"] == 30 and verdict["slowest_in"] >= 27 and verdict["ranks_compared"] == count
    assert verdict["ratio"] == pytest.approx(factor, rel=0.03)
    assert verdict["p_value"] < verdict["level"] == findings.LEVEL
    assert verdict["test"] == findings.SLOW_RANK_TEST
    assert f"above their median in {verdict['above_others_in']} of 30 steps" in verdict["evidence"]


def test_two_ranks_whose_step_times_overlap_give_none_and_say_so():
    # Rank 1 a little slower on average, but the two distributions overlap: slowest in about 60 % of steps.
    verdict = findings.slow_rank(ranks_of(2, 40, 0.020, 0.15, seed=3, slow={1: 1.06}))
    assert not verdict["found"]
    assert verdict["reason"].startswith("the ranks' step times overlap: rank 1")
    assert "above the others' median in" in verdict["reason"]
    assert "needs p < 0.001" in verdict["reason"]
    assert 0.001 <= verdict["p_value"] <= 1


def test_millisecond_steps_with_jitter_give_none_even_when_one_rank_is_consistently_a_little_slower():
    for seed in range(50):
        assert not findings.slow_rank(ranks_of(2, 40, 0.001, 0.3, seed))["found"]
    verdict = findings.slow_rank(ranks_of(2, 40, 0.0005, 0.02, seed=0, slow={1: 1.8}))
    assert not verdict["found"] and "less than 1.00 ms apart" in verdict["reason"], verdict
    assert verdict["p_value"] < findings.LEVEL, "the steps alone would have named it: the noise floor is why not"


def test_too_few_shared_steps_give_none_whatever_the_effect():
    verdict = findings.slow_rank(ranks_of(4, 4, 0.020, 0.02, seed=0, slow={2: 10.0}))
    assert not verdict["found"] and verdict["reason"].startswith("too few steps to compare: 4")


def test_two_ranks_need_eleven_steps_all_slower_four_ranks_seven():
    """The Bonferroni-corrected binomial: m x (1/m)^n < 0.001, times 2 for the two counts past two ranks."""
    assert not findings.slow_rank(ranks_of(2, 10, 0.020, 0.01, seed=0, slow={1: 2.0}))["found"]
    assert findings.slow_rank(ranks_of(2, 11, 0.020, 0.01, seed=0, slow={1: 2.0}))["found"]
    assert not findings.slow_rank(ranks_of(4, 6, 0.020, 0.01, seed=0, slow={1: 2.0}))["found"]
    assert findings.slow_rank(ranks_of(4, 7, 0.020, 0.01, seed=0, slow={1: 2.0}))["found"]


def test_on_a_busy_machine_a_rank_above_the_others_median_in_most_steps_is_found():
    """Another rank is now and then the slowest of a step (a stall of its own); the candidate stays
    above the others' median: the second count names it."""
    series = ranks_of(4, 30, 0.020, 0.02, seed=8, slow={1: 1.1})
    for step in range(0, 30, 2):
        series[(step // 2) % 3 + (1 if (step // 2) % 3 >= 1 else 0)][step] *= 1.5
    verdict = findings.slow_rank(series)
    assert verdict["found"] and verdict["rank"] == 1, verdict
    assert verdict["slowest_in"] <= 16 and verdict["above_others_in"] >= 27


def test_a_rank_that_waited_for_a_cpu_says_not_more_work_only_where_its_threads_time_says_so():
    """Beside two CPU hogs, of two ranks training alone, the one on 10 % more rows: steps 1.05x, 92 ms
    more waiting for a CPU in 31 steps, its thread 1.05x on a CPU: told "not more work" before."""
    verdict = {"rank": 1, "ratio": 1.05, "step_s": 0.0243, "others_step_s": 0.0231}
    told = {ratio: findings.slow_rank_waited(verdict, 0.3253, [0.2338], 31, ratio) for ratio in (None, 1.0, 1.046)}
    assert told[None].endswith("246% of its excess: it had less of the cores; no finding"), told[None]
    assert told[1.0].endswith("1.00x the others' time on a CPU: it had less of the cores, not more work; no finding")
    assert told[1.046].endswith(
        "ran 1.05x the others' time on a CPU, under the margin that names a rank's own work: more work or less of "
        "the cores, these steps cannot tell; no finding"
    ), told[1.046]
    # Its wait for a CPU short of half its excess: the step times' verdict stands.
    assert findings.slow_rank_waited(verdict, 0.25, [0.2338], 31, 1.0) is None


def test_one_stall_cannot_make_a_rank_slow():
    series = ranks_of(4, 30, 0.020, 0.05, seed=2)
    series[3][12] = 0.8
    assert not findings.slow_rank(series)["found"]


def test_a_rank_beyond_the_spread_of_alike_ranks_only():
    """Ranks 0-2 differ among themselves by 20 % (their own spread); rank 3 at 1.08x the median stays within it."""
    series = ranks_of(4, 30, 0.020, 0.005, seed=4, slow={0: 0.85, 2: 1.05, 3: 1.10})
    verdict = findings.slow_rank(series)
    assert not verdict["found"] and "spread" in verdict["reason"], verdict


def durations_with(slow: dict[int, float], steps: int = 40, typical: float = 0.020) -> list[float]:
    rng = random.Random(7)
    return [slow.get(step, typical * (1 + rng.gauss(0, 0.02))) for step in range(2, steps + 1)]


WINDOW = {"first_step": 9, "last_step": 10, "complete": True, "traces": [], "aftercare_steps": [12, 16]}


def test_a_10x_step_is_a_spike_at_that_step_and_inside_the_tools_steps_it_is_none():
    stats = stepstats.rank_stats(durations_with({25: 0.200}), stepstats.ToolSteps([WINDOW], steps=40))
    assert [spike["step"] for spike in stats["spikes"]] == [25]
    assert stats["spikes"][0]["vs_median"] == pytest.approx(10, rel=0.05)
    for inside in (3, 8, 9, 10, 11):  # warm-up, the step before the window, the window, the stop
        stats = stepstats.rank_stats(durations_with({inside: 0.200}), stepstats.ToolSteps([WINDOW], steps=40))
        assert stats["spikes"] == [], inside


def job_of(slow: dict[int, float]) -> dict:
    durations = durations_with(slow)
    tool = stepstats.ToolSteps([WINDOW], steps=40)
    process = {"rank": 0, "steps": 40, "step_stats": stepstats.rank_stats(durations, tool)}
    return jobview.summarize([process], steps_of=lambda p: jobview.Steps(2, durations, tool))


def test_a_spike_beside_the_aftercare_is_undecidable_unless_overwhelming():
    job = job_of({14: 0.200, 13: 0.070})
    assert job["spikes"] == []
    assert [spike["step"] for spike in job["undecidable_spikes"]] == [14, 13]
    verdict, text = findings.spike_beside_aftercare(0.180, 0.020)
    assert not verdict and "cannot tell" in text
    job = job_of({14: 1.500, 13: 0.070})
    assert [(spike["step"], spike["beside_aftercare"]) for spike in job["spikes"]] == [(14, True)]
    assert job["spikes"][0]["evidence"].endswith("so the spike is the job's own")
    assert [spike["step"] for spike in job["undecidable_spikes"]] == [13]
    assert not findings.spike_beside_aftercare(0.5, 0.2)[0], "past the floor, within 5x the cost on the other steps"
    assert not findings.spike_beside_aftercare(0.15, None)[0], "the aftercare touched no other step: the floor"


def test_the_aftercare_of_a_window_saved_at_the_process_s_end_ran_beside_no_step():
    """Its aftercare starts after the last step (``[steps + 1, steps]``): no range of steps 3-2."""
    saved_at_end = {"first_step": 1, "last_step": 2, "complete": False, "traces": [], "aftercare_steps": [3, 2]}
    assert stepstats.ToolSteps([saved_at_end], steps=2).aftercare_spans() == []
    assert stepstats.ToolSteps([WINDOW], steps=40).aftercare_spans() == [[12, 16]]


def test_the_tools_steps_are_steps_the_process_ran():
    """A window from step 1 to the process's last step: its tool's steps are 1 to the last, not
    0 to one after it (the summary once said "steps 0-3" of a 2-step process)."""
    whole = {"first_step": 1, "last_step": 2, "complete": False, "traces": []}
    assert stepstats.ToolSteps([whole], steps=2).spans() == [[1, 2]]
    assert stepstats.ToolSteps([whole], steps=9).spans() == [[1, 3]]
    assert stepstats.ToolSteps([{**whole, "first_step": 5, "last_step": 6}], steps=9, warmup=1).spans() == [[3, 7]]


def test_at_one_step_a_rank_s_overwhelming_spike_is_named_and_another_rank_s_small_one_stays_undecidable():
    tool = stepstats.ToolSteps([WINDOW], steps=40)
    rows = []
    for rank, slow in ((1, {14: 0.400}), (3, {14: 0.090})):
        durations = durations_with(slow)
        rows.append({"rank": rank, "steps": 40, "step_stats": stepstats.rank_stats(durations, tool)})
    job = jobview.summarize(rows)
    assert [(spike["step"], spike["ranks"]) for spike in job["spikes"]] == [(14, [1])]
    assert [(spike["step"], spike["ranks"]) for spike in job["undecidable_spikes"]] == [(14, [3])]


def test_a_rank_slowest_in_nearly_every_one_of_few_steps_is_told_as_too_few_steps_not_as_overlap():
    """The straggler example's old 12 steps left 6 to compare: rank 2 slowest in 5 (a stall on rank 1 in the sixth)."""
    series = ranks_of(4, 6, 0.001, 0.02, seed=0, slow={2: 30.0})
    series[1][0] = 0.4
    verdict = findings.slow_rank(series)
    assert not verdict["found"] and verdict["slowest_in"] == 5
    assert (
        verdict["reason"].startswith("too few steps to tell: rank 2 (") and "at least 7 such steps" in verdict["reason"]
    )


def test_in_lockstep_a_rank_that_waited_for_ranks_the_aftercare_held_is_undecidable_with_them():
    """F15, a healthy 8-rank DDP job beside CPU hogs: rank 5's last step took 106 ms, 1.6 ms of it
    waiting for a CPU, the rest in the step's collective for ranks whose window's aftercare (the
    export) still ran beside them, their spikes undecidable; rank 5's alone was named a spike."""
    done = {**WINDOW, "aftercare_steps": [12, 13]}  # rank 1's export was over by step 14

    def rows(step_s: float) -> list[dict]:
        tools = (stepstats.ToolSteps([WINDOW], steps=40), stepstats.ToolSteps([done], steps=40))
        stats = [stepstats.rank_stats(durations_with({14: s}), tool) for s, tool in zip((0.2, step_s), tools)]
        return [{"rank": rank, "steps": 40, "step_stats": one} for rank, one in enumerate(stats)]

    job = jobview.summarize(rows(0.150))
    assert job["spikes"] == [] and [(s["step"], s["ranks"]) for s in job["undecidable_spikes"]] == [(14, [0, 1])]
    longer = jobview.summarize(rows(0.900))["spikes"]
    assert [(s["step"], s["ranks"]) for s in longer] == [(14, [1])], "longer than theirs: its own"
