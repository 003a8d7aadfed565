"""In lockstep, the rank the others wait for, told by its stepping thread's time on a CPU
(launcher/cputime.py, and lockstep.py where the rounds of collectives are weighed beside it)."""

from __future__ import annotations

import math
import random

from npuprof_launch.common import tracecollectives
from npuprof_launch.launcher import collectives, cputime, jobview, lockstep, report, wording


def ran_of(ranks: int, steps: int, slow: dict[int, float] | None = None, seed: int = 0, spread: float = 0.03):
    """Each rank's time on a CPU in steps 5 on (4 is warm-up): 24 ms, a normal ``spread`` of it from step to step,
    times ``slow[rank]``."""
    rng = random.Random(seed)
    slow = slow or {}
    return {
        rank: {step: 0.024 * slow.get(rank, 1.0) * (1 + rng.gauss(0, spread)) for step in range(5, 5 + steps)}
        for rank in range(ranks)
    }


def test_a_rank_that_runs_longest_in_every_step_by_30_percent_is_named_with_its_test_and_effect():
    verdict = cputime.judge(ran_of(4, 13, {2: 1.3}))
    (named,) = verdict["named"]
    assert named["rank"] == 2 and named["longest_in"] == named["steps"] == 13 and named["ranks_compared"] == 4
    assert math.isclose(named["p_value"], 4 * 0.25**13) and named["p_value"] < verdict["level"] == 0.001
    assert 1.2 < named["ratio"] < 1.4 and 0.005 < named["extra_per_step_s"] < 0.009
    assert verdict["top"] is named and verdict["needed"] == 13


def test_a_rank_always_longest_by_5_percent_is_within_what_alike_ranks_differ_by():
    """Seen beside two CPU hogs: a healthy rank 1.05x the others, the longest in 10 of 13 steps."""
    verdict = cputime.judge(ran_of(4, 13, {3: 1.05}, spread=0.005))
    assert verdict["named"] == []
    top = verdict["top"]
    assert top["rank"] == 3 and top["p_value"] < verdict["level"] and top["ratio"] < cputime.RATIO


def test_alike_ranks_and_a_window_too_short_name_no_one():
    for seed in range(20):
        assert cputime.judge(ran_of(4, 13, seed=seed))["named"] == [], seed
    short = cputime.judge(ran_of(4, 3, {2: 2.0}))
    assert short["named"] == [] and short["top"]["longest_in"] == 3 and short["top"]["p_value"] > 0.001
    assert short["steps"] == 3 and short["needed"] == 13


def test_a_step_two_ranks_tie_for_the_longest_counts_for_none():
    """An NPU's step trace with no computing in it: 0.0 a step on every rank. The first rank was
    "the longest in 12 of 12 steps" (p = 2.4e-07) in the answer's reason; no step counts for it."""
    top = cputime.judge({rank: dict.fromkeys(range(5, 17), 0.0) for rank in range(4)})["top"]
    assert top["longest_in"] == 0 and top["p_value"] == 1.0, top


def test_two_slow_ranks_are_both_named_and_only_steps_every_rank_holds_are_compared():
    ran = ran_of(8, 30, {1: 1.5, 6: 2.0})
    del ran[0][10]
    verdict = cputime.judge(ran)
    assert [named["rank"] for named in verdict["named"]] == [6, 1]
    assert verdict["steps"] == 29 and verdict["named"][1]["ranks_compared"] == 7


def test_judging_1024_ranks_names_the_slow_one():
    verdict = cputime.judge(ran_of(1024, 13, {700: 1.5}))
    assert [named["rank"] for named in verdict["named"]] == [700]


def waits(ranks: int, steps: int, last: dict[int, int], seed: int = 0) -> dict[int, list]:
    """One DDP round a step (steps 5 on), each waited for the rank ``last`` gives for its step
    (else a random one): that rank reaches it 10 ms after the others."""
    rng = random.Random(seed)
    found: dict[int, list] = {rank: [] for rank in range(ranks)}
    for step in range(5, 5 + steps):
        late = last.get(step, rng.randrange(ranks))
        reach = {rank: rng.uniform(0, 0.002) + (0.01 if rank == late else 0.0) for rank in range(ranks)}
        done = max(reach.values()) + 0.001
        for rank in range(ranks):
            key = f"gloo:all_reduce@{step}#0"
            found[rank].append(collectives.Collective(key, "gloo:all_reduce", step, done - reach[rank], reach[rank]))
    return found


