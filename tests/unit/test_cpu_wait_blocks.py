"""The stepping thread's waits for a CPU: read by blocks of steps in the process (cpuwait.py),
taken off a spike before it is judged (findings.spike_with_cpu_wait), and a lockstep step that one
rank's wait explains told apart on every rank (jobview.py)."""

from __future__ import annotations

import random
import threading

import pytest

from npuprof_launch.common import findings, stepstats
from npuprof_launch.inprocess import cpuwait
from npuprof_launch.launcher import jobview


class Kernel:
    """A stand-in for the kernel's counters: the test says how much each block ran and waited."""

    def __init__(self) -> None:
        self.ns = 0
        self.ran_ns = 0
        self.works = True

    def read(self):
        return (self.ran_ns, self.ns) if self.works else None


def test_a_block_runs_from_the_step_after_a_reading_to_the_next_and_only_waits_of_5_ms_are_kept():
    kernel = Kernel()
    wait = cpuwait.CpuWait(kernel.read)
    times = [i * 0.01 for i in range(30)]  # 10 ms steps: a reading every 10 steps
    wait.note(1, times[:1])
    assert wait.at == 2, "the step time is not known yet: the next boundary"
    kernel.ns += 2_000_000
    wait.note(2, times[:2])
    assert wait.at == 12 and wait.kept == []
    kernel.ns += 40_000_000
    wait.note(12, times[:12])
    assert wait.kept == [[3, 12, 0.04]]
    assert wait.record() == {
        "blocks": [[3, 12, 0.04]],
        "covered": [[2, 12]],
        "at_most_s": cpuwait.KEPT_S,
        "ran": [],
        "waited": [],
    }


def test_the_time_on_a_cpu_is_kept_for_each_profiled_step_that_is_a_block_of_its_own():
    """A window's steps are blocks of one step each (the session reads at each): their time on a
    CPU is what lockstep.py compares across ranks; a block of several steps says nothing per step."""
    kernel = Kernel()
    wait = cpuwait.CpuWait(kernel.read)
    wait.note(1, [])
    for step, ran_ms, profiled in ((2, 20, True), (3, 26, True), (7, 80, True), (8, 21, True), (9, 30, False)):
        kernel.ran_ns += ran_ms * 1_000_000
        kernel.ns += 2_000_000  # 2 ms waited each time: under KEPT_S, no block
        wait.note(step, [], profiled=profiled)
    record = wait.record()
    assert record["ran"] == [[2, 0.02], [3, 0.026], [8, 0.021]], "steps 4-7 are one block, 9 not profiled"
    assert record["waited"] == [[2, 0.002], [3, 0.002], [8, 0.002]] and record["blocks"] == [], "each its own wait"
    steps = [2, 3, 8]  # a 0.5 ms job's 2 ms a step is the whole of its excess: the exact waits tell it
    assert stepstats.cpu_wait_in(record, steps) == pytest.approx(0.006)
    assert stepstats.cpu_wait_in({**record, "waited": [], "blocks": [[2, 3, 0.01]]}, steps) == 0.01, "blocks alone"


def test_the_longest_waits_are_kept_and_the_rest_bounded_by_the_longest_dropped():
    kernel = Kernel()
    wait = cpuwait.CpuWait(kernel.read)
    wait.note(1, [])
    for step in range(2, cpuwait.KEPT + 12):
        kernel.ns += step * 1_000_000
        wait.note(step, [])
    record = wait.record()
    assert len(record["blocks"]) == cpuwait.KEPT
    assert min(block[2] for block in record["blocks"]) > record["at_most_s"]
    assert record["at_most_s"] == pytest.approx(0.011), "dropped: the 5-11 ms waits, the 2-4 ms ones never kept"
    assert record["covered"] == [[2, cpuwait.KEPT + 11]]


def test_a_reading_on_another_thread_starts_anew_and_a_kernel_without_the_counter_stops_the_readings():
    kernel = Kernel()
    wait = cpuwait.CpuWait(kernel.read)
    wait.note(1, [])
    elsewhere = threading.Thread(target=wait.note, args=(5, []))
    elsewhere.start()
    elsewhere.join()
    kernel.ns += 50_000_000
    wait.note(9, [])
    assert wait.kept == [] and wait.record() is None, "the thread's own counter: no block across two threads"
    kernel.ns += 50_000_000
    wait.note(12, [])
    assert wait.kept == [[10, 12, 0.05]] and wait.record()["covered"] == [[10, 12]]
    kernel.works = False
    wait.note(13, [])
    assert wait.at == float("inf")


def test_the_real_counter_is_read_here():
    """This machine's kernel keeps the counter (Linux): the readings are of a real thread."""
    ran, waited = cpuwait.read_ns()
    assert isinstance(waited, int) and waited >= 0 and ran > 0
    sum(range(10**6))
    again = cpuwait.read_ns()
    assert again[1] >= waited and again[0] > ran, "it ran the sum in between"
    assert cpuwait.read_ns("/nonexistent/schedstat") is None


def durations_with(slow: dict[int, float], steps: int = 40) -> list[float]:
    rng = random.Random(3)
    return [slow.get(step, 0.020 * (1 + rng.gauss(0, 0.02))) for step in range(2, steps + 1)]


