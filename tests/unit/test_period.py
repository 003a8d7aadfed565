"""The job's own periodic work (an evaluation, a save every N steps) is told as its period on a
busy machine too: the spikes a wait for a CPU explains count toward it, and a spike beside the
period does not hide it; three spikes evenly apart by chance among others are no period."""

from __future__ import annotations

from npuprof_launch.common import stepstats
from npuprof_launch.launcher import jobview, periods

TYPICAL = 0.025


def job_with(spiky: dict[int, float], waits: dict[int, float] | None = None, steps: int = 60) -> dict:
    """One process whose steps in ``spiky`` take that long, each waiting ``waits[step]`` for a CPU."""
    durations = [spiky.get(step, TYPICAL + step * 1e-7) for step in range(2, steps + 1)]
    blocks = [[step, step, seconds] for step, seconds in sorted((waits or {}).items())]
    cpu_wait = {"blocks": blocks, "covered": [[2, steps]], "at_most_s": 0.0} if waits is not None else None
    stats = stepstats.rank_stats(durations, cpu_wait=cpu_wait)
    return jobview.summarize([{"rank": 0, "steps": steps, "step_stats": stats}])


def test_an_evaluation_every_10_steps_stays_a_period_when_cpu_waits_explain_some_of_its_steps():
    evals = {11: 0.40, 21: 0.41, 31: 0.40, 41: 0.42, 51: 0.40}
    waited = {21: 0.39, 41: 0.40}  # a busy machine: these two evaluation steps waited for a CPU
    job = job_with(evals, waited)
    assert job["spike_period"] == {"every": 10, "steps": [11, 21, 31, 41, 51]}
    assert [s["step"] for s in job["undecidable_spikes"]] == [], "the period's steps are the job's work"


def test_a_spike_beside_the_period_does_not_hide_it_but_three_by_chance_among_others_are_none():
    assert job_with({11: 0.4, 21: 0.4, 31: 0.4, 41: 0.4, 47: 0.5})["spike_period"] == {
        "every": 10,
        "steps": [11, 21, 31, 41],
    }
    assert job_with({7: 0.4, 13: 0.4, 19: 0.4, 40: 0.5, 52: 0.4})["spike_period"] is None
    assert job_with({7: 0.4, 13: 0.4, 19: 0.4})["spike_period"] == {"every": 6, "steps": [7, 13, 19]}


def test_spikes_a_cpu_wait_explains_off_the_period_are_the_machine_s_and_do_not_hide_it():
    """Seen beside two CPU hogs: evaluations at steps 11, 21, ..., 51, and five steps (32-35, 54)
    whose waits for a CPU explain them; the period was lost among them."""
    noise = {32: 0.3, 33: 0.3, 34: 0.3, 35: 0.3, 54: 0.3}
    job = job_with({11: 0.4, 21: 0.4, 31: 0.4, 41: 0.4, 51: 0.4, **noise}, waits={s: 0.29 for s in noise})
    assert job["spike_period"] == {"every": 10, "steps": [11, 21, 31, 41, 51]}
    assert sorted(s["step"] for s in job["undecidable_spikes"]) == [32, 33, 34, 35, 54]


def test_a_few_evenly_spaced_steps_that_only_waited_for_a_cpu_are_no_period():
    """Healthy jobs beside two CPU hogs were told "every 2 steps (21, 23, 25)": three steps a wait
    for a CPU explains, evenly spaced by chance. Five such steps still make a period (an evaluation
    every 10 steps whose every step waited for a CPU on 4 ranks)."""
    few = {21: 0.3, 23: 0.3, 25: 0.3}
    assert job_with(few, waits={s: 0.29 for s in few})["spike_period"] is None
    many = {11: 0.4, 21: 0.4, 31: 0.4, 41: 0.4, 51: 0.4}
    assert job_with(many, waits={s: 0.39 for s in many})["spike_period"] == {"every": 10, "steps": [11, 21, 31, 41, 51]}


