"""The job's step statistics leave out the steps the tool's own work ran in (in-process, no torch)."""

from __future__ import annotations

from npuprof_launch.common import stepstats
from npuprof_launch.launcher import jobview, nextruns, periods

WINDOW = {"first_step": 9, "last_step": 11, "complete": True, "traces": [], "aftercare_steps": [12, 16]}


def durations_with(slow: dict[int, float], steps: int = 30, typical: float = 0.001) -> list[float]:
    """Durations of steps 2..steps (the file's layout), ``typical`` but for the steps in ``slow``."""
    return [slow.get(step, typical + step * 1e-7) for step in range(2, steps + 1)]


def test_the_profiled_steps_run_from_before_the_window_to_after_it_and_the_aftercare_steps_follow():
    tool = stepstats.ToolSteps([WINDOW], steps=30)
    assert [step for step in range(1, 31) if step in tool] == list(range(8, 13))
    assert [step for step in range(1, 31) if tool.beside_aftercare(step)] == list(range(12, 17))


def test_warmup_moves_the_first_profiled_step_back_and_a_running_aftercare_lasts_to_the_end():
    window = dict(WINDOW, aftercare_steps=[12, None])
    tool = stepstats.ToolSteps([window], steps=30, warmup=2)
    assert [step for step in range(1, 31) if step in tool] == list(range(6, 13))
    assert [step for step in range(1, 31) if tool.beside_aftercare(step)] == list(range(12, 31))


def test_the_job_durations_are_the_steps_outside_the_profiled_ones():
    durations = durations_with({})
    kept = stepstats.ToolSteps([WINDOW, dict(WINDOW, first_step=20, last_step=21)], steps=30).job_durations(durations)
    expected = [d for step, d in zip(range(2, 31), durations) if not (8 <= step <= 12 or 19 <= step <= 22)]
    assert kept == expected


def test_a_spike_of_the_window_is_no_spike_of_the_job_one_beside_the_aftercare_says_so():
    # The range watch's compile before the window, the stop; a step beside the aftercare; the job's own.
    durations = durations_with({8: 0.039, 12: 0.037, 13: 0.024, 20: 0.050})
    stats = stepstats.rank_stats(durations, stepstats.ToolSteps([WINDOW], steps=30))
    assert [(spike["step"], spike.get("beside_aftercare", False)) for spike in stats["spikes"]] == [
        (20, False),
        (13, True),
    ]
    assert stats["max_step"] == 20 and stats["max_s"] == 0.050
    assert stats["count"] == len(durations) - 5
    assert stats["median_s"] < 0.002


def test_a_step_that_held_the_tools_checkpoint_is_judged_without_it():
    """The step after a checkpoint holds the record's writing: on a loaded machine or slow storage
    tens of ms (a healthy DDP job beside a loaded suite was told "step 9: 3.0x the median"). Its
    time, as the session measured it, is taken off before the step is judged; beyond it, a spike."""
    durations = durations_with({9: 0.009, 17: 0.008, 20: 0.010}, typical=0.001)
    tool = stepstats.ToolSteps([], steps=30, checkpoints=[[9, 0.0045], [17, 0.0002], [25, 0.01]])
    stats = stepstats.rank_stats(durations, tool)
    assert [spike["step"] for spike in stats["spikes"]] == [20, 17], "17: the job's own 7.8 ms besides 0.2 of ours"
    assert stats["checkpoint_spikes"] == [{"step": 9, "step_s": 0.009, "checkpoint_s": 0.0045}]
    job = jobview.summarize([{"rank": 0, "steps": 30, "step_stats": stats}], command=["python", "train.py"])
    assert [spike["step"] for spike in job["spikes"]] == [20, 17]
    assert job["tool_steps"]["checkpoint_spikes"] == [{"step": 9, "step_s": 0.009, "checkpoint_s": 0.0045}]
    assert job["tool_steps"]["lines"] == [
        "step 9 (9.0 ms) held the tool's own record writing (4.5 ms, as it timed it, a loaded machine's wait for "
        "the CPU included): spikes with it, none without it, so no finding"
    ]
    untimed = stepstats.rank_stats(durations, stepstats.ToolSteps([], steps=30))
    assert [spike["step"] for spike in untimed["spikes"]] == [20, 9, 17], "an older record: no checkpoint times"


def test_a_spike_that_another_ranks_checkpoint_holds_in_lockstep_is_the_tools():
    """A healthy 2-rank DDP job of 5 ms steps beside a CPU hog: rank 1's record writing took 42.5 ms
    of its step 5, rank 0 waited for it in the all-reduce, and "step 5: rank 0, 5.0x the median"
    was a finding. Another rank's checkpoint at the step is taken off as the rank's own is."""
    quiet = durations_with({5: 0.0485, 20: 0.030}, typical=0.005)
    writer = durations_with({5: 0.0497}, typical=0.005)
    rows = []
    for rank, durations, checkpoints in ((0, quiet, [[3, 0.001]]), (1, writer, [[5, 0.0425]])):
        stats = stepstats.rank_stats(durations, stepstats.ToolSteps([], steps=30, checkpoints=checkpoints))
        rows.append({"rank": rank, "steps": 30, "step_stats": stats, "checkpoint_s": checkpoints})
    job = jobview.summarize(rows, command=["python", "train.py"])
    assert [(spike["step"], spike["ranks"]) for spike in job["spikes"]] == [(20, [0])], "20: the job's own"
    assert {"step": 5, "step_s": 0.0485, "checkpoint_s": 0.0425, "checkpoint_rank": 1} in job["tool_steps"][
        "checkpoint_spikes"
    ]
    assert job["tool_steps"]["lines"][-1] == (
        "step 5 (48.5 ms) waited for the tool's own record writing on rank 1 (42.5 ms), which holds the other "
        "ranks in lockstep: spikes with it, none without it, so no finding"
    )
    bigger = [dict(rows[0], step_stats=stepstats.rank_stats(durations_with({5: 0.2}, typical=0.005))), rows[1]]
    spikes = jobview.summarize(bigger)["spikes"]
    assert [spike["step"] for spike in spikes] == [5], "200 ms: a spike still without the 42.5 ms"