def test_a_spike_the_wait_explains_is_undecidable_and_one_it_does_not_is_the_jobs_with_the_wait_as_evidence():
    durations = durations_with({20: 0.120, 30: 0.300})
    cpu = {"blocks": [[18, 22, 0.110], [29, 31, 0.030]], "covered": [[2, 40]], "at_most_s": 0.005}
    stats = stepstats.rank_stats(durations, stepstats.ToolSteps([], steps=40), cpu)
    by_step = {spike["step"]: spike for spike in stats["spikes"]}
    assert by_step[20]["cpu_wait_s"] == 0.110 and by_step[20]["cpu_wait_steps"] == [18, 22]
    assert by_step[30]["cpu_wait_s"] == 0.030
    job = jobview.summarize([{"rank": 0, "steps": 40, "step_stats": stats}], command=["python", "train.py"])
    assert [spike["step"] for spike in job["spikes"]] == [30]
    assert (
        job["spikes"][0]["cpu_evidence"]
        == "rank 0: 30.0 ms in steps 29-31 waiting for a CPU, still 13.5x the median without it"
    )
    assert [(s["step"], s["cpu_wait"]) for s in job["undecidable_spikes"]] == [(20, True)]
    assert job["cpu_wait_lines"] and job["cpu_wait_lines"][0].startswith("step 20 (6.0x the median): rank 0: 110.0 ms")
    assert job["cpu_wait_lines"][0].endswith("waiting for a CPU; under the spike bar (59.9 ms) without it")
    assert job["suggestions"] == ["npuprof-run --skip-first 29 --active 1 -- python train.py"], "never the waited one"


def test_a_bound_is_taken_off_like_a_reading_and_a_step_no_reading_covers_is_judged_as_before():
    durations = durations_with({20: 0.120})
    bounded = {"blocks": [], "covered": [[2, 40]], "at_most_s": 0.090}
    stats = stepstats.rank_stats(durations, stepstats.ToolSteps([], steps=40), bounded)
    assert stats["spikes"][0]["cpu_wait_at_most"] is True
    verdict, text = findings.spike_with_cpu_wait(0.120, 0.020, stats["spikes"][0])
    assert not verdict and text.startswith("at most 90.0 ms in its block of steps waiting for a CPU")
    uncovered = {"blocks": [], "covered": [[25, 40]], "at_most_s": 0.090}
    stats = stepstats.rank_stats(durations, stepstats.ToolSteps([], steps=40), uncovered)
    assert "cpu_wait_s" not in stats["spikes"][0]
    assert [s["step"] for s in jobview.summarize([{"rank": 0, "steps": 40, "step_stats": stats}])["spikes"]] == [20]


def test_in_lockstep_one_ranks_wait_for_a_cpu_makes_the_step_undecidable_on_every_rank():
    """Rank 1 was runnable and unscheduled; ranks 0 and 2 waited for it inside a collective (not
    for a CPU): their spikes at that step are its wait too."""
    processes = []
    for rank, wait in ((0, 0.002), (1, 0.300), (2, 0.001)):
        durations = durations_with({20: 0.330})
        cpu = {"blocks": [[20, 20, wait]] if wait >= 0.005 else [], "covered": [[2, 40]], "at_most_s": 0.005}
        stats = stepstats.rank_stats(durations, stepstats.ToolSteps([], steps=40), cpu)
        processes.append({"rank": rank, "steps": 40, "step_stats": stats})
    job = jobview.summarize(processes, command=["python", "train.py"])
    assert job["spikes"] == [] and job["suggestions"] == []
    assert [(s["step"], s["ranks"]) for s in job["undecidable_spikes"]] == [(20, [0, 1, 2])]
    line = job["cpu_wait_lines"][0]
    assert line.startswith("step 20 (16.") and "the median): rank 1: 300.0 ms in step 20 waiting for a CPU" in line


def _rank(rank: int, slow: dict[int, float], wait: dict[int, float], **window) -> dict:
    cpu = {
        "blocks": [[step, step, seconds] for step, seconds in wait.items()],
        "covered": [[2, 40]],
        "at_most_s": 0.005,
    }
    stats = stepstats.rank_stats(durations_with(slow), stepstats.ToolSteps([], steps=40), cpu)
    return {"rank": rank, "steps": 40, "step_stats": stats, **window}


def test_another_ranks_short_wait_never_explains_a_stall():
    """The suite's [alone] failure: two ranks training alone; rank 1 slept 0.6 s in step 7, rank 0
    waited 40 ms for a CPU in its own spike there. Rank 0's spike is undecidable, rank 1's named."""
    alone = {"collective_s": 0.0, "window_s": 0.06}
    processes = [_rank(0, {7: 0.065}, {7: 0.040}, **alone), _rank(1, {7: 0.620}, {}, **alone)]
    job = jobview.summarize(processes, command=["python", "train.py"])
    assert [(s["step"], s["ranks"]) for s in job["spikes"]] == [(7, [1])]
    assert [(s["step"], s["ranks"], s["cpu_wait"]) for s in job["undecidable_spikes"]] == [(7, [0], True)]
    assert job["suggestions"] == ["npuprof-run --skip-first 6 --active 1 --ranks 1 -- python train.py"]


