"""A spike inside a recorded window, against the window's own steps (in-process, no torch).

The numbers are those of a 4-rank DDP job written outside the tests (dynamic batches, activation
checkpointing, beside two CPU hogs): windows of steps 4-33, rank 1 sleeping 1.5 s in step 21. Every
rank's step 21 took 1.58-1.63 s against about 0.23 s in the window's other steps; in the step's
first all-reduce the others waited about 1.46 s longer than rank 1.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from npuprof_launch.common import stepstats
from npuprof_launch.launcher import jobview, stepwaits, windowstall

WINDOW = (4, 33)


def _job(stall_s: float = 1.4, first_s: float = 0.23, cpu_s: float = 0.0, gaps=(1.46, 0.1)) -> tuple[list, dict]:
    """Four ranks' rows and step series: every step 0.23 s (a little jitter), step 21 ``stall_s``
    longer, the window's first step ``first_s``; rank 1's wait for a CPU in step 21 ``cpu_s``; in
    step 21's two collectives the others waited ``gaps`` longer than rank 1."""
    rows, series = [], {}
    for rank in range(4):
        durations = [0.23 + 0.01 * ((step * 7 + rank) % 5) for step in range(1, 41)]
        durations[21 - 1] += stall_s
        durations[WINDOW[0] - 1] = first_s
        collectives = [
            (f"gloo:all_reduce#{k}", "", 21, (0.0 if rank == 1 else gap) + 0.002, 0.0) for k, gap in enumerate(gaps)
        ]
        collectives += [("gloo:all_reduce#0", "", step, 0.003 + 0.001 * rank, 0.0) for step in range(5, 21)]
        cpu_wait = {"waited": [[21, cpu_s if rank == 1 else 0.0]]}
        row = {"rank": rank, "windows": [{"first_step": WINDOW[0], "last_step": WINDOW[1]}], "cpu_wait": cpu_wait}
        row[stepwaits.COLLECTIVES] = collectives
        rows.append(row)
        series[id(row)] = SimpleNamespace(first=1, durations=durations, tool=stepstats.ToolSteps())
    return rows, series


def _told(rows: list, series: dict, period: dict | None = None) -> list[dict]:
    return windowstall.told(windowstall.over_bar(rows, series, jobview._stage_of), period)


def test_a_stall_inside_a_long_window_is_a_spike_of_every_rank_and_names_the_rank_waited_for():
    rows, series = _job()
    (spike,) = _told(rows, series)
    assert (spike["step"], spike["ranks"], spike["window"]) == (21, [0, 1, 2, 3], [4, 33])
    assert spike["vs_median"] > 6 and spike["waited_for"] == 1
    # One collective's margin, not the sum of the step's overlapping ones (1.46 + 0.1 s).
    assert spike["waited_s"] == pytest.approx(1.46)
    assert spike["told"].startswith("6.7x the median of its window's steps 5-33 (1670.0 ms against 250.0 ms")
    assert "the median of its window's steps 5-33" in spike["told"]
    assert spike["told"].endswith("the others waited 1460.0 ms longer for rank 1 there")


def test_the_window_first_step_a_cpu_wait_or_a_short_stall_is_no_spike():
    # The profiler's start is in the window's first step: left out, whatever it took.
    assert _told(*_job(stall_s=0.0, first_s=2.0)) == []
    # Twice the window's median: no spike (the bar is 3x).
    assert _told(*_job(stall_s=0.25)) == []
    # Rank 1's own wait for a CPU covers the others' wait for it: the step is a spike, no rank named.
    (spike,) = _told(*_job(cpu_s=1.5))
    assert "waited_for" not in spike and "for rank" not in spike["told"]


def test_without_each_collective_the_spike_is_told_and_no_rank_named():
    rows, series = _job()
    for row in rows:
        row.pop(stepwaits.COLLECTIVES)
    (spike,) = _told(rows, series)
    assert spike["step"] == 21 and "waited_for" not in spike


def test_steps_of_the_jobs_period_inside_a_window_are_the_period_not_a_spike():
    """A job evaluating every 10 steps, profiled in steps 4-33: steps 11, 21 and 31 of the window are
    over its bar, and count for the period (jobview); none is told as a lone spike of the window,
    unless it is twice the next longest (a stall on top of an evaluation)."""
    rows, series = _job(stall_s=0.0)
    for row in rows:
        for step in (11, 21, 31):
            series[id(row)].durations[step - 1] += 1.0
    over = windowstall.over_bar(rows, series, jobview._stage_of)
    assert sorted(spike["step"] for spike in over) == [11, 21, 31]
    assert windowstall.told(over, {"every": 10, "steps": [11, 21, 31, 41]}) == []
    # Without the period they are no finding either: three alike long steps, none alone (a busy
    # machine's long steps come in families too).
    assert windowstall.told(over, None) == []
    for row in rows:
        series[id(row)].durations[21 - 1] += 2.0
    (spike,) = windowstall.told(windowstall.over_bar(rows, series, jobview._stage_of), None)
    assert spike["step"] == 21


def test_a_rank_named_by_its_time_in_collectives_that_one_step_spike_holds_is_taken_back():
    """2 DDP ranks beside a CPU hog, rank 1 sleeping 380 ms in step 20 of a window of steps 4-33:
    "the one the others wait for" by its window's time in collectives (60 ms against 449 ms), 379 ms
    of which the others waited for it in step 20: the spike's, not a slow rank's."""

    def job(waited_s: float) -> dict:
        slow = {"rank": 1, "rule": "total_time", "collective_s": 0.060, "others_collective_s": 0.449}
        spike = {"step": 20, "waited_for": 1, "waited_s": waited_s}
        made = {"slow_ranks": [slow], "window_spikes": [spike], "held_back": [], "slow_rank_verdict": {"found": True}}
        windowstall.one_step(made)
        return made

    taken = job(0.379)
    assert taken["slow_ranks"] == [] and taken["slow_rank_verdict"]["spike_step"] == 20
    assert taken["no_rank_stands_out"] == (
        "in lockstep, rank 1 spent 60 ms in collectives against 449 ms on the others, but they waited 379 ms of "
        "that for it in step 20 alone (a spike of that step), not in the window's steps at large"
    )
    # A spike that holds less than half the others' extra wait leaves the rank named.
    kept = job(0.100)
    assert [slow["rank"] for slow in kept["slow_ranks"]] == [1] and "no_rank_stands_out" not in kept