def test_a_spike_beside_the_aftercare_is_the_jobs_when_far_beyond_what_the_aftercare_costs():
    durations = durations_with({13: 0.600, 20: 0.030})
    process = {"rank": 0, "step_stats": stepstats.rank_stats(durations, stepstats.ToolSteps([WINDOW], steps=30))}
    job = jobview.summarize([dict(process, steps=30)], command=["python", "train.py"])
    assert [(spike["step"], spike.get("beside_aftercare", False)) for spike in job["spikes"]] == [
        (13, True),
        (20, False),
    ], "worst first: the job's own spikes may fall beside the aftercare too"
    assert "so the spike is the job's own" in job["spikes"][0]["evidence"]
    assert job["undecidable_spikes"] == []
    assert job["suggestions"] == ["npuprof-run --skip-first 12 --active 1 -- python train.py"], (
        "the next run profiles the job's worst spike, told its own beside our aftercare, with no aftercare beside it"
    )


def test_a_spike_beside_the_aftercare_that_its_cost_may_explain_is_undecidable_told_apart_and_never_suggested():
    """The README's first run ended with step 9 (beside the aftercare, 30x a 1.35 ms median)
    as its finding and the target of its next run."""
    durations = durations_with({13: 0.030, 14: 0.060})
    process = {"rank": 0, "step_stats": stepstats.rank_stats(durations, stepstats.ToolSteps([WINDOW], steps=30))}
    steps = jobview.Steps(2, durations, stepstats.ToolSteps([WINDOW], steps=30))
    job = jobview.summarize([dict(process, steps=30)], command=["python", "train.py"], steps_of=lambda p: steps)
    assert job["spikes"] == [] and job["suggestions"] == []
    assert [spike["step"] for spike in job["undecidable_spikes"]] == [14, 13]
    assert "the step times cannot tell" in job["undecidable_spikes"][0]["undecidable"]
    recorded, beside = job["tool_steps"]["lines"]
    assert recorded.startswith("steps 8-12 (the windows and the steps that start and stop them) took 1.0 ms against")
    assert beside.startswith("steps 12-16 ran beside the tool's compression") and "step 14 (60.0 ms" in beside


def test_without_windows_every_step_is_the_jobs():
    durations = durations_with({8: 0.039})
    stats = stepstats.rank_stats(durations)
    assert [spike["step"] for spike in stats["spikes"]] == [8]
    assert stats["count"] == len(durations)


def test_a_run_that_was_all_the_tools_is_described_whole():
    durations = durations_with({}, steps=10)
    window = {"first_step": 2, "last_step": 9}
    stats = stepstats.rank_stats(durations, stepstats.ToolSteps([window], steps=10))
    assert stats["count"] == len(durations) and stats["spikes"] == []


def stage_row(stage: str, target: str, slow: dict[int, float]) -> dict:
    stats = stepstats.rank_stats(durations_with(slow), stepstats.ToolSteps([], steps=30))
    return {"rank": None, "stage": stage, "target": target, "steps": 30, "step_stats": stats}


def test_a_stage_s_spike_is_its_own_step_and_the_next_run_chooses_it_in_the_stage_s_declaration():
    """A stage's steps are its function's calls: its spike is not merged with another stage's same
    number, and the next run sets the stage's own skip-first/active (which outrank the flags)."""
    rows = [stage_row("rollout", "rl:gen", {6: 0.040}), stage_row("update", "rl:learn", {6: 0.020})]
    given = {"scenario": "rl", "stage": "rollout=rl:gen,skip-first=2,active=2,range=1;update=rl:learn"}
    job = jobview.summarize(rows, command=["python", "rl.py"], given=given)
    assert [(spike.get("stage"), spike["step"]) for spike in job["spikes"]] == [("rollout", 6), ("update", 6)]
    assert job["suggestions"] == [
        "npuprof-run --scenario rl --stage rollout=rl:gen,skip-first=5,active=1,range=1 --stage update=rl:learn "
        "-- python rl.py"
    ]


def test_a_stage_declared_only_in_the_environment_is_declared_on_the_suggested_command():
    job = jobview.summarize([stage_row("serve", "app:handle", {9: 0.040})], command=["python", "app.py"], given={})
    assert job["suggestions"] == ["npuprof-run --stage serve=app:handle,skip-first=8,active=1 -- python app.py"]


def test_a_stage_declaration_keeps_its_range_and_unchecked_text_is_left_alone():
    from npuprof_launch.common import stages

    assert stages.with_selection("a=m:f,wait=1,range=0,active=3", [("skip-first", "4")]) == "a=m:f,skip-first=4,range=0"
    assert stages.with_selection("not a stage", [("skip-first", "4")]) == "not a stage"


