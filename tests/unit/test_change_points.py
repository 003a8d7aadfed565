"""Slowdowns (launcher/slowdowns.py): a change point in a process's step times, told apart from
spikes and from noise, on synthetic step times with a seeded generator."""

from __future__ import annotations

import random

import pytest

from npuprof_launch.launcher import slowdowns


def steps(count: int, *, change: int | None = None, factor: float = 1.0, noise: float = 0.1, seed: int = 0, **more):
    """Durations of steps 2, 3, ...: 10 ms with half-normal noise, ``factor`` times from ``change``."""
    rng = random.Random(seed)
    durations = []
    for step in range(2, count + 2):
        value = 0.01 * (1 + abs(rng.gauss(0, noise)))
        if change is not None and step >= change:
            value *= factor
        if step == more.get("spike"):
            value *= 10
        if more.get("back") and step >= more["back"]:
            value /= factor
        durations.append(value)
    return durations


@pytest.mark.parametrize("factor", [1.2, 1.5, 3.0])
@pytest.mark.parametrize("count, change", [(40, 25), (300, 200), (5000, 4000)])
def test_a_slowdown_is_found_at_its_step(count, change, factor):
    for seed in range(5):
        found = slowdowns.find(steps(count, change=change, factor=factor, seed=seed))
        assert found is not None, (count, change, factor, seed)
        assert abs(found["step"] - change) <= max(2, found["block"]), found
        assert found["ratio"] == pytest.approx(factor, rel=0.1) and found["to_end"]
        assert found["p"] < slowdowns.P_LEVEL and found["test"].startswith("Mann-Whitney")


def test_healthy_runs_spikes_and_too_few_steps_give_none():
    for seed in range(30):
        assert slowdowns.find(steps(200, noise=0.4, seed=seed)) is None, seed
    assert slowdowns.find(steps(200, spike=100)) is None, "a spike is no slowdown"
    assert slowdowns.find(steps(15, change=10, factor=3)) is None, "too few steps on a side"
    assert slowdowns.find(steps(200, change=100, factor=1.08)) is None, "below the ratio a shared machine drifts"


def test_the_tools_steps_and_the_warm_up_are_left_out():
    durations = steps(100)
    for index in range(60, 64):  # a window's steps: the profiler's own cost
        durations[index] *= 5
    durations[0] = durations[1] = 1.0  # the warm-up
    assert slowdowns.find(durations, tool_steps=range(61, 67)) is None


def test_a_slowdown_that_ends_says_where():
    found = slowdowns.find(steps(300, change=100, factor=2.0, back=200))
    assert found is not None and not found["to_end"] and 195 <= found["back_at"] <= 205, found


def test_ranks_slowing_at_one_step_are_one_finding_and_its_words():
    one = {"ratio": 1.5, "before_s": 0.01, "after_s": 0.015, "to_end": True, "back_at": None, "block": 1}
    evidence = {"p": 1e-6, "test": "t", "steps_before": 30, "steps_after": 30}
    found = [{**one, **evidence, "rank": rank, "step": 41 + rank % 2} for rank in range(4)]
    (grouped,) = slowdowns.group(found, ranks_timed=4)
    assert grouped["every_rank"] and grouped["step"] == 41 and len(grouped["evidence"]) == 4
    assert slowdowns.text(grouped) == (
        "a slowdown from step 41: every rank's step took 15.0 ms against 10.0 ms before (1.50x), to the end"
    )
    (alone,) = slowdowns.group(found[1:2], ranks_timed=4)
    assert slowdowns.text(alone).startswith("a slowdown from step 42: rank 1's step took")


def test_a_slowdown_its_thread_spent_waiting_for_a_cpu_is_told_apart_and_the_jobs_own_is_named(tmp_path):
    """A healthy 20 ms job beside a machine that got busy was told "a slowdown from step 45" (1.2x):
    its thread waited for a CPU that much more from then on (the record's cpu_wait, by blocks of
    steps). Without those waits there is no change point: told apart, no finding. A slowdown of the
    job's own, 3x, stays one with the same waits."""
    from npuprof_launch.common import steptimes

    def row(name: str, durations: list[float]) -> dict:
        steptimes.append(str(tmp_path / name), durations)
        blocks = [[first, first + 4, 0.02] for first in range(45, 101, 5)]  # 4 ms a step from step 45
        return {
            "rank": 0,
            "step_times": name,
            "cpu_wait": {"blocks": blocks, "covered": [[2, 100]], "at_most_s": 0.005},
        }

    busy = [0.020 + (0.004 if step >= 45 else 0.0) for step in range(2, 101)]
    found, waited = slowdowns.of_processes([row("busy.bin", busy)], str(tmp_path))
    assert found == [] and len(waited) == 1, (found, waited)
    assert waited[0]["step"] == 45 and abs(waited[0]["cpu_wait_s"] - 0.004) < 2e-4
    assert slowdowns.cpu_wait_text(waited[0]).endswith(
        "(1.20x), to the end: 4.0 ms a step more waiting for a CPU after it than before; no slowdown without it"
    )
    own = [0.020 * (3 if step >= 45 else 1) + (0.004 if step >= 45 else 0.0) for step in range(2, 101)]
    found, waited = slowdowns.of_processes([row("own.bin", own)], str(tmp_path))
    assert [item["step"] for item in found] == [45] and waited == [] and "cpu_wait_s" not in found[0]


