"""A spike inside a recorded window: a step far over the window's own median step.

The findings leave a window's steps out (the profiler works in them, its cost in their times), and
the slowest of them was told under --explain only. In a long window that hid the very step the
user profiled for: a 4-rank DDP job, windows of steps 4-33, rank 1 sleeping 1.5 s in step 21 (every
rank's step 21 took 1.58-1.63 s against about 0.21 s in the window's other steps) answered with
rank 1 as the one the others wait for and no word of step 21. Inside a window the profiler works
in every step alike, so a step is measured against the window's other steps: its first step left
out (the profiler's start is in it), the tool's own record writing at that step taken off, and a
step beside an earlier window's aftercare, a warm-up step, or one whose rank's wait for a CPU
explains it is no spike. In lockstep every rank's step is long: the rank the others waited for
there is named only where each collective of that step says so (their waits past its own at least
half the spike's excess, its own wait for a CPU short of that).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from npuprof_launch.common import stepstats
from npuprof_launch.launcher import stepwaits

#: A window's steps, its first left out, that give its median: fewer say too little of the rest.
MIN_STEPS = 4
#: The share of the spike's excess by which the others' waits at that step pass the rank's own.
WAITED_SHARE = 0.5


def spikes(processes: Sequence[dict], series: Mapping[int, Any], stage_of: Callable[[dict], dict]) -> list[dict]:
    """Each stage's worst step over the spike bar of its window's own median (_worst), worst first.
    ``series``: each process's step times by ``id`` (jobview.read_steps); ``stage_of``: a row's
    stage (a stage's steps are the calls of its function: its own)."""
    stages: dict[tuple, list[dict]] = {}
    for process in processes:
        stages.setdefault(tuple(stage_of(process).items()), []).append(process)
    found = [spike for stage, group in stages.items() for spike in _worst(group, series, dict(stage))]
    return sorted(found, key=lambda spike: (-spike["vs_median"], spike["step"]))


def _worst(processes: Sequence[dict], series: Mapping[int, Any], stage: dict) -> list[dict]:
    """The worst step over the spike bar of its window's own median, grouped across ranks as the
    job's spikes are: ``step``, ``ranks``, ``processes``, ``step_s``, ``vs_median`` (against the
    window's median), ``window_median_s``, ``window`` ([first, last]), ``test``, and in lockstep
    ``waited_for`` and ``waited_s`` where the collectives of that step say whom the others waited
    for. At most one: the window's other steps are the profile the user asked for."""
    found: dict[int, list[tuple[dict, float, float, list[int]]]] = {}
    for process in processes:
        for step, seconds, median, window in _over(process, series.get(id(process))):
            found.setdefault(step, []).append((process, seconds, median, window))
    if not found:
        return []
    step, items = max(found.items(), key=lambda pair: (max(s / m for _, s, m, _ in pair[1]), -pair[0]))
    process, seconds, median, window = max(items, key=lambda item: item[1] / item[2])
    spike: dict[str, Any] = {
        **stage,
        "step": step,
        "ranks": sorted(p["rank"] for p, *_ in items if p.get("rank") is not None),
        "processes": len(items),
        "step_s": seconds,
        "vs_median": round(seconds / median, 2),
        "window_median_s": median,
        "window": window,
        "test": f"over {stepstats.SPIKE_RATIO:g}x its window's median step (its first step left out) and "
        f"{stepstats.SPIKE_MIN_S * 1e3:g} ms longer",
    }
    spike.update(_waited_for(processes, step, seconds - median))
    spike["told"] = told(spike)
    return [spike]


def told(spike: dict) -> str:
    """What a spike inside a window is, after its step and whose it is (report._spike_item):
    "7.8x the median of its window's steps 5-33 (1632.6 ms against 209.5 ms; the profiler works in
    each alike); the others waited 1402.0 ms longer for rank 1 there"."""
    first, last = spike["window"]
    text = (
        f"{spike['vs_median']:.1f}x the median of its window's steps {first + 1}-{last} "
        f"({spike['step_s'] * 1e3:.1f} ms against {spike['window_median_s'] * 1e3:.1f} ms; the profiler works in "
        "each alike)"
    )
    if spike.get("waited_for") is not None:
        text += f"; the others waited {spike['waited_s'] * 1e3:.1f} ms longer for rank {spike['waited_for']} there"
    return text


def _over(process: dict, steps: Any) -> list[tuple[int, float, float, list[int]]]:
    """Each window's slowest step after its first, over the spike bar of the window's median:
    ``(step, seconds, median, [first, last])``, the tool's record writing at the step taken off."""
    if steps is None:
        return []
    shift = process.get("step_offset") or 0
    writing = {int(step) + shift: float(seconds) for step, seconds in process.get("checkpoint_s") or ()}
    beside = [(first + shift, last + shift) for first, last in steps.tool.aftercare_spans()]
    waits = stepwaits.cpu_wait_by_step(process)
    found = []
    for window in process.get("windows") or ():
        first, last = window.get("first_step"), window.get("last_step")
        if first is None or last is None:
            continue
        timed = []
        for step in range(first + 1, last + 1):
            index = step - shift - steps.first
            if 0 <= index < len(steps.durations):
                timed.append((step, float(steps.durations[index]) - writing.get(step, 0.0)))
        if len(timed) < MIN_STEPS:
            continue
        median = stepstats.quantile(sorted(seconds for _, seconds in timed), 0.5)
        step, seconds = max(timed, key=lambda pair: pair[1])
        if median <= 0 or seconds <= stepstats.spike_bar(median):
            continue
        if step - shift <= 1 + stepstats.WARMUP_STEPS or any(low <= step <= high for low, high in beside):
            continue
        if seconds - waits.get(step, 0.0) <= stepstats.spike_bar(median):
            continue  # its own wait for a CPU explains it
        found.append((step, seconds, median, [first, last]))
    return found


def _waited_for(processes: Sequence[dict], step: int, excess_s: float) -> dict:
    """Whom the others waited for at ``step``, from each collective of that step on every rank
    (stepwaits.COLLECTIVES, the job's numbering): in the collective where the others' median wait
    passes the least one's most, that rank, where the margin is WAITED_SHARE of the spike's excess
    at least and its own wait for a CPU there is short of it. One collective, not their sum: a DDP
    step's buckets are in flight together, and their waits overlap (summed, the others of a rank
    stalled 1.4 s "waited 2.9 s longer" in a step of 1.6 s)."""
    by_key: dict[tuple, dict[int, float]] = {}
    for process in processes:
        collectives = process.get(stepwaits.COLLECTIVES)
        if collectives is None or process.get("rank") is None:
            return {}
        for key, group, at, wait, _ in collectives:
            if at == step:
                by_key.setdefault((key, group), {})[process["rank"]] = wait
    best: tuple[float, int] | None = None
    for waits in by_key.values():
        if len(waits) < len(processes) or len(waits) < 2:
            continue  # not on every rank: a group of some of them
        rank = min(waits, key=lambda r: (waits[r], r))
        gap = stepstats.quantile(sorted(w for r, w in waits.items() if r != rank), 0.5) - waits[rank]
        best = max(best, (gap, rank)) if best else (gap, rank)
    if best is None or best[0] < WAITED_SHARE * excess_s:
        return {}
    extra, rank = best
    process = next(p for p in processes if p.get("rank") == rank)
    if stepwaits.cpu_wait_by_step(process).get(step, 0.0) >= extra:
        return {}
    return {"waited_for": rank, "waited_s": extra}