def test_a_stage_s_slow_rank_is_named_with_the_stage_and_its_run_chosen_in_the_stage():
    def row(rank: int, typical: float) -> dict:
        durations = [
            value + 1e-4 * ((rank + step) % 3) for step, value in enumerate(durations_with({}, typical=typical))
        ]
        stats = stepstats.rank_stats(durations, stepstats.ToolSteps([], steps=30))
        steps = jobview.Steps(2, durations, stepstats.ToolSteps([], steps=30))
        return {"rank": rank, "stage": "rollout", "target": "rl:gen", "steps": 30, "step_stats": stats, "t": steps}

    rows = [row(0, 0.010), row(1, 0.010), row(2, 0.020)]
    job = jobview.summarize(rows, command=["python", "rl.py"], given={}, steps_of=lambda p: p["t"])
    assert [(slow["rank"], slow.get("stage")) for slow in job["slow_ranks"]] == [(2, "rollout")]
    assert job["suggestions"] == ["npuprof-run --ranks 2 --stage rollout=rl:gen,skip-first=10,active=2 -- python rl.py"]


def test_without_per_step_times_no_rank_is_named_slow_and_the_reason_says_so():
    rows = [
        {"rank": rank, "steps": 30, "step_stats": stepstats.rank_stats(durations_with({}, typical=typical))}
        for rank, typical in ((0, 0.010), (1, 0.030))
    ]
    job = jobview.summarize(rows)
    assert job["slow_ranks"] == []
    assert job["slow_rank_verdict"] == {"found": False, "reason": "no per-step times to compare"}
    assert job["no_rank_stands_out"] == "no per-step times to compare"


def test_two_alike_ranks_give_no_rank_stands_out_with_its_reason_one_slower_in_every_step_is_named():
    import random

    rng = random.Random(5)

    def row(rank: int, factor: float) -> dict:
        durations = [0.020 * factor * (1 + rng.gauss(0, 0.03)) for _ in range(2, 41)]
        tool = stepstats.ToolSteps([dict(WINDOW, aftercare_steps=None)], steps=40)
        stats = stepstats.rank_stats(durations, tool)
        return {"rank": rank, "steps": 40, "step_stats": stats, "t": jobview.Steps(2, durations, tool)}

    alike = jobview.summarize([row(0, 1.0), row(1, 1.0)], steps_of=lambda p: p["t"])
    assert alike["slow_ranks"] == [] and "apart" in alike["no_rank_stands_out"], alike["slow_rank_verdict"]
    slow = jobview.summarize([row(0, 1.0), row(1, 1.3)], command=["python", "job.py"], steps_of=lambda p: p["t"])
    (found,) = slow["slow_ranks"]
    assert found["rank"] == 1 and found["method"] == "step_times" and found["slowest_in"] == found["steps"] == 31
    assert found["test"] == "per-step binomial test" and found["p_value"] < found["level"] == 0.001
    assert "no_rank_stands_out" not in slow and slow["slow_rank_verdict"] == {"found": True, "reason": None}
    assert slow["suggestions"] == ["npuprof-run --skip-first 10 --active 2 --ranks 1 -- python job.py"]


def test_a_rank_slower_because_it_waited_for_a_cpu_is_not_named_slow():
    """Out of lockstep, 4 ranks on 2 cores beside CPU hogs: rank 0 was named 3.7x slower, its steps
    the machine's (it had less of the cores). Its own wait for a CPU, past the others', takes the
    finding off; the same rank without that wait is named."""

    def row(rank: int, step_s: float, wait_s: float) -> dict:
        durations = [step_s * (1 + 0.01 * (step % 3)) for step in range(2, 41)]
        tool = stepstats.ToolSteps([dict(WINDOW, aftercare_steps=None)], steps=40)
        cpu_wait = {"blocks": [[2, 40, wait_s * 39]], "covered": [[2, 40]], "at_most_s": 0.0}
        stats = stepstats.rank_stats(durations, tool, cpu_wait)
        return {
            "rank": rank,
            "steps": 40,
            "step_stats": stats,
            "cpu_wait": cpu_wait,
            "t": jobview.Steps(2, durations, tool),
        }

    waited = jobview.summarize(
        [row(0, 0.0036, 0.0025), *(row(r, 0.001, 0.0001) for r in (1, 2, 3))], steps_of=lambda p: p["t"]
    )
    assert waited["slow_ranks"] == [] and "less of the cores" in waited["no_rank_stands_out"], waited[
        "slow_rank_verdict"
    ]
    slow = jobview.summarize(
        [row(0, 0.0036, 0.0001), *(row(r, 0.001, 0.0001) for r in (1, 2, 3))], steps_of=lambda p: p["t"]
    )
    assert [found["rank"] for found in slow["slow_ranks"]] == [0]
    # A rank with more work waits more for a CPU too (it is runnable longer): its thread's time on a
    # CPU, 3.6 ms a step against 1 ms, says it is its work (beside CPU hogs: 1.25x in 21 of 21 steps).
    rows = [row(0, 0.0036, 0.0025), *(row(r, 0.001, 0.0001) for r in (1, 2, 3))]
    for one in rows:
        ran = 0.0033 if one["rank"] == 0 else 0.0009
        one["cpu_wait"]["ran"] = [[step, ran * (1 + 0.01 * (step % 5))] for step in range(5, 30)]
    busier = jobview.summarize(rows, steps_of=lambda p: p["t"])
    (found,) = busier["slow_ranks"]
    assert found["rank"] == 0 and found["rule"] == "cpu_time" and found["cpu_longest_in"] == 25, found
    assert found["evidence"].endswith("(1 in 4 by chance; p = 3.6e-15, level 0.001)"), found["evidence"]
    assert "having more to run: its stepping thread ran on a CPU 3.4 ms a step against" in found["evidence"]