@pytest.mark.parametrize("windows", [[], [{"first_step": 900, "last_step": 902, "complete": True}]])
def test_a_long_run_is_judged_alike_with_numpy_and_without(monkeypatch, windows):
    """Past NUMPY_FROM_STEPS the steps are taken by a mask and the medians with numpy, where it is
    installed; without it, by slices and sorts: the same slowdown, field by field."""
    pytest.importorskip("numpy")
    from npuprof_launch.common import stepstats

    durations = steps(20_000, change=12_345, factor=1.3, back=17_000, spike=5_000)
    durations[700] = 0.0  # a step of no time is no step of the job
    tools = stepstats.ToolSteps(windows, len(durations) + 1)
    with_numpy = slowdowns.find(durations, tools)
    monkeypatch.setattr(slowdowns, "_numpy", lambda: None)
    without = slowdowns.find(durations, tools)
    assert with_numpy is not None and with_numpy == pytest.approx(without), (with_numpy, without)
    assert with_numpy["step"] == without["step"] and type(with_numpy["step"]) is int


def waits_of(per_step: dict[int, float], count: int, at_most: float = 0.005) -> dict:
    """A record's cpu_wait: a kept block for each step of ``per_step``, the rest covered, unkept."""
    blocks = [[step, step, seconds] for step, seconds in sorted(per_step.items())]
    return {"blocks": blocks, "covered": [[2, count + 1]], "at_most_s": at_most}


def test_the_job_s_own_slowdown_is_found_and_placed_with_its_waits_for_a_cpu_taken_off():
    """Beside CPU hogs a server's calls went from 28 to 57 ms at call 35 and the step times placed
    nothing: its slowest steps before were waits. A job's burst of waits at steps 33-35 placed its
    slowdown at step 41 at 33. A wait read into one step after the slowdown's start moves nothing."""
    base = steps(80, change=35, factor=2.0, seed=3)
    waited = {step: 0.03 for step in range(8, 34, 2)}  # every other step before it waited 30 ms
    hidden = [d + waited.get(step, 0.0) for step, d in enumerate(base, start=2)]
    assert slowdowns.find(hidden, None) is None or slowdowns.find(hidden, None)["step"] != 35
    found = slowdowns.judged(hidden, [], waits_of(waited, 80))
    assert found["step"] == 35 and "cpu_wait_s" not in found

    late = steps(80, change=41, factor=2.0, seed=4)
    burst = {33: 0.05, 34: 0.04, 35: 0.04}
    early = [d + burst.get(step, 0.0) for step, d in enumerate(late, start=2)]
    assert slowdowns.judged(early, [], waits_of(burst, 80))["step"] == 41

    one = {45: 0.0185}  # nearly the whole of a slow step's time read as its wait
    kept = slowdowns.judged(late, [], waits_of(one, 80))
    assert kept["step"] == 41 and kept["ratio"] > 1.8


def test_waits_kept_early_and_unknown_late_make_no_slowdown_of_a_healthy_job():
    """The record keeps the longest waits: a healthy job that waited 5 ms a step early (kept) and
    up to 5 ms late (not kept, under the bound) has its own time 1.5x later counted as none."""
    healthy = [0.012 + 0.0001 * (step % 3) for step in range(2, 82)]
    early = {step: 0.005 for step in range(5, 40)}
    assert slowdowns.judged(healthy, [], waits_of(early, 80, at_most=0.005)) is None


def test_a_stage_s_processes_without_ranks_slowing_together_are_told_as_such():
    """Two rollout workers (no rank) slowed at step 27: told "every rank's step", no stage named."""
    one = {"step": 27, "before_s": 0.085, "after_s": 0.27, "ratio": 3.15, "to_end": True, "back_at": None}
    items = [{**one, "rank": None, "p": 1e-6, "test": "t", "steps_before": 20, "steps_after": 20, "block": 1}] * 2
    (slowdown,) = slowdowns.group(items, 2)
    assert slowdowns.text({**slowdown, "stage": "rollout"}) == (
        "a slowdown from step 27 of stage rollout: the steps of both processes took 270.0 ms against 85.0 ms "
        "before (3.15x), to the end"
    )


def test_a_slowdown_after_the_tool_s_steps_may_begin_among_them_and_a_window_that_holds_it_is_told():
    """A run on a slowdown's steps 41-42 (its next:) left steps 40-43 out as the tool's, and its
    answer placed the slowdown at step 44 and suggested another run there: in circles."""
    from npuprof_launch.common import stepstats

    durations = steps(80, change=40, factor=2.0, seed=5)
    window = {"first_step": 41, "last_step": 42, "complete": True}
    found = slowdowns.find(durations, stepstats.ToolSteps([window], len(durations) + 1))
    assert found["step"] == 44 and found["tool_before"] == [40, 43]
    (slowdown,) = slowdowns.group([{**found, "rank": None}], 1)
    slowdown["recorded"] = slowdowns.recorded(slowdown, [{"steps": [[41, 42]], "ranks": []}], 80)
    assert slowdown["recorded"] == [[41, 42]]
    said = slowdowns.text(slowdown)
    assert said.startswith("a slowdown from step 44 (it may begin in steps 40-43, the tool's, left out): ")
    assert said.endswith(", to the end; a window recorded steps 41-42 of it")
