"""In lockstep, from a short window: the rank every other rank waited for in each of its steps (in-process, no torch).

The numbers are those of a run of the findings benchmark beside two CPU hogs (docs/benchmarks.md,
F19): ``slow-4r-ddp-0.3-hog``, a 4-rank DDP job whose rank 2 sleeps 30 % of a 50 ms step more than
the others, recorded in steps 35-37 (here 3-5); and its healthy counterparts' least lead, -0.015 of
a step at the most.
"""

from __future__ import annotations

import pytest

from npuprof_launch.common import stepstats
from npuprof_launch.launcher import jobview, stepwaits

#: Each rank's waits in the window's collectives by step (s), its wait for a CPU by step (s), its
#: window (s). The job's median step: 72.4 ms.
SLEEPER = {
    0: ((0.02485, 0.01658, 0.01888), (0.013085, 0.000475, 0.004533), 0.2286),
    1: ((0.02118, 0.01558, 0.01741), (0.009538, 0.002592, 0.001457), 0.2289),
    2: ((0.00296, 0.00540, 0.00279), (0.015527, 0.000405, 0.001984), 0.2497),
    3: ((0.03741, 0.01558, 0.03416), (0.000572, 0.000760, 0.000130), 0.2512),
}
STEP_S = 0.0724


def row(rank: int, waits, cpu, window_s: float, steps: int = 3) -> dict:
    """A report row whose window recorded ``steps`` steps from step 3, one collective a step."""
    window = {"first_step": 3, "last_step": 2 + steps, "complete": True, "traces": []}
    durations = [STEP_S + step * 1e-7 for step in range(2, 41)]
    collectives = [(f"all_reduce#{i}", "0-3", 3 + i, wait, 0.05) for i, wait in enumerate(waits)]
    return {
        "rank": rank,
        "steps": 40,
        "windows": [window],
        "collective_s": sum(waits),
        "window_s": window_s,
        "step_stats": stepstats.rank_stats(durations),
        "cpu_wait": {"waited": [[3 + i, wait] for i, wait in enumerate(cpu)]},
        "_collectives": collectives,
    }


def rows(changed: dict | None = None) -> list[dict]:
    return [row(rank, *(changed or {}).get(rank, SLEEPER[rank])) for rank in SLEEPER]


def test_a_rank_every_other_waited_for_in_each_step_past_its_own_cpu_wait_is_named():
    process, *others = sorted(rows(), key=lambda one: one["collective_s"])
    verdict = stepwaits.every_step(process, others, STEP_S)
    assert process["rank"] == 2 and verdict is not None and verdict["named"], verdict
    assert verdict["steps"] == 3 and verdict["behind"] == 0
    # Step 4: the least other waited 15.58 ms against its 5.40 ms. Step 3: 21.18 ms against 2.96 ms,
    # and it waited 15.53 ms for a CPU, 6.0 ms past the others' median (9.54 ms): the machine's doing.
    assert verdict["least_s"] == pytest.approx(0.01558 - 0.00540)
    assert verdict["most_s"] == pytest.approx(0.01741 - 0.00279 - (0.001984 - 0.001457))
    assert verdict["least_s"] < 0.02118 - 0.00296 - (0.015527 - 0.009538) < verdict["most_s"]
    assert verdict["needed_s"] == pytest.approx(0.1 * STEP_S)


def test_the_summary_names_it_and_says_the_steps_are_its_evidence():
    job = jobview.summarize(rows())
    (slow,) = job["slow_ranks"]
    assert slow["rank"] == 2 and slow["rule"] == "every_step" and slow["steps"] == 3
    assert slow["lead_least_s"] == pytest.approx(0.01558 - 0.00540)
    assert slow["lead_needed_s"] == pytest.approx(0.1 * STEP_S, rel=1e-3)
    assert slow["evidence"].endswith(
        "; in each of its 3 recorded steps every other rank waited longer in collectives than it, by "
        "10.2-14.1 ms (0.14-0.19 of the job's 72.4 ms median step) past its own wait for a CPU"
    ), slow["evidence"]
    # Summed over the window the others waited 15.5 ms a recorded step longer: under the bar of a
    # third of a step that alone names a rank by its total time in collectives.
    assert (sum(SLEEPER[0][0]) + sum(SLEEPER[1][0])) / 2 / 3 - sum(SLEEPER[2][0]) / 3 < 0.3 * STEP_S