def collective_row(rank: int, collective_s: float, last_step: int, step_s: float = 0.05, window_s: float = 0.2) -> dict:
    window = {"first_step": 3, "last_step": last_step, "complete": True, "traces": []}
    stats = stepstats.rank_stats(durations_with({}, typical=step_s))
    row = {"rank": rank, "steps": 20, "windows": [window], "collective_s": collective_s, "window_s": window_s}
    return dict(row, step_stats=stats)


def test_in_lockstep_the_rank_that_waits_least_is_named_from_three_steps_beyond_the_others_spread():
    """A healthy 4-rank job was told "rank 1 is the one the others wait for" from 2 steps of waits."""
    named = jobview.summarize([collective_row(r, s, 5) for r, s in enumerate((0.11, 0.12, 0.02, 0.118))])
    (slow,) = named["slow_ranks"]
    assert slow["rank"] == 2 and slow["method"] == "collectives" and slow["steps"] == 3
    two_steps = jobview.summarize([collective_row(r, s, 4) for r, s in enumerate((0.11, 0.12, 0.02, 0.118))])
    assert two_steps["slow_ranks"] == []
    assert two_steps["no_rank_stands_out"].startswith("in lockstep (the others spent 59% of their window in collect")
    assert two_steps["no_rank_stands_out"].endswith(
        "rank 2 waited least, 20 ms against 110-120 ms on the other ranks, "
        "and is no finding: its window held 2 recorded steps, fewer than 3 (--active 3 or more)"
    )
    spread = jobview.summarize([collective_row(r, s, 5) for r, s in enumerate((0.05, 0.12, 0.02, 0.09))])
    assert spread["slow_ranks"] == [], "half the others' median, but within their spread"
    profiler = jobview.summarize([collective_row(r, s, 5, 0.003) for r, s in enumerate((0.0077, 0.0213))])
    assert profiler["slow_ranks"] == [], "recorded steps of 67 ms in a job of 3 ms steps: the profiler's cost"
    arrival = jobview.summarize([collective_row(r, s, 5, 0.012, 0.045) for r, s in enumerate((0.0063, 0.0137))])
    assert arrival["slow_ranks"] == [], "2.5 ms a step of 12 ms: the order in which alike ranks arrive"


def test_in_lockstep_a_rank_that_is_all_sleep_makes_the_others_wait_a_whole_step_and_is_named():
    """CI, under load: rank 1 of examples/stragglers.py sleeps 200 ms a step; rank 0 waited 202.8 ms
    a recorded step against a 202.3 ms median step, past a bound of one step, and no rank was named."""
    rows = [collective_row(0, 0.6124, 5, 0.2023, 0.620), collective_row(1, 0.0041, 5, 0.2023, 0.620)]
    (slow,) = jobview.summarize(rows)["slow_ranks"]
    assert slow["rank"] == 1 and slow["method"] == "collectives"
    # Fresh clone, under load: rank 2 of 4 sleeps 100 ms a step; the others waited 114.9 ms a recorded
    # step longer than it, past its own time (109.4 ms), in windows 8-21 ms a step longer than its own.
    four = [(0.3737444, 0.3975284, 0.1083), (0.3896479, 0.4028691, 0.1080), (0.0449767, 0.3730435, 0.1089)]
    four.append((0.3960198, 0.4358097, 0.1065))
    rows = [collective_row(r, c, 5, s, w) for r, (c, w, s) in enumerate(four)]
    (slow,) = jobview.summarize(rows)["slow_ranks"]
    assert slow["rank"] == 2 and slow["method"] == "collectives"
    # The same job on a busier machine (constructed: CI named no rank once more, its numbers unseen): the
    # sleeping rank's own time 232 ms a recorded step, past 1.1 steps by 30 ms, a seventh of the others'
    # 212 ms of extra wait; the rest of the wait is the job's.
    rows = [collective_row(0, 0.640, 5, 0.2023, 0.660), collective_row(1, 0.004, 5, 0.2023, 0.700)]
    (slow,) = jobview.summarize(rows)["slow_ranks"]
    assert slow["rank"] == 1 and slow["method"] == "collectives"
    # A suite beside it on 2 cores: rank 0 waited 204.5 ms a recorded step, past rank 1's whole recorded
    # step (203.5 ms), in a window 18 ms longer than rank 1's: it waited for rank 1 there too.
    rows = [collective_row(0, 0.6171, 5, 0.2022, 0.6284), collective_row(1, 0.0036, 5, 0.2020, 0.6105)]
    (slow,) = jobview.summarize(rows)["slow_ranks"]
    assert slow["rank"] == 1 and slow["method"] == "collectives"
    # Alike ranks whose window made one slower: 7.6 ms of waits a recorded step on 7 ms steps, the
    # waited-for rank's own time a recorded step 11.7 ms (the profiler's), past 1.1 steps.
    alike = [collective_row(0, 0.0258, 5, 0.007, 0.038), collective_row(1, 0.003, 5, 0.007, 0.038)]
    told = jobview.summarize(alike)
    assert told["slow_ranks"] == []
    assert told["no_rank_stands_out"].endswith("more than its steps can hold (7.0 ms): the window's own doing")