def row(rank: int, collectives_of: list, ran: dict[int, float], on_cpu: bool = True) -> dict:
    """A report row of a 13-step window (steps 5-17) in lockstep, with its collectives and its
    stepping thread's time on a CPU in each step (the record's ``cpu_wait.ran``)."""
    window = {"first_step": 5, "last_step": 17, "complete": True, "traces": []}
    stats = {"median_s": 0.05, "max_s": 0.06, "spikes": []}
    found = {"rank": rank, "host": "vm", "steps": 30, "windows": [window], "step_stats": stats}
    found.update(collective_s=0.3, window_s=0.65, window_label="steps 5-17")
    found["cpu_wait"] = {"blocks": [], "covered": [[1, 30]], "at_most_s": 0.0, "ran": [[s, t] for s, t in ran.items()]}
    found[lockstep.COLLECTIVES] = collectives_of
    found[lockstep.ON_CPU] = on_cpu
    return found


def test_in_lockstep_the_rank_longest_on_a_cpu_is_named_where_the_rounds_name_no_one():
    """Rank 2 computes 30 % more; the busy machine makes it the last in 5 of 13 rounds only."""
    ran = ran_of(4, 13, {2: 1.3})
    rounds = waits(4, 13, {5: 2, 7: 2, 10: 2, 13: 2, 16: 2}, seed=1)
    job = jobview.summarize([row(rank, rounds[rank], ran[rank]) for rank in range(4)])
    (slow,) = job["slow_ranks"]
    assert slow["rank"] == 2 and slow["method"] == "collectives" and slow["rule"] == lockstep.CPU_TIME
    assert slow["longest_in"] == 13 and slow["last_in"] >= 5 and slow["rounds"] == 13
    item = report._slow_rank_item(slow)
    assert item["kind"] == "waited_for_rank" and item["evidence"]["rule"] == "cpu_time"
    assert {"longest_in", "steps_compared", "p_value", "ratio", "extra_per_step_s", "last_in"} <= set(item["evidence"])
    assert "its stepping thread ran on a CPU" in item["text"] and "the longest in 13 of 13 steps (" in item["text"]


def test_a_rank_the_rounds_waited_for_less_often_than_chance_or_threads_not_on_the_cpu_are_no_finding():
    ran = ran_of(4, 13, {2: 1.3})
    never = waits(4, 13, {step: 0 for step in range(5, 18)})  # rank 0 the last in every round
    job = jobview.summarize([row(rank, never[rank], ran[rank]) for rank in range(4)])
    assert [slow["rank"] for slow in job["slow_ranks"]] == [0] and job["slow_ranks"][0]["rule"] == "per_collective"
    quiet = waits(4, 13, {step: (0 if step % 2 else 1) for step in range(5, 18)})  # ranks 0 and 1 only
    job = jobview.summarize([row(rank, quiet[rank], ran[rank]) for rank in range(4)])
    assert job["slow_ranks"] == [], job["slow_ranks"]
    assert "rank 2 ran" in job["no_rank_stands_out"] and "the last in 0 of 13 rounds" in job["no_rank_stands_out"]
    assert job["slow_rank_verdict"]["cpu_time"]["rank"] == 2
    rounds = waits(4, 13, {5: 2, 7: 2, 10: 2, 13: 2, 16: 2}, seed=1)
    nccl = jobview.summarize([row(rank, rounds[rank], ran[rank], on_cpu=False) for rank in range(4)])
    assert nccl["slow_ranks"] == [] and "time on a CPU" not in nccl["no_rank_stands_out"]


def test_the_steps_kept_are_the_windows_and_those_after_less_warm_up_and_the_tools_own():
    """cpuwait.py keeps the profiled steps and RAN_AFTER more after each window; the report leaves
    out steps 2-4 and the steps before and after each window (the watch, the stop and export)."""
    kept = [[step, 0.02] for step in (3, 4, 5, 6, 7, 8, 9, 10, 20)]
    process = {"cpu_wait": {"ran": kept}, "windows": [{"first_step": 106, "last_step": 108}], "step_offset": 100}
    assert sorted(cputime.ran_by_step(process)) == [106, 107, 108, 110, 120]


