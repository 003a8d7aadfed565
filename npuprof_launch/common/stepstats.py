"""One process's step statistics: the median, p90 and spikes of its step times, without the tool's own steps.

Both wings compute them: a process at its end (so its record carries them), the launcher for a row
whose record does not. Step numbers are the job's: the duration of step ``s`` is the time between
the boundaries that end steps ``s - 1`` and ``s`` (steptimes.py); step 1 has none.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right

#: A step this many times its rank's median (and SPIKE_MIN_S longer) is a spike. Not a spike: the
#: first WARMUP_STEPS timed steps (allocator, caches, compilation), and the steps the tool's own
#: work ran in (``ToolSteps``).
SPIKE_RATIO = 3.0
WARMUP_STEPS = 3
SPIKE_MIN_S = 0.005
SPIKES_PER_RANK = 10


def quantile(ordered, q: float) -> float:
    """The q-quantile of an ascending sequence (nearest rank)."""
    index = min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))
    return float(ordered[index])


def ratio_among(by_rank, rank: int) -> float | None:
    """``rank``'s median reading a step over the median of the other ranks' medians, over the steps
    every rank of ``by_rank`` (rank -> step -> reading) kept; None where one kept none, or none is
    kept by all."""
    if rank not in by_rank or any(not readings for readings in by_rank.values()):
        return None
    steps = set.intersection(*(set(readings) for readings in by_rank.values()))
    if not steps:
        return None
    medians = {one: quantile(sorted(readings[step] for step in steps), 0.5) for one, readings in by_rank.items()}
    theirs = quantile(sorted(value for one, value in medians.items() if one != rank), 0.5)
    return medians[rank] / theirs if theirs > 0 else None


def spike_bar(median: float, ratio: float = SPIKE_RATIO) -> float:
    """The least step time that is a spike, against its rank's median (``ratio``: another bar's)."""
    return max(median * ratio, median + SPIKE_MIN_S)


def rank_stats(durations, profiled: ToolSteps | None = None, cpu_wait: dict | None = None) -> dict | None:
    """Median, p90, max and the spikes of one process's step durations (steps 2, 3, ...);
    ``profiled``: the steps the tool's own work ran in (``ToolSteps``), never spikes of the job;
    ``cpu_wait``: the record's (inprocess/cpuwait.py), each spike gets its block's wait for a CPU."""
    if not durations:
        return None
    profiled = profiled if profiled is not None else ToolSteps()
    ordered = _job_steps_sorted(durations, profiled)
    median = quantile(ordered, 0.5)
    threshold = spike_bar(median)
    above = len(ordered) - bisect_right(ordered, threshold)
    spikes: list[dict] = []
    held: list[dict] = []
    if above:
        # The few largest values are found by C-level searches, not by a Python loop over the run.
        start_by_value: dict[float, int] = {}
        for value in reversed(ordered[-min(above, SPIKES_PER_RANK + WARMUP_STEPS + profiled.checkpoints) :]):
            index = durations.index(value, start_by_value.get(value, 0))
            start_by_value[value] = index + 1
            step = index + 2
            if step <= 1 + WARMUP_STEPS or step in profiled or len(spikes) >= SPIKES_PER_RANK:
                continue
            tool_s = profiled.checkpoint_s(step)
            if tool_s and value - tool_s <= threshold:  # a spike with the tool's checkpoint, none without
                held.append({"step": step, "step_s": float(value), "checkpoint_s": tool_s})
                continue
            spike = {"step": step, "step_s": float(value), "vs_median": float(value) / median if median else 0}
            if profiled.beside_aftercare(step):
                spike["beside_aftercare"] = True
            spike.update(cpu_wait_of(cpu_wait, step))
            spikes.append(spike)
    beside = [spike for spike in spikes if spike.get("beside_aftercare")]
    if beside:
        _aftercare_cost(durations, profiled, median, beside)
    waited = any("cpu_wait_steps" in spike for spike in spikes)
    return {
        "count": len(ordered),
        "median_s": median,
        "own_median_s": own_median(durations, profiled, cpu_wait) if waited else None,
        "p90_s": quantile(ordered, 0.9),
        "max_s": float(ordered[-1]),
        "max_step": _step_of(durations, ordered[-1], profiled),
        "spikes": spikes,
        "checkpoint_spikes": held,
    }


def cpu_wait_of(cpu_wait: dict | None, step: int) -> dict:
    """What the stepping thread waited for a CPU in the block of readings that holds ``step``:
    ``cpu_wait_s`` and the block's ``cpu_wait_steps``, or for a block not kept ``cpu_wait_s`` as a
    bound with ``cpu_wait_at_most``; nothing where no reading covers the step. A step whose own
    wait the record kept (``waited``, beside a window) has that: a 2-rank job's stall was told as
    "at most 5.00 ms ... waiting for a CPU" where its step had waited 0.0 ms (2026-12-05)."""
    if not cpu_wait:
        return {}
    exact = next((seconds for at, seconds in cpu_wait.get("waited") or () if int(at) == step), None)
    if exact is not None:  # the step's own wait, read beside a window: no block's bound stands in for it
        return {"cpu_wait_s": float(exact), "cpu_wait_steps": [step, step]}
    for first, last, seconds in cpu_wait.get("blocks") or ():
        if first <= step <= last:
            return {"cpu_wait_s": float(seconds), "cpu_wait_steps": [int(first), int(last)]}
    if any(first <= step <= last for first, last in cpu_wait.get("covered") or ()):
        return {"cpu_wait_s": float(cpu_wait["at_most_s"]), "cpu_wait_at_most": True}
    return {}


def cpu_wait_in(cpu_wait: dict | None, steps: list[int]) -> float:
    """What the stepping thread waited for a CPU in ``steps``: each step's own wait where the record
    kept it (``waited``: the steps beside a window, however short the wait; a 0.5 ms job's 2.5 ms a
    step is no block), else each block of readings kept whole, its wait shared among its steps (a
    block not kept has a bound only, which proves nothing)."""
    exact = {int(step): float(seconds) for step, seconds in (cpu_wait or {}).get("waited") or ()}
    total = sum(exact.get(step, 0.0) for step in steps)
    rest = [step for step in steps if step not in exact]
    for first, last, seconds in (cpu_wait or {}).get("blocks") or ():
        inside = sum(1 for step in rest if first <= step <= last)
        total += float(seconds) * inside / (last - first + 1)
    return total


def _aftercare_cost(durations, profiled: ToolSteps, median: float, spikes: list[dict]) -> None:
    """Each spike beside the aftercare gets ``aftercare_others_s``: the worst excess over the median
    of the other steps the aftercare touched (past warm-up, outside the profiled steps), what its
    cost explains (findings.spike_beside_aftercare); None when it touched no other step."""
    touched = [step for first, last in profiled.aftercare_spans() for step in range(first, last + 1)]
    touched = [
        step for step in touched if step > 1 + WARMUP_STEPS and step not in profiled and step - 2 < len(durations)
    ]
    worst = heapq.nlargest(len(spikes) + 1, touched, key=lambda step: durations[step - 2])
    for spike in spikes:
        other = next((step for step in worst if step != spike["step"]), None)
        spike["aftercare_others_s"] = None if other is None else max(0.0, float(durations[other - 2]) - median)


def own_median(durations, profiled: ToolSteps, cpu_wait: dict | None) -> float | None:
    """The median of the job's steps, each less its share of its block's wait for a CPU where the
    block was kept (a bound elsewhere proves nothing): the step the job's own work made, to which a
    spike's own time, its wait taken off, compares (findings.spike_with_cpu_wait). Beside CPU hogs a
    job pinned to a shared core had a 234 ms median step, most of it waiting for a CPU, and its
    0.5 s sleep was 2.3x that median, under the spike bar; its own steps took some 35 ms. None
    without kept blocks. A loop over the kept blocks' steps only, and one sort."""
    blocks = (cpu_wait or {}).get("blocks")
    if not blocks:
        return None
    own = list(durations)
    for first, last, seconds in blocks:
        share = float(seconds) / (last - first + 1)
        for step in range(max(int(first), 2), min(int(last), len(own) + 1) + 1):
            own[step - 2] = max(0.0, own[step - 2] - share)
    return quantile(_job_steps_sorted(own, profiled), 0.5)