def test_a_window_of_one_step_on_a_spike_names_the_rank_the_others_waited_for_in_it():
    """The run a spike's suggestion starts records one step: a 3-rank DDP job whose rank 0 evaluates
    for 0.4 s every 6 steps was told "no rank stands out: its window held 1 recorded steps, fewer
    than 3", and the next suggestion was the next spike. One step of a spike's size tells whom the
    others waited for in it; alike ranks whose profilers cost them their step do not pass."""
    # Numbers of that run: rank 0 11 ms in collectives, the others 390-419 ms, steps of 25 ms.
    rows = [collective_row(r, c, 3, s, w) for r, (c, w, s) in enumerate(EVAL)]
    job = jobview.summarize(rows)
    assert job["slow_ranks"] == []
    (once,) = job["waited_for"]
    assert once["rank"] == 0 and once["steps"] == 1 and once["vs_median"] == 15.2, once
    assert once["evidence"] == (
        "it spent 11 ms in collectives against 390-419 ms on the other ranks, and 432 ms in its own work "
        "against 22-46 ms; their extra wait, 379.1 ms a recorded step, is 15x the job's 25.0 ms median step"
    )
    assert job["no_rank_stands_out"].endswith(
        "fewer than 3 (--active 3 or more) to tell a slow rank; in its 1 recorded step the others waited for rank 0"
    )
    # No rule judged a slow rank there: the verdict says so, and the window that can (wording.unjudged).
    verdict = job["slow_rank_verdict"]
    assert verdict["recorded_steps"] == 1 and verdict["window_steps_needed"] == 3, verdict
    # The same step with 350 ms of it spent waiting for a CPU: the machine's doing, the job's is 29 ms.
    waited = [dict(rows[0], cpu_wait={"blocks": [[3, 3, 0.35]], "covered": [[2, 20]], "at_most_s": 0.005})]
    assert jobview.summarize(waited + rows[1:])["waited_for"] == []
    resumed = [dict(waited[0], step_offset=100, windows=[dict(waited[0]["windows"][0], first_step=103, last_step=103)])]
    assert jobview.summarize(resumed + rows[1:])["waited_for"] == [], "a resumed job's window, its readings' steps"
    # Alike ranks of 0.5 ms steps, each recorded step 40 ms of the profiler's: 10 ms of waits apart.
    alike = [collective_row(0, 0.002, 3, 0.0005, 0.040), collective_row(1, 0.012, 3, 0.0005, 0.041)]
    assert jobview.summarize(alike)["waited_for"] == []
    # Three recorded steps: the slow-rank rule's to judge, not this one.
    judged = jobview.summarize([collective_row(r, c, 5, s, w) for r, (c, w, s) in enumerate(EVAL)])
    assert judged["waited_for"] == [] and "window_steps_needed" not in judged["slow_rank_verdict"]


def test_a_spike_of_three_of_a_busy_machine_s_steps_in_a_window_of_one_step_names_the_rank_waited_for():
    """F12, beside two CPU hogs: a 5 ms job's rank 1 spent 50 ms in step 3 (10x), steps of 15 ms on
    the busy machine; the others waited 49.6 ms longer, 42 ms of it past the 7.5 ms rank 1 waited
    for a CPU: 2.8 of the job's median steps, under the bar of 3 then. The healthy one-step window
    of the same grid: the rank that waited least, 17 ms against 18-37 ms."""
    spike = [(0.0587, 0.0678, 0.0149, 0.005), (0.0069, 0.0637, 0.0144, 0.00747), (0.0547, 0.0681, 0.0148, 0.0081)]
    spike.append((0.0565, 0.068, 0.0149, 0.0081))
    waits = [{"blocks": [[3, 3, cpu]], "covered": [[2, 20]], "at_most_s": 0.005} for *_, cpu in spike]
    rows = [dict(collective_row(r, c, 3, s, w), cpu_wait=waits[r]) for r, (c, w, s, _) in enumerate(spike)]
    (once,) = jobview.summarize(rows)["waited_for"]
    assert once["rank"] == 1 and once["vs_median"] == 3.3, once
    # F14: the others waited for a CPU 11-15 ms in that step, rank 1 5 ms at most: its extra wait for
    # a CPU, past theirs, is none, and their 34.2 ms longer in collectives is all the spike's.
    spike = [(0.032, 0.0453, 0.0158, 0.01106), (0.0067, 0.0601, 0.0168, 0.005), (0.0506, 0.0686, 0.0175, 0.01497)]
    spike.append((0.0409, 0.056, 0.0162, 0.0116))
    waits = [{"blocks": [[3, 3, cpu]], "covered": [[2, 20]], "at_most_s": 0.005} for *_, cpu in spike]
    rows = [dict(collective_row(r, c, 3, s, w), cpu_wait=waits[r]) for r, (c, w, s, _) in enumerate(spike)]
    (once,) = jobview.summarize(rows)["waited_for"]
    assert once["rank"] == 1, once
    # F19: rank 1's own work 50 ms (less its 20 ms waiting for a CPU) against the others' 18 ms with
    # their waits for a CPU in it: refused by 3x theirs; against theirs less those waits (8.2-16 ms), named.
    spike = [(0.07334, 0.08179, 0.0165, 0.00027), (0.00505, 0.07465, 0.0165, 0.0199)]
    spike += [(0.05606, 0.07432, 0.0165, 0.0079), (0.05441, 0.083, 0.0165, 0.01298)]
    waits = [{"blocks": [[3, 3, cpu]], "covered": [[2, 20]], "at_most_s": 0.005} for *_, cpu in spike]
    rows = [dict(collective_row(r, c, 3, s, w), cpu_wait=waits[r]) for r, (c, w, s, _) in enumerate(spike)]
    (once,) = jobview.summarize(rows)["waited_for"]
    assert once["rank"] == 1 and "against 8.2-16 ms, 20 ms more waiting for a CPU" in once["evidence"], once
    healthy = [(0.0292, 0.0397), (0.037, 0.0447), (0.017, 0.0276), (0.0179, 0.0264)]
    job = jobview.summarize([collective_row(r, c, 3, 0.015, w) for r, (c, w) in enumerate(healthy)])
    assert job["waited_for"] == [] and job["slow_ranks"] == []


