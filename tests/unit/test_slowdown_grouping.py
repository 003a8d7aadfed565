"""Slowdowns are judged per rank, each by its own wait for a CPU, then grouped: one rank's wait
never explains another rank's slowdown, but where the ranks are in lockstep (each waits for the
slowest in its collectives), the wait of the rank the others waited for explains theirs too."""

from __future__ import annotations

import os

from npuprof_launch.common import steptimes
from npuprof_launch.launcher import slowdowns

STEPS, FROM, BEFORE_S, AFTER_S = 120, 40, 0.020, 0.040
WAITED = [[first, first + 9, 10 * (AFTER_S - BEFORE_S)] for first in range(FROM, STEPS + 1, 10)]


def row(out: str, rank: int, *, waited: bool, lockstep: bool) -> dict:
    """A report row whose steps went from 20 to 40 ms at step FROM; ``waited``: its own CPU wait
    covers the difference; ``lockstep``: its window spent 30 % of its time in collectives."""
    name = f"rank{rank}.steps"
    steptimes.append(os.path.join(out, name), [BEFORE_S if s < FROM else AFTER_S for s in range(2, STEPS + 1)])
    made = {"rank": rank, "step_times": name, "windows": [], "cpu_wait": None}
    if waited:
        made["cpu_wait"] = {"blocks": WAITED, "covered": [[2, STEPS]], "at_most_s": 0.0}
    if lockstep:
        made.update(collective_s=0.3, window_s=1.0)
    return made


def test_one_rank_s_wait_does_not_explain_an_independent_rank_s_slowdown(tmp_path):
    out = str(tmp_path)
    found, waited = slowdowns.of_processes(
        [row(out, 0, waited=False, lockstep=False), row(out, 1, waited=True, lockstep=False)], out
    )
    assert [(one["ranks"], one["step"]) for one in found] == [([0], FROM)]
    assert [one["ranks"] for one in waited] == [[1]]


def test_in_lockstep_the_waiting_rank_s_cpu_wait_explains_every_rank_s_slowdown(tmp_path):
    out = str(tmp_path)
    rows = [row(out, 0, waited=True, lockstep=True), row(out, 1, waited=False, lockstep=True)]
    found, waited = slowdowns.of_processes(rows, out)
    assert found == [] and [one["ranks"] for one in waited] == [[0, 1]]


def test_in_lockstep_a_slowdown_no_rank_waited_for_is_a_finding(tmp_path):
    out = str(tmp_path)
    rows = [row(out, 0, waited=False, lockstep=True), row(out, 1, waited=False, lockstep=True)]
    found, waited = slowdowns.of_processes(rows, out)
    assert [(one["ranks"], one["every_rank"]) for one in found] == [([0, 1], True)] and waited == []
