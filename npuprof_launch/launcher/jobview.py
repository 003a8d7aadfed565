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

from npuprof_launch.common import names, options, stages, stepstats, steptimes

#: The options a suggested run sets itself; every other option the run was given is kept.
SUGGESTION_SETS = (*names.SCHEDULE_KEYS, "ranks", "total-steps", "on-demand")
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


def load(process: dict, output_dir: str, warmup: int = 0) -> dict | None:
    """The stats of one report row's step-times file (None when it has none)."""
    path = process.get("step_times")
    if not path:
        return None
    durations = steptimes.read(os.path.join(output_dir, path))
    return stepstats.rank_stats(durations, stepstats.ToolSteps(process.get("windows"), len(durations) + 1, warmup))


def summarize(
    processes: list[dict], command: list[str] | None = None, given: dict | None = None, route: str = "prefix"
) -> dict:
    """The ``job`` object of the report. Each process row carries ``step_stats`` (stepstats.rank_stats) and,
    when its window's traces were read, ``collective_s`` and ``window_s``. ``given``: the run's options
    as text; ``route``: how it was started ("prefix", or "env" for the variables), for the suggestions."""
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
            "median": stepstats.quantile(medians, 0.5),
            "p90": stepstats.quantile(medians, 0.9),
            "max": max(p["step_stats"]["max_s"] for p in timed),
        }
    for group in _groups(processes):
        job["slow_ranks"].extend(_slow_by_collectives(group) or _slow_by_step_times(group))
    job["spikes"] = _spikes(timed)
    job["window_steps"] = _window_steps(processes)
    job["suggestions"] = _suggestions(job, command, given or {}, route)
    return job


def _groups(processes: list[dict]) -> list[list[dict]]:
    """Processes whose steps compare: one run, one stage."""
    groups: dict[tuple, list[dict]] = {}
    for process in processes:
        if process.get("rank") is not None:
            groups.setdefault((process.get("run_id"), process.get("attempt"), process.get("stage")), []).append(process)
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
        typical = stepstats.quantile(others, 0.5)
        if typical <= 0 or own <= typical * SLOW_RANK_RATIO:
            continue
        if len(others) >= 2:
            mad = stepstats.quantile(sorted(abs(value - typical) for value in others), 0.5)
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
        typical = stepstats.quantile(sorted(p["collective_s"] for p in others), 0.5)
        share = stepstats.quantile(sorted(p["collective_s"] / p["window_s"] for p in others), 0.5)
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


def _suggestions(job: dict, command: list[str] | None, given: dict, route: str = "prefix") -> list[str]:
    """The next runs: a window on the worst spike, and one on the slowest rank; every other option
    the run was given (its --output-dir, --scenario, --stage, --backend, ...) is kept, and the run
    starts the way this one did (the prefix, or ``--print-env`` for a launch script), so each
    command works as printed. A spike beside a window's aftercare may have lacked the CPU our
    compression took: the job's worst spike clear of it comes first. Failing one, the worst beside
    it: the run suggested profiles that step with no aftercare beside it (its own comes after its
    window), so it tells the job's cost from ours."""
    found = []
    if job["spikes"]:
        spike = min(job["spikes"], key=lambda item: bool(item.get("beside_aftercare")))  # the first such
        ranks = spike["ranks"]
        everyone = len(ranks) >= job["ranks"]
        where = [] if everyone or not ranks else ["--ranks", rank_list(ranks)]
        found.append(_run(where, spike, spike["step"] - 1, 1, command, given, route))
    if job["slow_ranks"]:
        slow = job["slow_ranks"][0]
        skip = max(1, min(job["steps"] // 2, 10))
        found.append(_run(["--ranks", str(slow["rank"])], slow, skip, 2, command, given, route))
    return found


def _run(
    where: list[str], finding: dict, skip: int, active: int, command: list[str] | None, given: dict, route: str
) -> str:
    """One suggested command: these steps, on these ranks, of the job or of the finding's stage.

    A stage's own ``skip-first``/``active`` outrank the flags, so a stage's steps are chosen in
    its declaration; the other stages are kept as they were given (a stage declared only in
    the environment is declared on the command from its record). After the variables' route
    (``--print-env``, or NPU_PROF_* exported by hand) the command is the ``eval`` line for the
    launch script: the job's own command is not known there."""
    stage = finding.get("stage")
    if stage is None:
        head = ["--skip-first", str(skip), "--active", str(active), *where]
        kept = options.as_flags(given, SUGGESTION_SETS)
    else:
        head = list(where)
        declared = {stages.split(text)[0]: text for text in stages.split_list(str(given.get("stage") or ""))}
        own = declared.get(stage, f"{stage}={finding.get('target')}")
        declared[stage] = stages.with_selection(own, [("skip-first", str(skip)), ("active", str(active))])
        kept = options.as_flags({**given, "stage": stages.SEPARATOR.join(declared.values())}, SUGGESTION_SETS)
    if route == "env":
        return f'eval "$(npuprof-run --print-env {shlex.join([*head, *kept])})"'
    tail = f"-- {shlex.join(command)}" if command else "-- COMMAND"
    return " ".join(["npuprof-run", *([shlex.join([*head, *kept])] if head or kept else []), tail])
