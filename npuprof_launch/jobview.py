"""The job's answer: one view of every process's whole run, short at any scale.

Two facts decide the method. In a synchronous data-parallel job every rank's step time is the
same, because the others wait for the slow one inside the collective; so step times alone find
spikes and drifts, and the slow rank only where ranks are not in lockstep (pipeline stages,
servers, rollouts). The window's traces do tell in lockstep: the rank that waits least in its
collectives is the one the others wait for (msprof-analyze's slow-rank method, and Holistic
Trace Analysis's).

Step numbers are the job's: the duration of step ``s`` is the time between the boundaries that
end steps ``s - 1`` and ``s`` (steptimes.py); step 1 has none. ``step_time_s`` describes the
ranks' median step times: their median, 90th percentile and maximum.
"""

from __future__ import annotations

import os
import shlex
from bisect import bisect_right

from npuprof_launch import options, stages, steptimes

#: A step this many times its rank's median (and SPIKE_MIN_S longer) is a spike. Not a spike: the
#: first WARMUP_STEPS timed steps (allocator, caches, compilation), and the steps the tool's own
#: work ran in (``ToolSteps``).
SPIKE_RATIO = 3.0
#: The options a suggested run sets itself; every other option the run was given is kept.
SUGGESTION_SETS = ("skip-first", "wait", "warmup", "active", "repeat", "ranks", "total-steps", "on-demand")
WARMUP_STEPS = 3
SPIKE_MIN_S = 0.005
SPIKES_PER_RANK = 10
SPIKES_SHOWN = 5
#: A rank whose median step time exceeds the others' median by this much stands out...
SLOW_RANK_RATIO = 1.10
#: ...and, with three ranks or more, by this many median absolute deviations of the ranks' medians.
SLOW_RANK_MADS = 3.0
#: In lockstep: a rank whose time in collectives is below this fraction of the others' median is
#: the one they wait for, when they spend at least COLLECTIVE_SHARE of their window in collectives.
COLLECTIVE_RATIO = 0.5
COLLECTIVE_SHARE = 0.10


def compact_ranks(ranks) -> str:
    """[0, 1, 2, 3, 5, 7, 8] -> "0-3, 5, 7-8" (in numeric order)."""
    ordered = sorted(set(ranks))
    parts, start, previous = [], None, None
    for rank in ordered:
        if start is None:
            start = previous = rank
        elif rank == previous + 1:
            previous = rank
        else:
            parts.append(f"{start}-{previous}" if previous != start else f"{start}")
            start = previous = rank
    if start is not None:
        parts.append(f"{start}-{previous}" if previous != start else f"{start}")
    return ", ".join(parts)


def rank_list(ranks) -> str:
    """The same ranks as a ``--ranks`` value: "0-3,5,7-8"."""
    return compact_ranks(ranks).replace(", ", ",")


def who(ranks) -> str:
    ranks = sorted(set(ranks))
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {compact_ranks(ranks)}"


def _quantile(ordered, q: float) -> float:
    """The q-quantile of an ascending sequence (nearest rank)."""
    index = min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))
    return float(ordered[index])


def rank_stats(durations, profiled: ToolSteps | None = None) -> dict | None:
    """Median, p90, max and the spikes of one process's step durations (steps 2, 3, ...);
    ``profiled``: the steps the tool's own work ran in (``ToolSteps``), never spikes of the job."""
    if not durations:
        return None
    profiled = profiled if profiled is not None else ToolSteps()
    ordered = _job_steps_sorted(durations, profiled)
    median = _quantile(ordered, 0.5)
    threshold = max(median * SPIKE_RATIO, median + SPIKE_MIN_S)
    above = len(ordered) - bisect_right(ordered, threshold)
    spikes = []
    if above:
        # The few largest values are found by C-level searches, not by a Python loop over the run.
        start_by_value: dict[float, int] = {}
        for value in reversed(ordered[-min(above, SPIKES_PER_RANK + WARMUP_STEPS) :]):
            index = durations.index(value, start_by_value.get(value, 0))
            start_by_value[value] = index + 1
            step = index + 2
            if step <= 1 + WARMUP_STEPS or step in profiled or len(spikes) >= SPIKES_PER_RANK:
                continue
            spike = {"step": step, "step_s": float(value), "vs_median": float(value) / median if median else 0}
            if profiled.beside_aftercare(step):
                spike["beside_aftercare"] = True
            spikes.append(spike)
    return {
        "count": len(ordered),
        "median_s": median,
        "p90_s": _quantile(ordered, 0.9),
        "max_s": float(ordered[-1]),
        "max_step": _step_of(durations, ordered[-1], profiled),
        "spikes": spikes,
    }


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