def test_out_of_lockstep_step_times_that_overlap_name_the_rank_whose_thread_ran_longest():
    """Two independent ranks beside two CPU hogs: rank 1 on 30 % more rows, its median step 1.24x,
    above the other's in 21 of 31 steps (p = 0.071); its thread ran 1.3x in every step."""
    overlap = {"found": False, "reason": "the ranks' step times overlap", "rank": 1, "steps": 31, "p_value": 0.071}
    overlap.update(ratio=1.24, step_s=0.031, others_step_s=0.025, above_others_in=21, slowest_in=21)

    def rows(slow: dict[int, float]) -> list[dict]:
        ran = ran_of(2, 13, slow)
        window = {"first_step": 5, "last_step": 17}
        return [{"rank": r, "windows": [window], "cpu_wait": {"ran": list(map(list, ran[r].items()))}} for r in ran]

    def judged(slow: dict[int, float]) -> dict | None:
        return cputime.longest(rows(slow))

    found = cputime.confirm_slow(overlap, judged({1: 1.3}))
    assert found["found"] and found["rank"] == 1 and found["rule"] == "cpu_time" and found["cpu_longest_in"] == 13
    assert "p = 0.071: a busy machine's spread); its stepping thread ran on a CPU" in found["evidence"]
    assert cputime.confirm_slow(overlap, judged({})) is None, "alike threads: the step times' verdict stands"
    assert cputime.confirm_slow(overlap, judged({0: 1.3})) is None, "the other rank ran longer: not this one's work"
    assert cputime.confirm_slow({**overlap, "ratio": 1.02}, judged({1: 1.3})) is None, "a step 1.02x is no finding"


def test_on_npu_data_the_rank_whose_device_computed_longest_is_named_by_its_device_time():
    """HCCL's collectives (no thread of the host's to read): each session's step trace gives its
    NPU's computing time a step (windowcheck puts it on the row); the same judge names the rank
    where the rounds name no one, and says so by the rule ``device_time``."""
    ran = ran_of(4, 13, {2: 1.3})
    rounds = waits(4, 13, {5: 2, 7: 2, 10: 2, 13: 2, 16: 2}, seed=1)

    def npu_row(rank: int, device: dict[int, float] | None) -> dict:
        found = row(rank, rounds[rank], {}, on_cpu=False)
        del found["cpu_wait"]
        return {**found, lockstep.DEVICE: device} if device else found

    job = jobview.summarize([npu_row(rank, {4: 0.5, **ran[rank]}) for rank in range(4)])  # step 4: warm-up
    (slow,) = job["slow_ranks"]
    assert slow["rank"] == 2 and slow["rule"] == lockstep.DEVICE_TIME == "device_time" and slow["steps"] == 13
    assert slow["evidence"].startswith("its NPU computed ") and "the longest in 13 of 13 steps" in slow["evidence"]
    alike = jobview.summarize([npu_row(rank, ran_of(4, 13, seed=3)[rank]) for rank in range(4)])
    assert alike["slow_ranks"] == [] and "by its NPU's computing time, rank" in alike["no_rank_stands_out"]
    assert alike["slow_rank_verdict"]["device_time"]["steps"] == 13, alike["slow_rank_verdict"]
    one_short = jobview.summarize([npu_row(rank, ran[rank] if rank else None) for rank in range(4)])
    assert "NPU" not in (one_short["no_rank_stands_out"] or ""), "a rank without its device time: no judge"


def test_in_lockstep_a_second_rank_the_first_outran_by_the_margin_is_not_named():
    """Beside the findings benchmark, a healthy rank ran 1.21x the others step after step, next to
    the 1.50x one: the others waited for the 1.50x rank, never for it. Two ranks alike slow (one
    host's) are both named."""
    rounds = waits(4, 13, {5: 2, 7: 2, 10: 2, 13: 2, 16: 2}, seed=1)
    hidden = ran_of(4, 13, {2: 1.5, 1: 1.21}, spread=0.01)
    job = jobview.summarize([row(rank, rounds[rank], hidden[rank]) for rank in range(4)])
    assert [slow["rank"] for slow in job["slow_ranks"]] == [2], job["slow_ranks"]
    both = ran_of(4, 13, {2: 1.5, 1: 1.45}, spread=0.01)
    job = jobview.summarize([row(rank, rounds[rank], both[rank]) for rank in range(4)])
    assert sorted(slow["rank"] for slow in job["slow_ranks"]) == [1, 2], job["slow_ranks"]