def test_a_step_in_which_another_rank_waited_as_little_names_no_one_and_says_which():
    """Alike ranks take turns: healthy windows beside the same hogs were passed in 1 to 3 of 3 steps."""
    waits, cpu, window_s = SLEEPER[1]
    job = jobview.summarize(rows({1: ((waits[0] + 0.0055, 0.0050, waits[2] + 0.0055), cpu, window_s)}))
    assert job["slow_ranks"] == []
    assert (
        "step by step, another rank waited no longer than it in 1 of its 3 recorded steps, once its own wait "
        "for a CPU was taken off;" in job["no_rank_stands_out"]
    ), job["no_rank_stands_out"]


def test_its_own_wait_for_a_cpu_that_covers_its_lead_names_no_one():
    waits, cpu, window_s = SLEEPER[2]
    job = jobview.summarize(rows({2: (waits, (cpu[0], 0.0145, cpu[2]), window_s)}))
    assert (
        job["slow_ranks"] == [] and "another rank waited no longer than it in 1 of its 3" in job["no_rank_stands_out"]
    )
    # A lead above nothing but below a tenth of a step says what would name it.
    job = jobview.summarize(rows({2: (waits, (cpu[0], 0.0050, cpu[2]), window_s)}))
    assert job["slow_ranks"] == []
    assert (
        "16.4 ms a recorded step longer, under 0.3 of the job's 72.4 ms median step (the order in which alike "
        "ranks reach a collective moves their waits that much); step by step, every other rank waited longer "
        "than it in each of its 3 recorded steps, by 5.9 ms at the least past its own wait for a CPU, 7.2 ms "
        "needed;" in job["no_rank_stands_out"]
    ), job["no_rank_stands_out"]


@pytest.mark.parametrize(
    ("ranks", "steps", "judged"), [(2, 3, False), (2, 5, True), (3, 3, False), (3, 4, True), (4, 3, True), (8, 3, True)]
)
def test_only_where_one_of_alike_ranks_is_the_least_in_every_step_one_time_in_16_at_most(ranks, steps, judged):
    """Two ranks take turns by chance as often as not: the least in each of 3 steps one time in 4."""
    waits = [0.030] * steps
    made = [row(rank, [0.002] * steps if rank == 0 else waits, [0.0] * steps, 0.25, steps) for rank in range(ranks)]
    verdict = stepwaits.every_step(made[0], made[1:], STEP_S)
    assert (verdict is not None) is judged, verdict
    assert verdict is None or verdict["named"]


def test_collectives_that_overlap_the_step_or_a_cpu_wait_not_read_judge_nothing():
    """DDP's buckets reduced while backward computes: a healthy 2-rank job's waits summed to 107-148 ms
    a step of 33 ms (F19), and the rank that reached them late spent least in them in every step."""
    process, *others = sorted(rows(), key=lambda one: one["collective_s"])
    overlapped = [dict(one, window_s=0.040) for one in others]
    assert stepwaits.every_step(process, overlapped, STEP_S) is None
    unread = dict(process, cpu_wait=None)
    assert stepwaits.every_step(unread, others, STEP_S) is None


#: Another run of the same job (F20, steps 35-37): each rank's wait in the step's collective (s),
#: when it reached it from the step's start (s), its wait for a CPU by step (s), its window (s).
#: Rank 0 began step 35 13 ms after rank 2, reached the collective as late, and waited 3.2 ms
#: against rank 2's 3.8 ms: by waits another rank passed it in one step.
REACHED = {
    0: ((0.00321, 0.01620, 0.01515), (0.05581, 0.05176, 0.05181), (0.003331, 0.0, 0.005463), 0.2088),
    1: ((0.01027, 0.01363, 0.01417), (0.05845, 0.05221, 0.05388), (0.00638, 0.000627, 0.006538), 0.2264),
    2: ((0.00381, 0.00126, 0.00407), (0.06780, 0.06691, 0.06671), (0.000564, 0.000607, 0.000876), 0.2204),
    3: ((0.01351, 0.01680, 0.01521), (0.05279, 0.05155, 0.05173), (0.000444, 0.000391, 0.000308), 0.2047),
}
REACHED_STEP_S = 0.07118


def reached_rows(changed: dict | None = None, ranks=REACHED) -> list[dict]:
    made = []
    for rank, (waits, starts, cpu, window_s) in ranks.items():
        waits, starts, cpu, window_s = (changed or {}).get(rank, (waits, starts, cpu, window_s))
        one = row(rank, waits, cpu, window_s)
        one["step_stats"] = stepstats.rank_stats([REACHED_STEP_S + step * 1e-7 for step in range(2, 41)])
        one["_collectives"] = [(f"all_reduce#{i}", "0-3", 3 + i, w, s) for i, (w, s) in enumerate(zip(waits, starts))]
        one["_on_cpu"] = True  # gloo's
        made.append(one)
    return made