EVAL = [(0.0107, 0.4432, 0.02495), (0.4187, 0.4411, 0.02439), (0.3898, 0.4357, 0.02537)]


def test_in_lockstep_a_rank_the_others_waited_for_in_one_window_of_a_loaded_machine_is_no_finding():
    """Below half the others' median and three spreads clear of them was tried as a second way to
    name a rank (a whole-step-slow rank beside a busy process waited 0.40 of the others' median and
    was missed) and withdrawn: a healthy 4-rank DDP job of 14 ms steps beside a loaded suite had a
    rank preempted in its window, 22 ms in collectives against 46-53 ms, and was told it is the one
    the others wait for. Three recorded steps cannot tell a rank's slowness from the machine's."""
    waits = (0.174, 0.180, 0.074, 0.204)
    rows = [collective_row(r, c, 5, 0.1088, 0.504) for r, c in enumerate(waits)]
    job = jobview.summarize(rows)
    assert job["slow_ranks"] == [] and job["no_rank_stands_out"].endswith(
        "that is not below 0.4 of the others' median (72 ms)"
    ), job["no_rank_stands_out"]
    # Without the busy process: 16 ms against 162-172 ms, named.
    first = [collective_row(r, c, 5, 0.0637, 0.372) for r, c in enumerate((0.1624, 0.1631, 0.0156, 0.172))]
    (slow,) = jobview.summarize(first)["slow_ranks"]
    assert slow["rank"] == 2 and slow["level"] == 0.4 and slow["test"].endswith("median and beyond their spread")


def test_in_lockstep_a_rank_whose_window_was_shorter_is_not_the_one_the_others_wait_for():
    """A healthy 4-rank DDP job beside a loaded suite: rank 0 spent 21 ms in collectives against
    45-57 ms, 0.395 of the others' median, and was named; its own time outside collectives was
    8.2 ms against 8.0-10.4 ms, and its window 29 ms against 55-65 ms: the others waited for its
    profiler's start or stop, outside its window. Rank 3 of the same job reading slow data spent
    218 ms of its own against 14-21 ms, in windows alike: named. (Numbers of the two runs.)"""
    healthy = [(0.0212, 0.0294, 0.0164), (0.0454, 0.0547, 0.0179), (0.05655, 0.06455, 0.0187), (0.0536, 0.064, 0.0165)]
    job = jobview.summarize([collective_row(r, c, 5, s, w) for r, (c, w, s) in enumerate(healthy)])
    assert job["slow_ranks"] == [], job["slow_ranks"]
    assert job["no_rank_stands_out"].endswith(
        "rank 0 waited least, 21 ms against 45-57 ms on the other ranks, and is no finding: its own time in the "
        "window outside collectives, 8.2 ms, is not longer than the others' (9.3 ms) by half their extra wait: "
        "their windows were longer (55-65 ms against its 29 ms), each rank's profiler starting and stopping at "
        "its own moment"
    ), job["no_rank_stands_out"]
    slow = [(0.2338, 0.248, 0.0777), (0.2372, 0.2585, 0.0787), (0.2393, 0.2531, 0.0779), (0.0262, 0.2447, 0.0781)]
    (found,) = jobview.summarize([collective_row(r, c, 5, s, w) for r, (c, w, s) in enumerate(slow)])["slow_ranks"]
    assert found["rank"] == 3 and found["method"] == "collectives"