def test_out_of_lockstep_a_rank_with_more_work_whose_steps_the_cores_evened_is_named_by_its_work():
    """Four ranks alone beside two CPU hogs, rank 2 on 30 % more rows: its thread ran 1.28x in 21 of
    21 steps, and its median step, 62.5 ms, was within 59.2-61.5 ms of two others (46.3 ms on the
    fourth): the step test named none. A rank with more work whose steps are shorter is no finding."""
    ran = ran_of(4, 21, {2: 1.28})
    rows = [{"rank": r, "windows": [], "cpu_wait": {"ran": list(map(list, ran[r].items()))}} for r in ran]
    more = cputime.longest(rows)
    steps = {0: 0.0615, 1: 0.0592, 2: 0.0625, 3: 0.0463}
    by_rank = {rank: [step_s * (1 + 0.01 * (i % 3)) for i in range(21)] for rank, step_s in steps.items()}
    found = cputime.busier(more, by_rank)
    assert found["rank"] == 2 and found["rule"] == "cpu_time" and found["cpu_longest_in"] == 21, found
    assert found["evidence"].startswith("by its own work: its stepping thread ran on a CPU ")
    assert "is no shorter: on this machine the share of the cores each rank got set the step times" in found["evidence"]
    assert cputime.busier(more, {**by_rank, 2: [0.05] * 21}) is None, "its steps shorter: no cost to this job"
    assert cputime.busier(cputime.longest(rows[:2] + rows[3:]), by_rank) is None, "no rank's thread ran longer"


def test_out_of_lockstep_on_npu_the_device_s_computing_time_is_the_work_never_the_host_thread_s():
    """On an NPU the stepping thread's time is launches and waits: where every rank profiled one,
    the judge reads each session's computing time a step, and reads nothing where a rank has none."""
    work, host = ran_of(2, 21, {1: 1.3}), ran_of(2, 21, {0: 1.3}, seed=1)

    def npu_rows(device: bool) -> list[dict]:
        rows = []
        for rank in (0, 1):
            one = {
                "rank": rank,
                "backend": "npu",
                "windows": [],
                "cpu_wait": {"ran": list(map(list, host[rank].items()))},
            }
            rows.append({**one, lockstep.DEVICE: work[rank]} if device else one)
        return rows

    more = cputime.longest(npu_rows(True), lockstep.DEVICE)
    assert more["rank"] == 1 and more["rule"] == "device_time" and cputime.did(more["rule"]) == "its NPU computed", more
    assert cputime.longest(npu_rows(False), lockstep.DEVICE) is None, "no device time: not the host thread's"
    cpu = [{**row, "backend": "torch"} for row in npu_rows(True)]
    assert cputime.longest(cpu, lockstep.DEVICE)["rank"] == 0, "on the CPU the thread's time is the work"