def test_evenly_spaced_steps_of_different_ranks_that_only_waited_for_a_cpu_are_no_period():
    """Eight 0.5 ms ranks training alone beside CPU hogs were told "every 2 steps (8, 10, 12, 14,
    16)": five steps a wait for a CPU explains, on ranks 3 and 6, 4, 4, 3, 4. A job's periodic work
    is a rank's own, or every rank's: the same waits on one rank, or on all, stay a period."""

    def rank(number: int, spiky: dict[int, float]) -> dict:
        durations = [spiky.get(step, TYPICAL + step * 1e-7) for step in range(2, 61)]
        blocks = [[step, step, seconds - TYPICAL] for step, seconds in sorted(spiky.items())]
        stats = stepstats.rank_stats(durations, cpu_wait={"blocks": blocks, "covered": [[2, 60]], "at_most_s": 0.0})
        return {"rank": number, "steps": 60, "step_stats": stats}

    scattered = {8: (3, 6), 10: (4,), 12: (4,), 14: (3,), 16: (4,)}
    rows = [rank(r, {step: 0.3 for step, ranks in scattered.items() if r in ranks}) for r in range(8)]
    assert jobview.summarize(rows)["spike_period"] is None
    one = [rank(r, {step: 0.3 for step in scattered} if r == 4 else {}) for r in range(8)]
    assert jobview.summarize(one)["spike_period"] == {"every": 2, "steps": [8, 10, 12, 14, 16]}


def test_one_stall_and_two_steps_that_waited_for_a_cpu_are_no_period():
    """A server beside two CPU hogs stalled once, at step 30, and six steps waited for a CPU (10,
    18, 19, 20, 21, 46): it was told "every 10 steps (10, 20, 30)". The machine's waits fill in a
    progression of the job's own spikes, never make one; two of its own and one wait still do."""
    noise = {10: 0.3, 18: 0.3, 19: 0.3, 20: 0.3, 21: 0.3, 46: 0.3}
    job = job_with({30: 0.4, **noise}, waits={s: 0.29 for s in noise})
    assert job["spike_period"] is None and [s["step"] for s in job["spikes"]] == [30]
    job = job_with({30: 0.4, 40: 0.4, **noise}, waits={s: 0.29 for s in noise})
    assert job["spike_period"] == {"every": 10, "steps": [10, 20, 30, 40]}


def test_a_stall_and_a_step_far_quicker_are_not_one_work_done_every_few_steps():
    """CI, beside the suite: a 1 ms job's 1.5 s stall at step 7, a busy machine's 9 ms step 11 and a
    wait for a CPU at 15 were told "every 4 steps (7, 11, 15)", and the stall got no run. Spikes of
    one work done again are alike (periods.LIKE_RATIO); a save's 0.4 s and 0.9 s are."""
    job = job_with({7: 1500 * TYPICAL, 11: 9 * TYPICAL, 15: 8 * TYPICAL}, waits={15: 7.9 * TYPICAL})
    assert job["spike_period"] is None and [s["step"] for s in job["spikes"]] == [7, 11], job["spikes"]
    job = job_with({7: 0.9, 11: 0.4, 15: 0.4}, waits={15: 0.39})
    assert job["spike_period"] == {"every": 4, "steps": [7, 11, 15]}