def test_in_lockstep_a_rank_the_machine_held_is_not_the_one_the_others_wait_for():
    """The findings benchmark, a healthy 2-rank DDP job of 5 ms steps beside two CPU hogs: rank 0 spent
    2.5 ms in collectives against 17 ms, and its own time, 19.0 ms against 9.1 ms, held 9.0 ms of
    waiting for a CPU against 0.6 ms. It was named; its wait for a CPU is the machine's, not its work."""

    def row(rank: int, collective_s: float, window_s: float, step_s: float, waits: tuple) -> dict:
        cpu_wait = {"waited": [[3 + i, wait] for i, wait in enumerate(waits)], "covered": [[2, 20]], "at_most_s": 0.005}
        return dict(collective_row(rank, collective_s, 5, step_s, window_s), cpu_wait=cpu_wait)

    held = (0.006672, 0.00001, 0.002322)
    rows = [row(0, 0.0025188, 0.021516, 0.00489, held), row(1, 0.0166797, 0.025761, 0.00591, (0.000566, 0.0, 0.000044))]
    job = jobview.summarize(rows)
    assert job["slow_ranks"] == []
    assert job["no_rank_stands_out"].endswith(
        "rank 0 waited least, 2.5 ms against 17 ms on rank 1, and is no finding: its own time in the window outside "
        "collectives, less the 8.4 ms it waited for a CPU past the others, 11 ms, is not longer than the others' "
        "(9.1 ms) by half their extra wait: the machine held it, not its work"
    ), job["no_rank_stands_out"]
    # The same waits in collectives, the same window, and no wait for a CPU: its own work, named.
    rows[0] = row(0, 0.0025188, 0.021516, 0.00489, (0.0, 0.0, 0.0))
    (slow,) = jobview.summarize(rows)["slow_ranks"]
    assert slow["rank"] == 0 and slow["rule"] == "total_time"


def test_in_lockstep_no_rank_stands_out_says_why_the_collectives_name_none_not_the_alike_step_times():
    """The findings benchmark: a DDP rank sleeping 30 % of a 50 ms step more was told "less than 1.00 ms
    apart, within what the host's scheduling does to alike processes", true of lockstep step times always."""
    rows = [collective_row(r, s, 5, 0.0734, 0.234) for r, s in enumerate((0.0655, 0.0291, 0.066, 0.0641))]
    job = jobview.summarize(rows)
    assert job["slow_ranks"] == [] and job["slow_rank_verdict"]["found"] is False
    assert job["no_rank_stands_out"] == (
        "in lockstep (the others spent 28% of their window in collectives), rank 1 waited least, 29 ms against "
        "64-66 ms on the other ranks, and is no finding: that is not below 0.4 of the others' median (26 ms)"
    )
    rows = [collective_row(r, s, 5, 0.0734, 0.234) for r, s in enumerate((0.0655, 0.0051, 0.066, 0.0641))]
    near = jobview.summarize(rows)["no_rank_stands_out"]
    assert near.endswith(
        "the others waited 20.1 ms a recorded step longer, under 0.3 of the job's 73.4 ms median "
        "step (the order in which alike ranks reach a collective moves their waits that much)"
    )
    apart = jobview.summarize([dict(collective_row(r, 0.0, 5), collective_s=None) for r in range(2)])
    assert "lockstep" not in apart["no_rank_stands_out"], "no collectives measured: the step times' reason"


def test_collectives_that_name_no_rank_leave_the_step_times_their_say():
    """Ranks that meet in a collective now and then (a metric's all-reduce, a pipeline's sends) spend
    a share of their window in it without running in lockstep: a rank slower in every step is named
    by its step times, as before the collectives' reason existed."""
    import random

    rng = random.Random(5)

    def row(rank: int, factor: float, collective_s: float) -> dict:
        durations = [0.020 * factor * (1 + rng.gauss(0, 0.03)) for _ in range(2, 41)]
        window = dict(WINDOW, aftercare_steps=None)
        tool = stepstats.ToolSteps([window], steps=40)
        return {
            "rank": rank,
            "steps": 40,
            "windows": [window],
            "step_stats": stepstats.rank_stats(durations, tool),
            "collective_s": collective_s,
            "window_s": 0.2,
            "t": jobview.Steps(2, durations, tool),
        }

    job = jobview.summarize([row(0, 1.0, 0.030), row(1, 1.3, 0.025)], steps_of=lambda p: p["t"])
    (found,) = job["slow_ranks"]
    assert found["rank"] == 1 and found["method"] == "step_times"
    assert "no_rank_stands_out" not in job


def test_spikes_evenly_apart_are_told_as_a_period_and_two_or_uneven_ones_are_not():
    """A 3-rank DDP job whose rank 0 evaluates for 0.4 s every 6 steps: spikes at steps 7, 13, 19,
    each named alone, and the next suggestion the next one; the period says where to look."""

    def job_with(spiky: dict) -> dict:
        stats = stepstats.rank_stats(durations_with(spiky, steps=40, typical=0.025))
        return jobview.summarize([{"rank": 0, "steps": 40, "step_stats": stats}])

    periodic = job_with({7: 0.42, 13: 0.43, 19: 0.42, 25: 0.41})
    assert periodic["spike_period"] == {"every": 6, "steps": [7, 13, 19, 25]}
    assert periods.text(periodic["spike_period"]) == (
        "the spikes are 6 steps apart (steps 7, 13, 19, 25): what the job does every 6 steps (an evaluation, "
        "logging, a save, a new data shard) is where to look"
    )
    assert job_with({7: 0.42, 13: 0.43})["spike_period"] is None, "two spikes are a distance, not a period"
    assert job_with({7: 0.42, 13: 0.43, 20: 0.42})["spike_period"] is None
    assert job_with({7: 0.42, 8: 0.43, 9: 0.42})["spike_period"] is None, "a stall over steps is no period"