def _merged(spans) -> list[list[int]]:
    merged: list[list[int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return merged


class ToolSteps:
    """Where the tool's own work is in a process's step times, kept as a few ranges of steps.

    *Profiled* steps hold the tool's work, and are never spikes of the job (tried: a default run
    named the step before its window, 36x the median, as the job's worst and asked for it to be
    profiled): around each window, from the step before its first traced one (the watch of the
    job's ranges begins there, with a one-time TorchScript compile of tens of ms) to the one after
    its last (the stop and the export). Steps *beside the aftercare* ran while a window's aftercare
    process compressed and summarized it (``aftercare_steps``, through the process's last step
    while it still runs): it takes CPU the job could have had (on 2 busy cores, tens of ms over the
    next steps), so a spike there is told with that fact; it stays a spike, since the job's own
    (a sleep, a slow rank) fall there too and cannot be told apart from the step times.
    """

    def __init__(self, windows=(), steps: int = 0, warmup: int = 0) -> None:
        edges, beside = [], []
        for window in windows or ():
            last = window.get("last_step") or window["first_step"]
            edges.append((window["first_step"] - warmup - 1, last + 1))
            care = window.get("aftercare_steps")
            if care:
                beside.append((care[0], care[1] if care[1] is not None else steps))
        self._spans = _merged(edges)
        self._firsts = [first for first, _ in self._spans]
        self._beside = _merged(beside)
        self._beside_firsts = [first for first, _ in self._beside]

    def __contains__(self, step: int) -> bool:
        return _within(self._firsts, self._spans, step)

    def beside_aftercare(self, step: int) -> bool:
        return _within(self._beside_firsts, self._beside, step)

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


def load(process: dict, output_dir: str, warmup: int = 0) -> dict | None:
    """The stats of one report row's step-times file (None when it has none)."""
    path = process.get("step_times")
    if not path:
        return None
    durations = steptimes.read(os.path.join(output_dir, path))
    return rank_stats(durations, ToolSteps(process.get("windows"), len(durations) + 1, warmup))


def summarize(processes: list[dict], command: list[str] | None = None, given: dict | None = None) -> dict:
    """The ``job`` object of the report. Each process row carries ``step_stats`` (rank_stats) and,
    when its window's traces were read, ``collective_s`` and ``window_s``."""
    ranks = {p["rank"] for p in processes if p.get("rank") is not None}
    timed = [p for p in processes if p.get("step_stats")]
    medians = sorted(p["step_stats"]["median_s"] for p in timed)
    job = {
        "processes": len(processes),
        "ranks": len(ranks),
        "hosts": len({p.get("host") for p in processes}),
        "steps": max((p.get("steps") or 0 for p in processes), default=0),
        "windows_planned": sum(p.get("windows_planned") or 0 for p in processes),
        "windows_completed": sum(p.get("windows_completed") or 0 for p in processes),
        "step_time_s": None,
        "slow_ranks": [],
        "spikes": [],
        "window_steps": [],
        "suggestions": [],
    }
    if medians:
        job["step_time_s"] = {
            "median": _quantile(medians, 0.5),
            "p90": _quantile(medians, 0.9),
            "max": max(p["step_stats"]["max_s"] for p in timed),
        }
    for group in _groups(processes):
        job["slow_ranks"].extend(_slow_by_collectives(group) or _slow_by_step_times(group))
    job["spikes"] = _spikes(timed)
    job["window_steps"] = _window_steps(processes)
    job["suggestions"] = _suggestions(job, command, given or {})
    return job


def _groups(processes: list[dict]) -> list[list[dict]]:
    """Processes whose steps compare: one run, one stage."""
    groups: dict[tuple, list[dict]] = {}
    for process in processes:
        if process.get("rank") is not None:
            groups.setdefault((process.get("run_id"), process.get("stage")), []).append(process)
    return [group for group in groups.values() if len(group) >= 2]


def _stage_of(process: dict) -> dict:
    """``{"stage": NAME, "target": MOD:QUALNAME}`` for a stage's row, else nothing: a finding says
    whose steps it counts (a stage's steps are the calls of its function)."""
    if not process.get("stage"):
        return {}
    return {"stage": process["stage"], "target": process.get("target")}


def _slow_by_step_times(group: list[dict]) -> list[dict]:
    """Ranks not in lockstep: one whose median step time stands out beyond the others' spread."""
    timed = [p for p in group if p.get("step_stats")]
    if len(timed) < 2:
        return []
    found = []
    for process in timed:
        others = sorted(p["step_stats"]["median_s"] for p in timed if p is not process)
        own = process["step_stats"]["median_s"]
        typical = _quantile(others, 0.5)
        if typical <= 0 or own <= typical * SLOW_RANK_RATIO:
            continue
        if len(others) >= 2:
            mad = _quantile(sorted(abs(value - typical) for value in others), 0.5)
            if own - typical <= SLOW_RANK_MADS * max(mad, typical * 0.01):
                continue
        found.append(
            {
                **_stage_of(process),
                "rank": process["rank"],
                "method": "step_times",
                "step_s": own,
                "others_step_s": typical,
                "evidence": f"median step {own * 1e3:.1f} ms against {typical * 1e3:.1f} ms on the other ranks "
                f"({own / typical:.2f}x)",
            }
        )
    return sorted(found, key=lambda item: -item["step_s"] / item["others_step_s"])


def _slow_by_collectives(group: list[dict]) -> list[dict]:
    """In lockstep: the rank that waits least in its collectives is the one the others wait for."""
    measured = [p for p in group if p.get("collective_s") is not None and p.get("window_s")]
    if len(measured) < 2:
        return []
    found = []
    for process in measured:
        others = [p for p in measured if p is not process]
        typical = _quantile(sorted(p["collective_s"] for p in others), 0.5)
        share = _quantile(sorted(p["collective_s"] / p["window_s"] for p in others), 0.5)
        own = process["collective_s"]
        if share < COLLECTIVE_SHARE or own >= typical * COLLECTIVE_RATIO:
            continue
        low = min(p["collective_s"] for p in others)
        high = max(p["collective_s"] for p in others)
        steps = process.get("window_label") or "its window"
        span = f"{low * 1e3:.0f}-{high * 1e3:.0f} ms" if high - low > 5e-4 else f"{high * 1e3:.0f} ms"
        found.append(
            {
                **_stage_of(process),
                "rank": process["rank"],
                "method": "collectives",
                "collective_s": own,
                "others_collective_s": typical,
                "evidence": f"in {steps} it spent {own * 1e3:.0f} ms in collectives against {span} on the other ranks: "
                "the others wait for it",
            }
        )
    return sorted(found, key=lambda item: item["collective_s"] / max(item["others_collective_s"], 1e-12))


def _spikes(timed: list[dict]) -> list[dict]:
    """Spikes grouped by step across ranks (lockstep spreads one rank's spike to all), worst first."""
    by_step: dict[tuple, list[dict]] = {}
    for process in timed:
        for spike in process["step_stats"]["spikes"]:
            key = (tuple(_stage_of(process).items()), spike["step"])  # a stage's steps are its own calls
            by_step.setdefault(key, []).append({**spike, "rank": process.get("rank")})
    grouped = []
    for (stage, step), items in by_step.items():
        worst = max(items, key=lambda item: item["vs_median"])
        group = {
            **dict(stage),
            "step": step,
            "ranks": sorted(item["rank"] for item in items if item["rank"] is not None),
            "processes": len(items),
            "step_s": worst["step_s"],
            "vs_median": round(worst["vs_median"], 2),
        }
        if all(item.get("beside_aftercare") for item in items):
            group["beside_aftercare"] = True
        grouped.append(group)
    grouped.sort(key=lambda item: (-item["vs_median"], item["step"]))
    return grouped[:SPIKES_SHOWN]


def _window_steps(processes: list[dict]) -> list[dict]:
    """The steps each set of ranks recorded: one entry when every rank's windows cover the same steps."""
    by_steps: dict[tuple, list] = {}
    for process in processes:
        covered = tuple((w["first_step"], w["last_step"]) for w in process.get("windows") or () if w.get("last_step"))
        if covered:
            by_steps.setdefault((process.get("stage"), covered), []).append(process.get("rank"))
    return [
        {"stage": stage, "steps": [list(pair) for pair in covered], "ranks": sorted(r for r in ranks if r is not None)}
        for (stage, covered), ranks in sorted(by_steps.items(), key=lambda kv: str(kv[0]))
    ]


def _suggestions(job: dict, command: list[str] | None, given: dict) -> list[str]:
    """The next runs: a window on the worst spike, and one on the slowest rank; the other options
    the run was given (its --output-dir, --backend, ...) are kept. A spike beside a window's
    aftercare may have lacked the CPU our compression took: the job's worst spike clear of it
    comes first. Failing one, the worst beside it: the run suggested profiles that step with no
    aftercare beside it (its own comes after its window), so it tells the job's cost from ours."""
    found = []
    if job["spikes"]:
        spike = min(job["spikes"], key=lambda item: bool(item.get("beside_aftercare")))  # the first such
        ranks = spike["ranks"]
        everyone = len(ranks) >= job["ranks"]
        where = "" if everyone or not ranks else f" --ranks {rank_list(ranks)}"
        found.append(_run(where, spike, spike["step"] - 1, 1, command, given))
    if job["slow_ranks"]:
        slow = job["slow_ranks"][0]
        skip = max(1, min(job["steps"] // 2, 10))
        found.append(_run(f" --ranks {slow['rank']}", slow, skip, 2, command, given))
    return found


def _run(where: str, finding: dict, skip: int, active: int, command: list[str] | None, given: dict) -> str:
    """One suggested command: these steps, on these ranks, of the job or of the finding's stage.

    A stage's own ``skip-first``/``active`` outrank the flags, so a stage's steps are chosen in
    its declaration; the other stages are kept as they were given (a stage declared only in
    the environment is declared on the command from its record)."""
    stage = finding.get("stage")
    if stage is None:
        head = f"--skip-first {skip} --active {active}{where}"
        kept = options.as_flags(given, SUGGESTION_SETS)
    else:
        head = where.strip()
        declared = {stages.split(text)[0]: text for text in stages.split_list(str(given.get("stage") or ""))}
        own = declared.get(stage, f"{stage}={finding.get('target')}")
        declared[stage] = stages.with_selection(own, [("skip-first", str(skip)), ("active", str(active))])
        kept = options.as_flags({**given, "stage": stages.SEPARATOR.join(declared.values())}, SUGGESTION_SETS)
    tail = (" " + shlex.join(kept) if kept else "") + (f" -- {shlex.join(command)}" if command else " -- COMMAND")
    return f"npuprof-run{' ' + head if head else ''}{tail}"