def test_a_pipeline_s_sends_and_receives_are_no_rounds_and_its_stage_longest_on_a_cpu_is_named():
    """A balanced 4-stage gloo pipeline beside two CPU hogs had rank 2 named "the last in 27 of 52
    rounds": each stage's sends and receives, numbered by name, matched other stages' unrelated ones.
    They are no collectives now (tracecollectives.POINT_TO_POINT); with none to count, the stage whose
    thread ran longest is named where it waited in them no longer than the others' median."""
    gathered = tracecollectives.Gathered()
    for at, name in enumerate(("gloo:send", "gloo:recv", "gloo:recv")):
        gathered.marked(name, 1000.0 + at, 5.0, {})
        gathered.called("c10d::send" if name.endswith("send") else "c10d::recv_", 999.0 + at)
    gathered.marked("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 1010.0, 5.0, {})
    gathered.marked("record_param_comms", 1012.0, 1.0, {"Collective name": "recv", "Seq": 3, "Process Group Name": "0"})
    assert gathered.point_to_point == 5 and not gathered.sequenced
    record = gathered.record([(0.0, 2000.0, 5)])
    assert record is not None and record["items"] == [] and record["point_to_point"] == 5, record
    assert tracecollectives.of(record) == []
    assert all(map(tracecollectives.point_to_point, ("hcom_receive__123_0_1", "hcom_batchSendRecv_9", "hcom_send_2")))
    assert not any(
        map(tracecollectives.point_to_point, ("hcom_allReduce__123_0_1", "gloo:all_to_all", "gloo:broadcast"))
    )
    ran = ran_of(4, 13, {2: 1.5})
    rows = [dict(row(rank, [], ran[rank]), collective_s=(0.58, 0.31, 0.43, 0.46)[rank]) for rank in range(4)]
    (slow,) = jobview.summarize(rows)["slow_ranks"]
    assert slow["rank"] == 2 and slow["rule"] == lockstep.CPU_TIME and slow["point_to_point"], slow
    assert "and waited 430 ms in sends and receives against 460 ms on the others (their median)" in slow["evidence"]
    waited_most = [dict(one, collective_s=0.7) if one["rank"] == 2 else one for one in rows]
    told = jobview.summarize(waited_most)
    assert told["slow_ranks"] == [], "a stage that waits more is no one's wait"
    assert told["no_rank_stands_out"].startswith("in lockstep (the others spent 89% of their window in sends and rec")
    alike = ran_of(4, 13, {})
    even = [dict(one, cpu_wait=dict(one["cpu_wait"], ran=list(alike[one["rank"]].items()))) for one in rows]
    assert jobview.summarize(even)["slow_ranks"] == []


def test_a_machine_where_every_rank_waited_for_a_cpu_as_long_as_it_ran_is_told_busy():
    """Beside six CPU hogs on 2 cores a 4-rank DDP rank on 30 % more rows ran 1.00x the others'
    time on a CPU, each rank waiting 49-71 ms a step against 34-41 ms ran: "no rank stands out" there
    says so (cputime.busy, wording.unjudged); where most ranks waited less than they ran, the verdict
    is the plain one."""
    steps = range(5, 20)

    def busy_row(rank: int, ran: float, waited: float) -> dict:
        readings = {"ran": [[s, ran] for s in steps], "waited": [[s, waited] for s in steps]}
        return {"rank": rank, "cpu_wait": readings, "windows": [{"first_step": 6, "last_step": 18}]}

    rows = [busy_row(0, 0.041, 0.049), busy_row(1, 0.034, 0.066), busy_row(2, 0.041, 0.071)]
    busy = cputime.busy(rows)
    assert busy == {"cpu_ran_per_step_s": [0.034, 0.041], "cpu_waited_per_step_s": [0.049, 0.071]}, busy
    told = wording.unjudged({"rule": "per_collective", "machine_busy": busy})
    assert told == (
        "no rank stands out by more than a machine this busy lets show: the ranks' stepping threads waited for "
        "a CPU as long as they ran or longer (49-71 ms a step against 34-41 ms ran)"
    ), told
    assert cputime.busy([*rows[:2], busy_row(2, 0.041, 0.02)]), "the median rank's: one that waited less is busy too"
    assert cputime.busy([rows[0], busy_row(1, 0.034, 0.02), busy_row(2, 0.041, 0.02)]) is None
    assert cputime.busy([*rows[:2], {"rank": 2}]) is None, "a rank without readings: no verdict"
    assert wording.unjudged({"rule": "per_collective"}) is None


def test_on_a_busy_machine_a_rank_is_named_by_its_time_on_a_cpu_over_each_other_rank_s():
    """An alike rank's thread ran 1.32x the others' median on a busy machine (F22), the rank on 30 %
    more rows 1.26x, and the alike one was named first: there a rank stands out by RATIO over each
    other rank, not only over their median. An NPU's computing time keeps their median."""
    steps = range(5, 20)

    def one(rank: int, ran: float, waited: float) -> dict:
        readings = {"ran": [[s, ran + s * 1e-6] for s in steps], "waited": [[s, waited] for s in steps]}
        return {"rank": rank, "cpu_wait": readings, "windows": [{"first_step": 6, "last_step": 18}]}

    def four(ran: list[float], waited: float) -> list[dict]:
        return [one(rank, seconds, waited) for rank, seconds in enumerate(ran)]

    placed = [0.025, 0.025, 0.0315, 0.033]  # rank 3 alike but placed badly, rank 2 on 30 % more rows
    assert not cputime.each_other(four(placed, 0.001)) and cputime.longest(four(placed, 0.001))["rank"] == 3
    busy = four(placed, 0.05)
    assert cputime.each_other(busy) and cputime.longest(busy) is None, "1.32x the median, 1.05x rank 2"
    assert not cputime.each_other(busy, cputime.DEVICE_TIME)
    verdict = cputime.judge(cputime.ran_of(busy), each=True)
    assert verdict["named"] == [] and verdict["top"]["others_most_per_step_s"] > 0.0315, verdict["top"]
    apart = four([0.025, 0.026, 0.0325, 0.025], 0.05)  # 1.25x each other rank: named there too
    assert cputime.longest(apart)["rank"] == 2