def test_a_period_a_window_recorded_a_step_of_gets_no_run_on_its_next_spike():
    """Following a period's spike's next: run, the window recorded step 21 and the answer sent the
    user to step 51, then to 11, in circles: the trace holds one of the period's steps already."""
    window = {"first_step": 21, "last_step": 21, "complete": True, "start_s": 0.0}
    tool = stepstats.ToolSteps([window], steps=80)
    evals = (31, 41, 51, 61, 71)
    durations = [0.17 + step * 1e-5 if step in (21, *evals) else TYPICAL + step * 1e-7 for step in range(2, 81)]
    row = {"rank": 0, "steps": 80, "windows": [window], "step_stats": stepstats.rank_stats(durations, tool)}
    job = jobview.summarize([row], ["python", "job.py"], steps_of=lambda p: jobview.Steps(2, durations, tool))
    assert job["spike_period"] == {"every": 10, "steps": list(evals)}
    assert job["suggestions"] == []
    lone = [0.17 if step == 31 else TYPICAL + step * 1e-7 for step in range(2, 81)]
    row = {"rank": 0, "steps": 80, "windows": [window], "step_stats": stepstats.rank_stats(lone, tool)}
    job = jobview.summarize([row], ["python", "job.py"], steps_of=lambda p: jobview.Steps(2, lone, tool))
    assert job["suggestions"] == ["npuprof-run --skip-first 30 --active 1 -- python job.py"], "no period: a run"


def ranks_with(slow: dict[int, dict[int, float]], steps: int = 45) -> dict:
    """Four ranks of ~32 ms steps, rank r's steps in ``slow[r]`` that long, with their step times."""
    rows, series = [], {}
    for rank in range(4):
        durations = [slow.get(rank, {}).get(step, 0.032 + (step % 7) * 1e-4) for step in range(2, steps + 1)]
        tool = stepstats.ToolSteps(steps=steps)
        rows.append({"rank": rank, "steps": steps, "step_stats": stepstats.rank_stats(durations, tool)})
        series[rank] = jobview.Steps(2, durations, tool)
    return jobview.summarize(rows, steps_of=lambda p: series[p["rank"]])


def saves_at(seconds: float) -> dict[int, dict[int, float]]:
    """Every rank's steps 11, 21, 31, 41 take ``seconds`` (a save every 10 steps); rank 3's 31 a spike."""
    saves = {step: seconds for step in (11, 21, 31, 41)}
    return {rank: {**saves, 31: 0.0986} if rank == 3 else saves for rank in range(4)}


def test_a_checkpoint_every_10_steps_just_under_the_bar_is_the_period_of_its_one_spike():
    """Beside two CPU hogs a 4-rank DDP job saving a checkpoint every 10 steps ran those steps at
    88-99 ms against a 32 ms median, 2.8-3.05x: rank 3's step 31 alone, at 3.02x, was named a spike
    off any period (docs/benchmarks.md, F19)."""
    job = ranks_with(saves_at(0.090))
    assert [spike["step"] for spike in job["spikes"]] == [31]
    assert job["spike_period"] == {"every": 10, "steps": [11, 21, 31, 41], "near": [11, 21, 41]}
    assert periods.text(job["spike_period"]).startswith(
        "the spikes are 10 steps apart (steps 11, 21, 31, 41; 11, 21, 41 under the spike bar, at 2x the median"
    )
    # Under 2x the median, or three steps of a progression, or near steps with no spike on their
    # progression: the spike stays alone.
    low = ranks_with(saves_at(0.060))
    assert low["spike_period"] is None and [spike["step"] for spike in low["spikes"]] == [31]
    assert ranks_with({3: {21: 0.070, 31: 0.0986, 41: 0.070}})["spike_period"] is None
    off = ranks_with({3: {10: 0.070, 20: 0.070, 30: 0.070, 40: 0.070, 37: 0.0986}})
    assert off["spike_period"] is None and [spike["step"] for spike in off["spikes"]] == [37]


def test_near_steps_of_ranks_that_share_none_are_no_period():
    """A job's periodic work is a rank's own, or every rank's: 2x steps of other ranks at each of a
    progression's steps are the machine's spread."""
    job = ranks_with({0: {11: 0.070}, 1: {21: 0.070}, 2: {41: 0.070}, 3: {31: 0.0986}})
    assert job["spike_period"] is None and [spike["step"] for spike in job["spikes"]] == [31]