def _job_steps_sorted(durations, profiled: ToolSteps) -> list:
    """The durations of the job's own steps, ascending, so that the median, p90 and slowest step
    describe the job; a run that was all the tool's is described whole."""
    return sorted(profiled.job_durations(durations) or durations)


def _step_of(durations, value, profiled: ToolSteps) -> int:
    """The first step of the job's own (not the tool's) that took ``value``."""
    index = durations.index(value)
    while index + 2 in profiled:
        try:
            index = durations.index(value, index + 1)
        except ValueError:
            break
    return index + 2


def merged(spans) -> list[list[int]]:
    """Ranges of steps ([first, last]), the overlapping and adjacent ones joined, in order."""
    joined: list[list[int]] = []
    for first, last in sorted(spans):
        if joined and first <= joined[-1][1] + 1:
            joined[-1][1] = max(joined[-1][1], last)
        else:
            joined.append([first, last])
    return joined


class ToolSteps:
    """Where the tool's own work is in a process's step times, kept as a few ranges of steps.

    *Profiled* steps hold the tool's work, and are never spikes of the job (tried: a default run
    named the step before its window, 36x the median, as the job's worst and asked for it to be
    profiled): around each window, from the step before its first traced one (the watch of the
    job's ranges begins there, with a one-time TorchScript compile of tens of ms) to the one after
    its last (the stop and the export). A step after a *checkpoint* holds the time the tool took to
    write its record there (``checkpoint_s``, the record's, as it measured it), taken off the step
    before it is judged a spike. Steps *beside the aftercare* ran while a window's aftercare
    process compressed and summarized it (``aftercare_steps``, through the process's last step
    while it still runs): it takes CPU the job could have had (on 2 busy cores, tens of ms over the
    next steps), so a spike there is told with that fact; it stays a spike, since the job's own
    (a sleep, a slow rank) fall there too and cannot be told apart from the step times.
    """

    def __init__(self, windows=(), steps: int = 0, warmup: int = 0, offset: int | None = 0, checkpoints=None) -> None:
        """``windows`` as the record has them, numbered as the job numbers its steps: ``offset``
        (the record's ``step_offset``) takes them back to this process's steps, as the step times count;
        ``checkpoints``: the record's ``checkpoint_s``, in this process's steps already."""
        self._checkpoint_s = {int(step): float(seconds) for step, seconds in checkpoints or ()}
        #: How many steps hold a checkpoint's time (the spikes searched for reach that much further).
        self.checkpoints = len(self._checkpoint_s)
        edges, beside = [], []
        offset = offset or 0
        for window in windows or ():
            first = window["first_step"] - offset
            last = (window.get("last_step") or window["first_step"]) - offset
            # From the step before (step 1 at the earliest) to the one after (one the process ran).
            after = min(last + 1, steps) if steps >= last else last + 1
            edges.append((max(1, first - warmup - 1), after))
            care = window.get("aftercare_steps")
            if care:
                end = care[1] if care[1] is not None else steps
                if end >= care[0]:  # none where the process ended (or re-executed itself) first
                    beside.append((care[0], end))
        self._spans = merged(edges)
        self._firsts = [first for first, _ in self._spans]
        self._beside = merged(beside)
        self._beside_firsts = [first for first, _ in self._beside]

    def __contains__(self, step: int) -> bool:
        return _within(self._firsts, self._spans, step)

    def checkpoint_s(self, step: int) -> float:
        """The time the tool's checkpoint took of this step (0.0: none kept)."""
        return self._checkpoint_s.get(step, 0.0)

    def beside_aftercare(self, step: int) -> bool:
        return _within(self._beside_firsts, self._beside, step)

    def aftercare_spans(self) -> list[list[int]]:
        """The steps beside the aftercare, as merged [first, last] ranges."""
        return [list(span) for span in self._beside]

    def spans(self) -> list[list[int]]:
        """The profiled steps, as merged [first, last] ranges."""
        return [list(span) for span in self._spans]

    def job_durations(self, durations) -> list:
        """``durations`` (of steps 2, 3, ...) without the profiled steps, by slices: no Python loop over the run."""
        kept, start = [], 0
        for first, last in self._spans:
            kept.extend(durations[start : max(start, first - 2)])
            start = max(start, last - 1)
        kept.extend(durations[start:])
        return kept


def _within(firsts: list[int], spans: list[list[int]], step: int) -> bool:
    index = bisect_right(firsts, step) - 1
    return index >= 0 and step <= spans[index][1]
