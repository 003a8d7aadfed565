"""The job's own periodic work (an evaluation, logging, a save, a new data shard every N steps):
spikes evenly spaced, told as the period where to look. On a busy machine some of its steps wait
for a CPU in proportion, so the spikes a wait explains count toward a period, but only to fill in
one of the job's own: the machine's waits line up by chance too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from npuprof_launch.common import stepstats

#: Spikes evenly spaced are told as a period from this many on (three at random steps of a hundred
#: fall evenly apart about once in fifty runs; the line says where to look, not what it is).
PERIOD_MIN_SPIKES = 3
#: The spikes a period is looked for among (the first ones in step order): the search is quadratic.
PERIOD_SEARCHED = 200
#: How many more spikes than PERIOD_MIN_SPIKES a period needs whose every spike a wait for a CPU
#: explains (of_spikes).
PERIOD_WAITED_MORE = 2
#: The job's own spikes (no wait for a CPU explains them) a progression must hold for the machine's
#: to fill it in; with fewer it is judged as the machine's alone: a lone stall at step 30 of a
#: server beside CPU hogs was told "every 10 steps (10, 20, 30)" from two of six steps that waited
#: for a CPU (2026-12-05): one spike and two of many waits line up by chance about half the time.
PERIOD_OWN_SPIKES = 2
#: The job's own spikes on a period are one work done again: the slowest of them this many times
#: the quickest at most. A 1.5 s stall at step 7 of a 1 ms job, a busy machine's 9 ms step 11 and a
#: wait for a CPU at step 15 were told "every 4 steps (7, 11, 15)", and the stall's run was not
#: suggested (CI, the print-env route's test); a job's saves beside CPU hogs took 88-99 ms (F19).
LIKE_RATIO = 10.0


#: A step of a rank this many times its median, and stepstats.SPIKE_MIN_S longer, is near a spike:
#: the job's own periodic work that a loaded machine left under the bar. Beside two CPU hogs a 4-rank
#: DDP job saving a checkpoint every 10 steps ran those steps 2.8-3.05x its median (88-99 ms against
#: 32 ms), and one rank's step 31 alone, at 3.02x, was named a spike off any period (F19).
NEAR_RATIO = 2.0


def near_steps(rows: Iterable[tuple[int | None, int, int, Sequence[float], Any, float]]) -> list[dict]:
    """The steps near a spike (NEAR_RATIO) of each ``(rank, first step, step offset, durations, tool
    steps, median)`` row, ``{"step", "ranks", "near": True}`` each in the job's numbering: the tool's
    profiled steps left out, and the time its checkpoints took there (stepstats.ToolSteps)."""
    found: dict[int, list] = {}
    for rank, first, offset, durations, tool, median in rows:
        bar = stepstats.spike_bar(median, NEAR_RATIO)
        for index, seconds in enumerate(durations):
            step = first + index
            if seconds >= bar and step not in tool and seconds - tool.checkpoint_s(step) >= bar:
                found.setdefault(step + offset, []).append(rank)
    return [{"step": step, "ranks": ranks, "near": True} for step, ranks in sorted(found.items())]


def of_spikes(spikes: list[dict], waited: Sequence[dict] = (), near: Sequence[dict] = ()) -> dict | None:
    """``{"every": D, "steps": [...]}`` when the job's spikes, of one stage, hold PERIOD_MIN_SPIKES
    or more exactly D steps apart (D >= 2), unbroken: what the job does every D steps (an
    evaluation, logging, a save, a new data shard) is where to look; else None.

    The steps that may be the job's count too (``waited``): those a wait for a CPU explains (a step
    of the job's own periodic work waits for a CPU in proportion on a busy machine, and such waits
    took the period away: beside a CPU hog a job evaluating every 10 steps was told a period in 2 of
    4 runs; on 4 ranks every evaluation went under CPU waits), and those beside the tool's aftercare
    (a run's window of one step put the next period step beside it: the period was lost).
    Every spike must be on the progression, or, with others beside it, the progression must hold
    PERIOD_MIN_SPIKES + 1 of them and most spikes (those of ``waited`` off it are not counted):
    three random spikes of a hundred steps are evenly spaced too often to tell.

    The steps ``near`` a spike (near_steps) count as the job's own where no period is found without
    them: on a progression of PERIOD_MIN_SPIKES + 1 steps at least that holds a spike, each step of
    it a spike or near one on a rank they share. Its ``near`` says which of its steps were under
    the bar."""
    found = _of_spikes(spikes, waited, ())
    if found is not None or not near or not spikes:
        return found
    found = _of_spikes(spikes, waited, near)
    if found is None or len(found["steps"]) <= PERIOD_MIN_SPIKES:
        return None
    own = {spike["step"] for spike in spikes}
    every = (*spikes, *waited, *near)
    ranks = [{rank for one in every if one["step"] == step for rank in _ranks(one)} for step in found["steps"]]
    if not own & set(found["steps"]) or not set.intersection(*ranks):
        return None
    return {**found, "near": [step for step in found["steps"] if step not in own]}


def _ranks(spike: dict) -> list:
    """A spike's ranks: its ``ranks``, else its ``rank``."""
    return spike.get("ranks") or [spike.get("rank")]


def _of_spikes(spikes: list[dict], waited: Sequence[dict], near: Sequence[dict]) -> dict | None:
    """of_spikes, with the steps ``near`` a spike counted as the job's own."""
    every = [*spikes, *waited, *near]
    steps = sorted({spike["step"] for spike in every})
    if len(steps) < PERIOD_MIN_SPIKES or len({spike.get("stage") for spike in every}) > 1:
        return None
    present = set(steps)
    took = {spike["step"]: spike["step_s"] for spike in spikes if spike.get("step_s")}
    best: list[int] = []
    for index, first in enumerate(steps[:PERIOD_SEARCHED]):
        for second in steps[index + 1 : PERIOD_SEARCHED]:
            run = [first, second]
            while run[-1] + (second - first) in present:
                run.append(run[-1] + second - first)
            if second - first >= 2 and len(run) > len(best) and _alike(run, took):
                best = run
    # Spikes a wait for a CPU explains off the progression are the machine's, not against it.
    own = [*spikes, *near]
    counted = {spike["step"] for spike in spikes} | set(best)
    alone = len(best) == len(counted)
    if len(best) < PERIOD_MIN_SPIKES or not (alone or (len(best) > PERIOD_MIN_SPIKES and 2 * len(best) > len(counted))):
        return None
    # A progression of the machine's spikes (fewer than PERIOD_OWN_SPIKES of the job's own) is the
    # machine's unless it is long and one rank's at every step (a job's periodic work is a rank's own,
    # or every rank's): healthy jobs beside CPU hogs were told "every 2 steps (21, 23, 25)", "every 9
    # steps (10, 19, 28)", and, 8 ranks alone, "every 2 steps (8, 10, 12, 14, 16)" (benchmarks/findings.py).
    if len(set(best) & {spike["step"] for spike in own}) < PERIOD_OWN_SPIKES:
        ranks = [
            {rank for spike in every if spike["step"] == step for rank in spike.get("ranks") or [None]} for step in best
        ]
        if len(best) < PERIOD_MIN_SPIKES + PERIOD_WAITED_MORE or not set.intersection(*ranks):
            return None
    return {"every": best[1] - best[0], "steps": best}


def _alike(run: list[int], took: dict[int, float]) -> bool:
    """Whether the job's own spikes on ``run`` (``took``: their step times) are one work's (LIKE_RATIO)."""
    times = [took[step] for step in run if step in took]
    return len(times) < 2 or max(times) <= LIKE_RATIO * min(times)


def text(period: dict) -> str:
    """The finding of evenly spaced spikes (of_spikes), in one line."""
    every, near = period["every"], period.get("near")
    under = f"; {', '.join(map(str, near))} under the spike bar, at {NEAR_RATIO:g}x the median or more" if near else ""
    return (
        f"the spikes are {every} steps apart (steps {', '.join(map(str, period['steps']))}{under}): what the job "
        f"does every {every} steps (an evaluation, logging, a save, a new data shard) is where to look"
    )


def holds(period: dict, step: int | None) -> bool:
    """Whether ``step`` is one of the period's: on its progression, from one period before its
    first spike to one after its last (a window's step, left out of the spikes, is one of them)."""
    if step is None:
        return False
    every, steps = period["every"], period["steps"]
    return (step - steps[0]) % every == 0 and steps[0] - every <= step <= steps[-1] + every
