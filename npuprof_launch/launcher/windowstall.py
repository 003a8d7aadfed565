"""A spike inside a recorded window: a step far over the window's own median step.

The findings leave a window's steps out (the profiler works in them, its cost in their times), and
the slowest of them was told under --explain only. In a long window that hid the very step the
user profiled for: a 4-rank DDP job, windows of steps 4-33, rank 1 sleeping 1.5 s in step 21 (every
rank's step 21 took 1.58-1.63 s against about 0.21 s in the window's other steps) answered with
rank 1 as the one the others wait for and no word of step 21. Inside a window the profiler works
in every step alike, so a step is measured against the window's other steps: its first step left
out (the profiler's start is in it), the tool's own record writing at that step taken off, and a
step beside an earlier window's aftercare, a warm-up step, or one whose rank's wait for a CPU
explains it is no spike. Only a step that stands alone is told (twice the window's next longest:
a busy machine's long steps come in families), and never one on the job's period, for which every
step over the bar counts (an evaluation every 10 steps is told as such). In lockstep every rank's
step is long: the rank the others waited for there is named only where one collective of that step
says so (their waits past its own at least half the spike's excess, its own wait for a CPU short
of that).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from npuprof_launch.common import stepstats
from npuprof_launch.launcher import lockstep, periods, stepwaits

#: A window's steps, its first left out, that give its median: fewer say too little of the rest.
MIN_STEPS = 4
#: Where over_bar keeps a spike's stage's rows (for _waited_for): dropped from what is told.
GROUP = "_group"
#: ...and whether it stands alone in its window: a step told is LONE_RATIO times the window's next
#: longest at least. A busy machine's long steps come in families: the README's example (steps of
#: 2.7 ms) beside a CPU hog, profiled in steps 3-42, had steps 6, 17 and 22 at 40.2-40.7 ms against
#: a 6.7 ms median, each half waiting for a CPU and half running (the thread ran 20 ms in steps of 4
#: ms): over the bar, the job's doing by no measure. A stall stands alone (1.63 s against 0.30 s).
LONE = "_lone"
LONE_RATIO = 2.0
#: The share of the spike's excess by which the others' waits at that step pass the rank's own.
WAITED_SHARE = 0.5


def over_bar(processes: Sequence[dict], series: Mapping[int, Any], stage_of: Callable[[dict], dict]) -> list[dict]:
    """Every window's steps over the spike bar of its own median, grouped by stage and step across
    ranks as the job's spikes are: ``step``, ``ranks``, ``processes``, ``step_s``, ``vs_median``
    (against the window's median), ``window_median_s``, ``window`` ([first, last]), ``test``, and
    the rows of its stage and whether it stands alone (GROUP, LONE: no part of the answer). All of
    them, for the job's period (periods.of_spikes: a job evaluating every 10 steps, profiled in
    steps 4-33, had its step 21 told as a lone spike); ``told`` picks the finding. ``series``:
    each process's step times by ``id`` (jobview.read_steps); ``stage_of``: a row's stage (a
    stage's steps are its own calls)."""
    stages: dict[tuple, list[dict]] = {}
    for process in processes:
        stages.setdefault(tuple(stage_of(process).items()), []).append(process)
    found = []
    for stage, group in stages.items():
        by_step: dict[int, list[tuple[dict, float, float, list[int], bool]]] = {}
        for process in group:
            for step, seconds, median, window, lone in _over(process, series.get(id(process))):
                by_step.setdefault(step, []).append((process, seconds, median, window, lone))
        for step, items in by_step.items():
            _, seconds, median, window, lone = max(items, key=lambda item: item[1] / item[2])
            found.append(
                {
                    **dict(stage),
                    "step": step,
                    "ranks": sorted(p["rank"] for p, *_ in items if p.get("rank") is not None),
                    "processes": len(items),
                    "step_s": seconds,
                    "vs_median": round(seconds / median, 2),
                    "window_median_s": median,
                    "window": window,
                    "test": f"over {stepstats.SPIKE_RATIO:g}x its window's median step (its first step left out) "
                    f"and {stepstats.SPIKE_MIN_S * 1e3:g} ms longer",
                    GROUP: group,
                    LONE: lone,
                }
            )
    return sorted(found, key=lambda spike: (-spike["vs_median"], spike["step"]))


def told(over: list[dict], period: dict | None) -> list[dict]:
    """The spikes inside windows that the answer tells (over_bar's), worst first: each stage's worst
    off the job's period (a step of its period is told as the period), with in lockstep the rank
    the others waited for there (``waited_for``, ``waited_s``: _waited_for) and its text
    (``told``). At most one a stage: the window's other steps are the profile the user asked for."""
    found, stages = [], set()
    for spike in over:  # worst first
        stage = (spike.get("stage"), spike.get("target"))
        if stage in stages or not spike[LONE] or (period and periods.holds(period, spike["step"])):
            continue
        stages.add(stage)
        group, spike = spike[GROUP], {key: value for key, value in spike.items() if key not in (GROUP, LONE)}
        spike.update(_waited_for(group, spike["step"], spike["step_s"] - spike["window_median_s"]))
        spike["told"] = text(spike)
        found.append(spike)
    return found


def text(spike: dict) -> str:
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


def _over(process: dict, steps: Any) -> list[tuple[int, float, float, list[int], bool]]:
    """Each window's steps after its first over the spike bar of the window's median:
    ``(step, seconds, median, [first, last], lone)``, the tool's record writing at the step taken
    off; ``lone``: LONE_RATIO times the window's next longest step at least."""
    if steps is None:
        return []
    shift = process.get("step_offset") or 0
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
                timed.append((step, float(steps.durations[index]) - steps.tool.checkpoint_s(step - shift)))
        if len(timed) < MIN_STEPS:
            continue
        ordered = sorted(seconds for _, seconds in timed)
        median, second = stepstats.quantile(ordered, 0.5), ordered[-2]
        for step, seconds in timed:
            if median <= 0 or seconds <= stepstats.spike_bar(median):
                continue
            if step - shift <= 1 + stepstats.WARMUP_STEPS or steps.tool.beside_aftercare(step - shift):
                continue
            if seconds - waits.get(step, 0.0) <= stepstats.spike_bar(median):
                continue  # its own wait for a CPU explains it
            found.append((step, seconds, median, [first, last], seconds >= LONE_RATIO * second))
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


def one_step(job: dict) -> None:
    """Take back a rank named by its window's time in collectives (lockstep's rule ``total_time``)
    where one step's spike inside the window holds most of the others' extra wait: the others
    waited for it in that step, which the spike tells, not in the window's steps at large (tried: 2
    DDP ranks beside a CPU hog, rank 1 sleeping 380 ms in step 20 of a window of steps 4-33, was
    "the one the others wait for: it spent 60 ms in collectives against 449 ms", 379 ms of them in
    step 20). ``job``: the job's view (jobview.summarize), its ``window_spikes`` told; changed in
    place: the rank leaves ``slow_ranks``, and "no rank stands out" says why where none is left."""
    spikes = {(spike.get("stage"), spike.get("waited_for")): spike for spike in job.get("window_spikes") or ()}
    for slow in list(job["slow_ranks"]):
        spike = spikes.get((slow.get("stage"), slow["rank"]))
        if slow.get("rule") != lockstep.TOTAL_TIME or spike is None:
            continue
        extra = slow["others_collective_s"] - slow["collective_s"]
        if spike["waited_s"] < WAITED_SHARE * extra:
            continue
        job["slow_ranks"].remove(slow)
        reason = (
            f"in lockstep, rank {slow['rank']} spent {slow['collective_s'] * 1e3:.0f} ms in collectives against "
            f"{slow['others_collective_s'] * 1e3:.0f} ms on the others, but they waited "
            f"{spike['waited_s'] * 1e3:.0f} ms of that for it in step {spike['step']} alone (a spike of that step), "
            "not in the window's steps at large"
        )
        if not job["slow_ranks"]:
            verdict = {"found": False, "reason": reason, "rule": lockstep.TOTAL_TIME, "spike_step": spike["step"]}
            job["slow_rank_verdict"] = verdict
            job["no_rank_stands_out"] = None if job.get("held_back") else reason