def test_the_rank_that_reached_each_steps_first_collective_last_is_named_where_its_waits_were_passed():
    made = reached_rows()
    process, *others = sorted(made, key=lambda one: one["collective_s"])
    assert process["rank"] == 2 and not stepwaits.every_step(process, others, REACHED_STEP_S)["named"]
    verdict = stepwaits.reached_last(made, REACHED_STEP_S)
    assert verdict["rank"] == 2 and verdict["named"] and verdict["behind"] == 0, verdict
    # Step 35: its wait for a CPU was below the others' median, and nothing of its lead is taken off;
    # step 36: 0.22 ms past it.
    assert verdict["least_s"] == pytest.approx(0.06780 - 0.05845)
    assert verdict["most_s"] == pytest.approx(0.06691 - 0.05221 - (0.000607 - 0.000391))
    assert verdict["needed_s"] == pytest.approx(0.05 * REACHED_STEP_S)
    job = jobview.summarize(made)
    (slow,) = job["slow_ranks"]
    assert slow["rank"] == 2 and slow["rule"] == "reached_last" and slow["steps"] == 3
    assert slow["lead_least_s"] == pytest.approx(0.06780 - 0.05845)
    assert slow["evidence"].endswith(
        "; in each of its 3 recorded steps it reached the step's first collective after every other rank, by "
        "9.3-14.5 ms (0.13-0.20 of the job's 71.2 ms median step) past its own wait for a CPU: the others wait for it"
    ), slow["evidence"]


def test_its_own_wait_for_a_cpu_that_covers_its_reach_names_no_one_and_says_which_step():
    waits, starts, cpu, window_s = REACHED[2]
    job = jobview.summarize(reached_rows({2: (waits, starts, (0.0140, cpu[1], cpu[2]), window_s)}))
    assert job["slow_ranks"] == []
    assert (
        "from each step's start, rank 2 reached the first collective latest over the window, but after every "
        "other rank in 2 of its 3 recorded steps only, once its own wait for a CPU was taken off"
        in job["no_rank_stands_out"]
    ), job["no_rank_stands_out"]
    # A lead below a twentieth of a step says what would name it.
    near = (starts[0], starts[1], 0.05388 + 0.0030)
    job = jobview.summarize(reached_rows({2: (waits, near, cpu, window_s)}))
    assert job["slow_ranks"] == []
    assert (
        "rank 2 reached the first collective last in each of its 3 recorded steps, by 3.0 ms at the least"
        in (job["no_rank_stands_out"])
    )


def test_alike_ranks_that_take_turns_reaching_the_collective_last_name_no_one():
    """Each rank the last in one step: the healthy windows' pattern (F17-F20)."""
    turns = {
        rank: (REACHED[rank][0], tuple(0.052 + 0.009 * (step == rank) for step in range(3)), REACHED[3][2], 0.21)
        for rank in range(4)
    }
    made = reached_rows(ranks=turns)
    verdict = stepwaits.reached_last(made, REACHED_STEP_S)
    assert verdict is not None and not verdict["named"] and verdict["behind"] >= 1, verdict
    assert not any(one["rank"] == verdict["rank"] for one in jobview.summarize(made)["slow_ranks"])


def test_reach_is_not_judged_from_two_ranks_three_steps_a_devices_kernels_or_no_collective_in_common():
    made = reached_rows()
    assert stepwaits.reached_last(made[1:3], REACHED_STEP_S) is None  # 1 in 4 by chance
    # NCCL's kernels, HCCL's operations: started when the device got to them.
    assert stepwaits.reached_last([dict(one, _on_cpu=False) for one in made], REACHED_STEP_S) is None
    # Rank 2's first collective of each step is its own (no other rank holds it): reach is read from
    # the first one every rank holds.
    alone = dict(made[2])
    alone["_collectives"] = [(f"gather@{s}", "0-3", s, 0.0, 0.001) for s in (3, 4, 5)] + made[2]["_collectives"]
    verdict = stepwaits.reached_last([made[0], made[1], alone, made[3]], REACHED_STEP_S)
    assert verdict["rank"] == 2 and verdict["least_s"] == pytest.approx(0.06780 - 0.05845)
    # Late at each step's first collective, it waited as long as another rank over the window: the
    # others' work moved after it, and no one was held back.
    level = [dict(one, collective_s=0.05) if one["rank"] in (0, 2) else one for one in made]
    verdict = stepwaits.reached_last(level, REACHED_STEP_S)
    assert verdict["rank"] == 2 and not verdict["named"] and not verdict["waited_least"], verdict
    assert (
        "but over the window it waited in collectives no less than another rank"
        in (jobview.summarize(level)["no_rank_stands_out"])
    )
    unread = [dict(one, cpu_wait=None) if one["rank"] == 2 else one for one in made]
    assert stepwaits.reached_last(unread, REACHED_STEP_S) is None