def test_out_of_lockstep_even_a_wait_as_long_as_the_stall_explains_only_its_own_rank():
    alone = {"collective_s": 0.0, "window_s": 0.06}
    processes = [_rank(0, {7: 0.330}, {7: 0.300}, **alone), _rank(1, {7: 0.330}, {}, **alone)]
    job = jobview.summarize(processes, command=["python", "train.py"])
    assert [(s["step"], s["ranks"]) for s in job["spikes"]] == [(7, [1])]
    assert [(s["step"], s["ranks"]) for s in job["undecidable_spikes"]] == [(7, [0])]


def test_in_measured_lockstep_the_wait_of_the_rank_waited_for_explains_the_others():
    lockstep = {"collective_s": 0.04, "window_s": 0.06}
    processes = [_rank(0, {7: 0.330}, {7: 0.300}, **lockstep), _rank(1, {7: 0.335}, {}, **lockstep)]
    job = jobview.summarize(processes, command=["python", "train.py"])
    assert job["spikes"] == []
    (told,) = job["undecidable_spikes"]
    assert told["ranks"] == [0, 1] and told["undecidable"].startswith("rank 0: 300.0 ms in step 7 waiting for a CPU")


def test_the_steps_beside_a_window_are_read_one_by_one_and_kept():
    """Before a planned window (the RAN_BEFORE steps up to the one before it, the watch's) and after
    one (from the second step after it: the first is the stop and export), each boundary is read."""
    kernel = Kernel()
    wait = cpuwait.CpuWait(kernel.read)
    times = [i * 0.001 for i in range(200)]  # 1 ms steps: a reading every 100 steps elsewhere
    wait.note(1, times[:1])
    wait.note(2, times[:2])
    wait.before_window(40)
    called = []
    for step in range(3, 120):
        kernel.ran_ns += 1_000_000
        if step < wait.at and not 39 <= step <= 42:  # the session reads at each of the window's boundaries
            continue
        called.append(step)
        wait.note(step, times[:step], profiled=40 <= step <= 42)
        if step == 42:
            wait.after_window(42)
    before, after = cpuwait.RAN_BEFORE, cpuwait.RAN_AFTER
    assert called == list(range(40 - 2 - before, 43 + after + 1)), "then none till 100 steps on"
    kept = [step for step, _ in wait.record()["ran"]]
    assert kept == [*range(40 - 1 - before, 39), 40, 41, 42, *range(44, 44 + after)], kept


def test_a_spike_s_own_time_is_judged_against_the_steps_own_times_when_most_of_each_step_waited():
    """tests/test_cpu_wait.py beside the findings benchmark's CPU hogs: the job pinned to a shared
    core had a 234 ms median step, some 200 ms of each waiting for a CPU; its 0.5 s sleep (801 ms,
    265 ms of it waiting) was 536 ms without its wait, under the bar of 3x the median (702 ms), and
    went undecidable. Its own steps took some 35 ms: the sleep is 15x them, the job's."""
    rng = random.Random(5)
    waits = {step: 0.2 * (1 + rng.gauss(0, 0.1)) for step in range(2, 61)}
    waits[12], waits[30] = 1.657, 0.265  # step 12: sixteen spinners on its core
    durations = [0.035 + waits[step] for step in range(2, 61)]
    durations[30 - 2] = 0.036 + 0.5 + 0.265
    cpu = {"blocks": [[step, step, wait] for step, wait in waits.items()], "covered": [[2, 60]], "at_most_s": 0.005}
    stats = stepstats.rank_stats(durations, stepstats.ToolSteps([], steps=60), cpu)
    assert 0.2 < stats["median_s"] < 0.26 and stats["own_median_s"] == pytest.approx(0.035)
    job = jobview.summarize([{"rank": 0, "steps": 60, "step_stats": stats}])
    assert [spike["step"] for spike in job["spikes"]] == [30], job["spikes"]
    assert "still 15.3x the median of the steps' own time without it" in job["spikes"][0]["cpu_evidence"]
    assert [s["step"] for s in job["undecidable_spikes"]] == [12], "the spinners' step: the machine's"
    assert stepstats.rank_stats(durations, stepstats.ToolSteps([], steps=60), None)["own_median_s"] is None


def test_a_step_s_own_kept_wait_stands_before_its_block_s_bound():
    """Beside a window the record keeps each step's own wait (``waited``): a 2-rank job's 40 ms
    stall was told "at most 5.00 ms ... waiting for a CPU" and no finding where it waited 0.0 ms."""
    cpu_wait = {"blocks": [], "covered": [[2, 50]], "at_most_s": 0.005, "waited": [[25, 0.0], [26, 0.002]]}
    assert stepstats.cpu_wait_of(cpu_wait, 25) == {"cpu_wait_s": 0.0, "cpu_wait_steps": [25, 25]}
    assert stepstats.cpu_wait_of(cpu_wait, 30) == {"cpu_wait_s": 0.005, "cpu_wait_at_most": True}