def test_a_spike_s_next_run_holds_the_step_beside_it_and_every_rank_that_waits_in_collectives():
    """Rank 1 of a 2-rank DDP job slept 150 ms in step 25; rank 0 waited for it in step 26, its
    worst spike. The run suggested on rank 0's step 26 alone held only the wait."""
    rows = [
        {"rank": 0, "steps": 40, "step_stats": stepstats.rank_stats(durations_with({26: 0.1995}, steps=40))},
        {"rank": 1, "steps": 40, "step_stats": stepstats.rank_stats(durations_with({25: 0.1978}, steps=40))},
    ]
    job = jobview.summarize(rows, command=["python", "job.py"])
    assert job["suggestions"] == ["npuprof-run --skip-first 24 --active 2 -- python job.py"]
    four = [dict(rows[0], rank=rank) for rank in (1, 2, 3)]
    lone = [{"rank": 0, "steps": 40, "step_stats": stepstats.rank_stats(durations_with({}, steps=40))}, *four]
    alone = jobview.summarize(lone, command=["python", "job.py"])
    assert alone["suggestions"] == ["npuprof-run --skip-first 25 --active 1 --ranks 1-3 -- python job.py"]
    waiting = [dict(row, collective_s=0.01, window_s=0.1) for row in lone]
    together = jobview.summarize(waiting, command=["python", "job.py"])
    assert together["suggestions"][0] == "npuprof-run --skip-first 25 --active 1 -- python job.py"


def test_a_slowdown_no_window_recorded_gets_a_run_on_its_slow_steps():
    job = {"steps": 80, "ranks": 2, "window_steps": [{"steps": [[6, 8]], "ranks": [0, 1]}]}
    slow = {"step": 41, "ranks": [1], "every_rank": False, "back_at": None}
    assert nextruns.slowdown_runs(job, [slow], ["python", "job.py"], {}, "prefix") == [
        "npuprof-run --skip-first 41 --active 2 --ranks 1 -- python job.py"
    ]
    short = dict(slow, every_rank=True, ranks=[0, 1], back_at=43)  # slow in steps 41-42 only
    assert nextruns.slowdown_runs(job, [short], ["python", "job.py"], {}, "prefix") == [
        "npuprof-run --skip-first 40 --active 2 -- python job.py"
    ]
    seen = dict(slow, recorded=[[50, 52]])  # slowdowns.recorded: a window holds its slow steps
    assert nextruns.slowdown_runs(job, [seen], ["python", "job.py"], {}, "prefix") == []


def test_the_slowest_step_a_window_recorded_is_named_without_the_profiler_s_start():
    """A spike's suggested run records it: the step is the tool's then, and the answer names it
    (less the profiler's start, in the first recorded step's time) instead of calling its time the
    profiler's cost. Steps under the spike bar are not named."""
    window = {"first_step": 30, "last_step": 30, "complete": True, "start_s": 1.25}
    tool = stepstats.ToolSteps([window], steps=60)
    durations = durations_with({30: 1.58}, steps=60, typical=0.025)
    row = {"rank": None, "steps": 60, "windows": [window], "step_stats": stepstats.rank_stats(durations, tool)}
    job = jobview.summarize([row], steps_of=lambda p: jobview.Steps(2, durations, tool))
    (line,) = [line for line in job["tool_steps"]["lines"] if line.startswith("steps 29-31")]
    assert (
        "; the slowest step a window recorded, step 30 (330.0 ms without the profiler's start, its other costs "
        "in it: 13.2x the median), is in its trace;" in line
    ), line
    plain = durations_with({30: 1.26}, steps=60, typical=0.025)
    job = jobview.summarize([row], steps_of=lambda p: jobview.Steps(2, plain, tool))
    assert "the slowest step a window recorded" not in job["tool_steps"]["lines"][0]


def test_a_spike_of_the_job_s_last_step_on_some_ranks_in_lockstep_is_told_apart_at_the_job_s_end():
    """F19, beside two CPU hogs: a healthy 4-rank DDP job's last step (45) took 128 ms on ranks 2-3
    against a 34 ms median, 27-28 ms on ranks 0-1, and was named a spike: the ranks done first exit
    beside those still in the step. The same on every rank, or on ranks that train alone, stays one."""

    def rows(last: dict[int, float], collective_s: float = 0.05) -> list[dict]:
        made = []
        for rank in range(4):
            durations = durations_with({45: last.get(rank, 0.034)}, steps=45, typical=0.034)
            stats = stepstats.rank_stats(durations, stepstats.ToolSteps([WINDOW], steps=45))
            made.append(dict(collective_row(rank, collective_s, 11), steps=45, step_stats=stats, t=durations))
        return made

    def told(made: list[dict]) -> dict:
        return jobview.summarize(made, steps_of=lambda p: jobview.Steps(2, p["t"], stepstats.ToolSteps([WINDOW], 45)))

    job = told(rows({2: 0.128, 3: 0.127}))
    assert job["spikes"] == [], job["spikes"]
    (end,) = [note for note in jobview.notes(job) if note["kind"] == "job_end_steps"]
    assert end["ranks"] == [2, 3] and end["steps"] == [45] and end["evidence"]["ended_ranks"] == [0, 1], end
    assert end["text"].startswith("step 45, the job's last (3.8x the median on ranks 2-3): ranks 0-1 ended it without")
    every = told(rows({rank: 0.128 for rank in range(4)}))
    assert [spike["step"] for spike in every["spikes"]] == [45], "a stall that held every rank is judged as any step"
    alone = told(rows({2: 0.128, 3: 0.127}, collective_s=0.001))
    assert [spike["ranks"] for spike in alone["spikes"]] == [[2, 3]], "ranks apart wait for no one at the end"
