"""The job's own periodic work (an evaluation, logging, a save, a new data shard every N steps):
spikes evenly spaced, told as the period where to look. On a busy machine some of its steps wait
for a CPU in proportion, so the spikes a wait explains count toward a period, but only to fill in
one of the job's own: the machine's waits line up by chance too.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def of_spikes(spikes: list[dict], waited: Sequence[dict] = ()) -> dict | None:
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
    three random spikes of a hundred steps are evenly spaced too often to tell."""
    every = [*spikes, *waited]
    steps = sorted({spike["step"] for spike in every})
    if len(steps) < PERIOD_MIN_SPIKES or len({spike.get("stage") for spike in every}) > 1:
        return None
    present = set(steps)
    best: list[int] = []
    for index, first in enumerate(steps[:PERIOD_SEARCHED]):
        for second in steps[index + 1 : PERIOD_SEARCHED]:
            run = [first, second]
            while run[-1] + (second - first) in present:
                run.append(run[-1] + second - first)
            if second - first >= 2 and len(run) > len(best):
                best = run
    # Spikes a wait for a CPU explains off the progression are the machine's, not against it.
    counted = {spike["step"] for spike in spikes} | set(best)
    alone = len(best) == len(counted)
    if len(best) < PERIOD_MIN_SPIKES or not (alone or (len(best) > PERIOD_MIN_SPIKES and 2 * len(best) > len(counted))):
        return None
    # A progression of the machine's spikes (fewer than PERIOD_OWN_SPIKES of the job's own) is the
    # machine's unless it is long and one rank's at every step (a job's periodic work is a rank's own,
    # or every rank's): healthy jobs beside CPU hogs were told "every 2 steps (21, 23, 25)", "every 9
    # steps (10, 19, 28)", and, 8 ranks alone, "every 2 steps (8, 10, 12, 14, 16)" (benchmarks/findings.py).
    if len(set(best) & {spike["step"] for spike in spikes}) < PERIOD_OWN_SPIKES:
        ranks = [
            {rank for spike in every if spike["step"] == step for rank in spike.get("ranks") or [None]} for step in best
        ]
        if len(best) < PERIOD_MIN_SPIKES + PERIOD_WAITED_MORE or not set.intersection(*ranks):
            return None
    return {"every": best[1] - best[0], "steps": best}


def text(period: dict) -> str:
    """The finding of evenly spaced spikes (of_spikes), in one line."""
    every = period["every"]
    return (
        f"the spikes are {every} steps apart (steps {', '.join(map(str, period['steps']))}): what the job does "
        f"every {every} steps (an evaluation, logging, a save, a new data shard) is where to look"
    )


def holds(period: dict, step: int | None) -> bool:
    """Whether ``step`` is one of the period's: on its progression, from one period before its
    first spike to one after its last (a window's step, left out of the spikes, is one of them)."""
    if step is None:
        return False
    every, steps = period["every"], period["steps"]
    return (step - steps[0]) % every == 0 and steps[0] - every <= step <= steps[-1] + every
