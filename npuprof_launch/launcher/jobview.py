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
from collections.abc import Callable, Sequence
from typing import NamedTuple

from npuprof_launch.common import findings, names, options, stages, stepstats, steptimes

#: The options a suggested run sets itself; every other option the run was given is kept.
SUGGESTION_SETS = (*names.SCHEDULE_KEYS, "ranks", "total-steps", "on-demand")
SPIKES_SHOWN = 5
#: Out of lockstep, the ranks' last this many steps are compared step by step (4 bytes a step read
#: from each rank's file), and at most this many slow ranks named (the next among the rest each time).
COMPARED_STEPS = 1024
SLOW_RANKS_TESTED = 3
#: In lockstep: a rank whose time in collectives is below this fraction of the others' median (and
#: beyond their spread) is the one they wait for, when they spend at least COLLECTIVE_SHARE of their
#: window in collectives and the window held COLLECTIVE_MIN_STEPS recorded steps.
COLLECTIVE_RATIO = 0.25
#: ...or below this one when three ranks or more are the others: each of them waiting far longer
#: is evidence one busy moment cannot give (tried: examples/stragglers.py's rank 2, 30 ms slower a
#: step, waited 0.30 of the other three's time, each of them within 13 % of another, and at 0.25
#: no rank stood out).
COLLECTIVE_RATIO_MANY = 0.4
COLLECTIVE_SHARE = 0.10
COLLECTIVE_MIN_STEPS = 3
COLLECTIVE_WAIT_STEPS = 1.0
#: ...or of the slow rank's whole recorded step, when the window left its own time a recorded step
#: outside collectives within this factor of the job's median step.
COLLECTIVE_UNINFLATED = 1.1
COLLECTIVE_MIN_WAIT = 0.3
#: ...and only when its own time in the window outside collectives is longer than the others' by
#: this share of their extra wait at least (_why_not_its_work).
COLLECTIVE_WORK_SHARE = 0.5
COLLECTIVE_WINDOW_STEPS = 3.0
#: The tool's own steps are told from this many processes' step times.
TOOL_STEPS_READ = 64


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
    tool = stepstats.ToolSteps(
        process.get("windows"), len(durations) + 1, warmup, process.get("step_offset"), process.get("checkpoint_s")
    )
    return stepstats.rank_stats(durations, tool, process.get("cpu_wait"))


class Steps(NamedTuple):
    """One process's latest step times, for the findings that compare steps (findings.py)."""

    first: int  #: the step of ``durations[0]``
    durations: Sequence[float]
    tool: stepstats.ToolSteps


def read_steps(process: dict, output_dir: str) -> Steps | None:
    """The last COMPARED_STEPS step times of one report row (None without a step-times file)."""
    path = process.get("step_times")
    if not path:
        return None
    first, durations = steptimes.read_tail(os.path.join(output_dir, path), COMPARED_STEPS)
    steps = first + len(durations) - 1
    tool = stepstats.ToolSteps(
        process.get("windows"),
        steps,
        process.get("warmup") or 0,
        process.get("step_offset"),
        process.get("checkpoint_s"),
    )
    return Steps(first, durations, tool)


def summarize(
    processes: list[dict],
    command: list[str] | None = None,
    given: dict | None = None,
    route: str = "prefix",
    steps_of: Callable[[dict], Steps | None] | None = None,
) -> dict:
    """The ``job`` object of the report. Each process row carries ``step_stats`` (stepstats.rank_stats) and,
    when its window's traces were read, ``collective_s`` and ``window_s``. ``given``: the run's options
    as text; ``route``: how it was started ("prefix", or "env" for the variables), for the suggestions.
    ``steps_of``: a row's own step times (read_steps); without them no rank is named slow by its step
    times."""
    steps_of = steps_of or (lambda process: None)
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
        "slow_rank_verdict": None,
        "spikes": [],
        "undecidable_spikes": [],
        "cpu_wait_lines": [],
        "tool_steps": None,
        "window_steps": [],
        "suggestions": [],
    }
    if medians:
        job["step_time_s"] = {
            "median": stepstats.quantile(medians, 0.5),
            "p90": stepstats.quantile(medians, 0.9),
            "max": max(p["step_stats"]["max_s"] for p in timed),
        }
    series = {id(p): steps_of(p) for p in timed}
    reasons = []
    for group in _groups(processes):
        found, lockstep = _slow_by_collectives(group)
        if not found:
            found, reason = _slow_by_step_times(group, series)
            # In lockstep the ranks' step times are alike by construction: the collectives' reason.
            if not found and (lockstep or reason):
                reasons.append(lockstep or reason)
        job["slow_ranks"].extend(found)
    if len(ranks) >= 2:
        job["slow_rank_verdict"] = {
            "found": bool(job["slow_ranks"]),
            "reason": None if job["slow_ranks"] else (reasons[0] if reasons else "no per-step times to compare"),
        }
        if not job["slow_ranks"]:
            job["no_rank_stands_out"] = job["slow_rank_verdict"]["reason"]
    job["spikes"], job["undecidable_spikes"] = _spikes(timed)
    beside = [spike for spike in job["undecidable_spikes"] if spike.get("beside_aftercare")]
    job["tool_steps"] = _tool_steps(timed, series, job["step_time_s"], beside)
    job["cpu_wait_lines"] = _cpu_wait_lines(job["undecidable_spikes"])
    job["window_steps"] = _window_steps(processes)
    job["suggestions"] = _suggestions(job, command, given or {}, route)
    return job


def _groups(processes: list[dict]) -> list[list[dict]]:
    """Processes whose steps compare: one run, one stage."""
    groups: dict[tuple, list[dict]] = {}
    for process in processes:
        if process.get("rank") is not None:
            # One run a report (a job on several nodes is one, whatever its launchers' ids): its
            # attempts and stages apart.
            groups.setdefault((process.get("attempt"), process.get("stage")), []).append(process)
    return [group for group in groups.values() if len(group) >= 2]


def _stage_of(process: dict) -> dict:
    """``{"stage": NAME, "target": MOD:QUALNAME}`` for a stage's row, else nothing: a finding says
    whose steps it counts (a stage's steps are the calls of its function)."""
    if not process.get("stage"):
        return {}
    return {"stage": process["stage"], "target": process.get("target")}


def _shared_steps(rows: list[tuple[dict, Steps]]) -> list[int]:
    """The steps every row has, past the warm-up and outside every row's profiled steps (the tool's)."""
    first = max(max(steps.first for _, steps in rows), stepstats.WARMUP_STEPS + 2)
    last = min(steps.first + len(steps.durations) - 1 for _, steps in rows)
    tools = {repr(steps.tool.spans()): steps.tool for _, steps in rows}.values()
    return [step for step in range(first, last + 1) if not any(step in tool for tool in tools)]


def _slow_by_step_times(group: list[dict], series: dict) -> tuple[list[dict], str | None]:
    """Ranks not in lockstep: the rank whose steps are slower than the others' step by step, at
    findings.LEVEL (findings.slow_rank); then the next among the rest. The reason when none is."""
    rows = [(p, series.get(id(p))) for p in group]
    rows = [(p, steps) for p, steps in rows if steps is not None and len(steps.durations)]
    if len(rows) < 2:
        return [], "no per-step times to compare" if len(group) >= 2 else None
    shared = _shared_steps(rows)
    found: list[dict] = []
    while len(rows) >= 2 and len(found) < SLOW_RANKS_TESTED:
        by_rank = {p["rank"]: [steps.durations[step - steps.first] for step in shared] for p, steps in rows}
        verdict = findings.slow_rank(by_rank)
        if not verdict["found"]:
            return found, None if found else verdict["reason"]
        process = next(p for p, _ in rows if p["rank"] == verdict["rank"])
        found.append(
            {**_stage_of(process), **{k: v for k, v in verdict.items() if k != "found"}, "method": "step_times"}
        )
        rows = [(p, steps) for p, steps in rows if p is not process]
    return found, None


def _slow_by_collectives(group: list[dict]) -> tuple[list[dict], str | None]:
    """In lockstep: the rank that waits least in its collectives is the one the others wait for.

    Named only from windows of COLLECTIVE_MIN_STEPS recorded steps or more (tried: a healthy 4-rank
    job was told "rank 1 is the one the others wait for" from 2 steps of waits), and only with a
    margin that beats the spread between ranks: below COLLECTIVE_RATIO of the others' median (at a
    half, a busy machine's starving one of two alike ranks for a window was named; against three
    others or more, COLLECTIVE_RATIO_MANY), and further below the least of them than they are
    spread among themselves, so that one rank that happened to arrive last in a few collectives is
    no finding; and only with waits the job's steps can hold (_why_not_the_jobs).

    Also returns, when the ranks are in lockstep (the others spend COLLECTIVE_SHARE of their window
    in collectives or more) and none is named, why the rank that waited least is not: there the
    ranks' step times are alike by construction, and "no rank stands out" must say it is the
    collectives' evidence that fell short (tried: a DDP rank sleeping 30 % of a step more was told
    "less than 1.00 ms apart, within what the host's scheduling does to alike processes")."""
    measured = [p for p in group if p.get("collective_s") is not None and p.get("window_s")]
    if len(measured) < 2:
        return [], None
    found, why = [], {}
    for process in measured:
        others = [p for p in measured if p is not process]
        recorded = _recorded_steps(process)
        typical = stepstats.quantile(sorted(p["collective_s"] for p in others), 0.5)
        share = stepstats.quantile(sorted(p["collective_s"] / p["window_s"] for p in others), 0.5)
        own = process["collective_s"]
        low = min(p["collective_s"] for p in others)
        high = max(p["collective_s"] for p in others)
        ratio = COLLECTIVE_RATIO_MANY if len(others) >= 3 else COLLECTIVE_RATIO
        if share < COLLECTIVE_SHARE:
            continue
        span = f"{_wait_ms(low)}-{_wait_ms(high)} ms" if _wait_ms(low) != _wait_ms(high) else f"{_wait_ms(high)} ms"
        if recorded < COLLECTIVE_MIN_STEPS:
            reason = f"its window held {recorded} recorded steps, fewer than {COLLECTIVE_MIN_STEPS}"
        elif own >= typical * ratio:
            reason = f"that is not below {ratio:g} of the others' median ({_wait_ms(typical * ratio)} ms)"
        elif own >= low - (high - low):
            reason = "the others are spread among themselves by more than it is below the least of them"
        else:
            reason = _why_not_its_work(process, others, typical - own) or _why_not_the_jobs(
                process, others, typical - own, recorded
            )
        if reason is not None:
            why[id(process)] = (
                f"in lockstep (the others spent {share:.0%} of their window in collectives), rank {process['rank']} "
                f"waited least, {_wait_ms(own)} ms against {span} on the other ranks, and is no finding: {reason}"
            )
            continue
        steps = process.get("window_label") or "its window"
        found.append(
            {
                **_stage_of(process),
                "rank": process["rank"],
                "method": "collectives",
                "collective_s": own,
                "others_collective_s": typical,
                "others_min_collective_s": low,
                "steps": recorded,
                "ratio": round(own / low, 3) if low else 0.0,
                "test": f"least time in collectives, below {ratio:g} of the others' median and beyond their spread",
                "level": ratio,
                "evidence": f"in {steps} it spent {_wait_ms(own)} ms in collectives against {span} on the other ranks: "
                "the others wait for it",
            }
        )
    found.sort(key=lambda item: item["collective_s"] / max(item["others_collective_s"], 1e-12))
    least = min(measured, key=lambda p: p["collective_s"])
    return found, None if found else why.get(id(least))


def _wait_ms(seconds: float) -> str:
    """A time in collectives, in ms: whole ones from 10 ms, else a tenth (6 ms against 6 ms said nothing)."""
    return f"{seconds * 1e3:.0f}" if seconds >= 0.0095 else f"{seconds * 1e3:.1f}"


def _why_not_its_work(process: dict, others: list[dict], advantage_s: float) -> str | None:
    """Why the others' longer waits are not for this rank's work; None when they can be.

    In the window every moment of a rank is in a collective or its own (compute, data, a sleep):
    a rank the others wait for spends their extra wait in its own work, so its own time is longer
    than theirs by about as much. When it is not longer by COLLECTIVE_WORK_SHARE of their extra
    wait, their windows were longer than its own by that much instead: each rank's profiler starts
    and stops at its own moment, and the others waited for this one's start or stop, outside its
    window (tried: a healthy 4-rank DDP job beside a loaded suite, rank 0 in collectives 21 ms
    against 45-57 ms, own time 8.2 ms against 8.0-10.4 ms, window 29 ms against 55-65 ms; rank 3
    of the same job reading slow data: own time 218 ms against 14-21 ms, windows 245-259 ms)."""
    own_work = process["window_s"] - process["collective_s"]
    work = stepstats.quantile(sorted(p["window_s"] - p["collective_s"] for p in others), 0.5)
    if own_work - work >= COLLECTIVE_WORK_SHARE * advantage_s:
        return None
    windows = sorted(p["window_s"] for p in others)
    return (
        f"its own time in the window outside collectives, {_wait_ms(own_work)} ms, is not longer than the "
        f"others' ({_wait_ms(work)} ms) by half their extra wait: their windows were longer "
        f"({_wait_ms(windows[0])}-{_wait_ms(windows[-1])} ms against its {_wait_ms(process['window_s'])} ms), "
        "each rank's profiler starting and stopping at its own moment"
    )


def _why_not_the_jobs(process: dict, others: list[dict], advantage_s: float, recorded: int) -> str | None:
    """Why the others' longer waits, per recorded step, cannot be the job's or are not worth a run;
    None when they can and are.

    At least NOISE_S and COLLECTIVE_MIN_WAIT of the job's median step: in a few recorded steps the
    order in which alike ranks reach a collective moves their waits by up to a fifth of a step
    (tried: 2.5 ms a step of 12 ms, two alike gloo ranks). At most COLLECTIVE_WAIT_STEPS of the
    job's median step outside the tool's steps: in lockstep a wait is part of every rank's step,
    so a slow rank that makes the others wait X makes the job's steps longer than X (tried: alike
    ranks of 7 ms steps waited 7.6 ms a recorded step apart, the window's own doing); or of the
    slow rank's whole recorded step (its own time and its time in collectives), when the window
    left its own time a recorded step outside collectives as the job has it (within
    COLLECTIVE_UNINFLATED of the job's median step): a rank whose step is nearly all the job's slow
    part (a sleep, a wait for data) makes the others wait a whole step, and the profiler's cost on
    it a little more (tried: 202.8 ms a recorded step against a 202.3 ms median, examples/
    stragglers.py's rank 1 sleeping 200 ms a step); on a loaded machine the others' windows also
    run longer than its own, each rank's profiler starting and stopping when the CPU lets it (tried:
    rank 2 of 4 sleeping 100 ms a step, own time 109.4 ms a recorded step and 15 ms in collectives;
    the others waited 114.9 ms a recorded step longer in windows 8-21 ms a step longer than its
    own). Alike ranks cannot pass that way: the others' own work would have to be next to nothing,
    and an uninflated rank's time in collectives is the least of them. And only in a window whose
    recorded steps took at most COLLECTIVE_WINDOW_STEPS of the job's median step: past that the
    profiler's own cost, unevenly spread, swamps the waits (tried: a 0.5 ms job's recorded steps
    took 40 ms)."""
    per_step = advantage_s / max(recorded, 1)
    medians = [p["step_stats"]["median_s"] for p in (process, *others) if p.get("step_stats")]
    if per_step < findings.NOISE_S:
        return f"the others waited {per_step * 1e3:.2f} ms a recorded step longer, under {findings.NOISE_S * 1e3:g} ms"
    if not medians:
        return None
    step_s = stepstats.quantile(sorted(medians), 0.5)
    recorded_s = stepstats.quantile(sorted(p["window_s"] / max(recorded, 1) for p in (process, *others)), 0.5)
    most = COLLECTIVE_WAIT_STEPS * step_s
    own_s = (process["window_s"] - process["collective_s"]) / max(recorded, 1)
    if own_s <= COLLECTIVE_UNINFLATED * step_s:
        most = max(most, process["window_s"] / max(recorded, 1))
    longer = f"the others waited {per_step * 1e3:.1f} ms a recorded step longer"
    if per_step < COLLECTIVE_MIN_WAIT * step_s:
        return (
            f"{longer}, under {COLLECTIVE_MIN_WAIT:g} of the job's {step_s * 1e3:.1f} ms median step "
            "(the order in which alike ranks reach a collective moves their waits that much)"
        )
    if per_step > most:
        return f"{longer}, more than its steps can hold ({most * 1e3:.1f} ms): the window's own doing"
    if recorded_s > COLLECTIVE_WINDOW_STEPS * step_s:
        return (
            f"its recorded steps took {recorded_s * 1e3:.1f} ms against a {step_s * 1e3:.1f} ms median step: "
            "the profiler's own cost swamps the waits"
        )
    return None


def _recorded_steps(process: dict) -> int:
    return sum(
        (w.get("last_step") or w["first_step"]) - w["first_step"] + 1
        for w in process.get("windows") or ()
        if w.get("first_step") is not None
    )


def _spikes(timed: list[dict]) -> tuple[list[dict], list[dict]]:
    """Spikes grouped by step across ranks (lockstep spreads one rank's spike to all), worst first;
    and apart, those beside the tool's aftercare that the step times cannot tell from its cost
    (findings.spike_beside_aftercare): a rank's spike there is named only on its own evidence;
    and those a rank's wait for a CPU explains (findings.spike_with_cpu_wait): every rank's spike at
    that step, as the one rank's wait can hold all the others in lockstep."""
    by_step: dict[tuple, list[dict]] = {}
    for process in timed:
        stats = process["step_stats"]
        for spike in stats["spikes"]:
            key = (tuple(_stage_of(process).items()), spike["step"])  # a stage's steps are its own calls
            item = {**spike, "rank": process.get("rank")}
            if spike.get("beside_aftercare"):
                # Old records lack the aftercare's cost: undecidable, as their step times cannot tell.
                item["verdict"] = (
                    findings.spike_beside_aftercare(
                        spike["step_s"] - stats["median_s"], spike.get("aftercare_others_s")
                    )
                    if "aftercare_others_s" in spike
                    else (False, "beside the tool's aftercare, its cost not recorded")
                )
            if "cpu_wait_s" in spike:
                ok, text = findings.spike_with_cpu_wait(spike["step_s"], stats["median_s"], spike)
                item["cpu_verdict"] = (ok, text if item["rank"] is None else f"rank {item['rank']}: {text}")
            by_step.setdefault(key, []).append(item)
    grouped, undecidable = [], []
    for (stage, step), items in by_step.items():
        waited = [item for item in items if not item.get("cpu_verdict", (True, ""))[0]]
        if waited:
            group = _spike_group(dict(stage), step, items)
            group["cpu_wait"] = True
            group["undecidable"] = max(waited, key=lambda item: item["vs_median"])["cpu_verdict"][1]
            undecidable.append(group)
            continue
        named = [item for item in items if item.get("verdict", (True, ""))[0]]
        unnamed = [item for item in items if not item.get("verdict", (True, ""))[0]]
        if named:
            group = _spike_group(dict(stage), step, named)
            if all(item.get("beside_aftercare") for item in named):
                group["beside_aftercare"] = True
                group["evidence"] = max(named, key=lambda item: item["vs_median"])["verdict"][1]
            waits = [item for item in named if "cpu_verdict" in item]
            if waits:
                group["cpu_evidence"] = max(waits, key=lambda item: item["cpu_wait_s"])["cpu_verdict"][1]
            grouped.append(group)
        if unnamed:
            group = _spike_group(dict(stage), step, unnamed)
            group["beside_aftercare"] = True
            group["undecidable"] = max(unnamed, key=lambda item: item["vs_median"])["verdict"][1]
            undecidable.append(group)
    grouped.sort(key=lambda item: (-item["vs_median"], item["step"]))
    undecidable.sort(key=lambda item: (-item["vs_median"], item["step"]))
    return grouped[:SPIKES_SHOWN], undecidable[:SPIKES_SHOWN]


def _cpu_wait_lines(undecidable: list[dict]) -> list[str]:
    """The spikes a wait for a CPU explains, a line for each block of readings (its steps together)."""
    by_reason: dict[str, list[dict]] = {}
    for spike in sorted((s for s in undecidable if s.get("cpu_wait")), key=lambda s: s["step"]):
        by_reason.setdefault(spike["undecidable"], []).append(spike)
    lines = []
    for reason, spikes in by_reason.items():
        steps, ratios = (", ".join(text) for text in zip(*((f"{s['step']}", f"{s['vs_median']:.1f}x") for s in spikes)))
        lines.append(f"step{'s' if len(spikes) > 1 else ''} {steps} ({ratios} the median): {reason}")
    return lines


def _spike_group(stage: dict, step: int, items: list[dict]) -> dict:
    worst = max(items, key=lambda item: item["vs_median"])
    return {
        **stage,
        "step": step,
        "ranks": sorted(item["rank"] for item in items if item["rank"] is not None),
        "processes": len(items),
        "step_s": worst["step_s"],
        "vs_median": round(worst["vs_median"], 2),
        "test": f"over {stepstats.SPIKE_RATIO:g}x its rank's median and {stepstats.SPIKE_MIN_S * 1e3:g} ms longer",
    }


def _tool_steps(timed: list[dict], series: dict, step_time: dict | None, undecidable: list[dict]) -> dict | None:
    """The steps the tool's own work touched, apart, with their cost: the windows with the steps that
    start and stop them (the profiler's own cost), and the steps beside a window's aftercare; in the
    job's numbering, as the windows are (a resumed job's ``step_offset``)."""
    recorded: list[list[int]] = []
    beside: list[list[int]] = []
    low = high = None
    for process in timed[:TOOL_STEPS_READ]:
        steps = series.get(id(process))
        if steps is None:
            continue
        shift = process.get("step_offset") or 0
        for first, last in steps.tool.spans():
            recorded.append([first + shift, last + shift])
            cut = steps.durations[max(0, first - steps.first) : max(0, last - steps.first + 1)]
            if cut:
                low = min(cut) if low is None else min(low, min(cut))
                high = max(cut) if high is None else max(high, max(cut))
        beside.extend([first + shift, last + shift] for first, last in steps.tool.aftercare_spans())
    held = sorted(
        (spike["step"] + (p.get("step_offset") or 0), spike["step_s"], spike["checkpoint_s"])
        for p in timed
        for spike in (p.get("step_stats") or {}).get("checkpoint_spikes") or ()
    )
    if not recorded and not beside and not held:
        return None
    recorded, beside = stepstats.merged(recorded), stepstats.merged(beside)
    lines = []
    median = (step_time or {}).get("median")
    if recorded:
        took = f" took {_ms_range(low, high)}" if low is not None else ""
        against = f" against a {median * 1e3:.2f} ms median" if median and low is not None else ""
        lines.append(
            f"steps {_spans_text(recorded)} (the windows and the steps that start and stop them){took}{against}: "
            "left out of the findings, since the profiler works in them (a cost the job's steps do not have)"
        )
    if beside:
        line = f"steps {_spans_text(beside)} ran beside the tool's compression and summary of a window (its aftercare)"
        if undecidable:
            told = ", ".join(
                f"step {s['step']} ({s['step_s'] * 1e3:.1f} ms, {s['vs_median']:.1f}x)" for s in undecidable
            )
            line += f"; undecidable there, the job's or the tool's: {told}"
        lines.append(line)
    if held:
        lines.append(
            f"step{'s' if len(held) > 1 else ''} {_spans_text(stepstats.merged([s, s] for s, _, _ in held))} "
            f"({_ms_range(min(h[1] for h in held), max(h[1] for h in held))}) held the tool's own record "
            f"writing ({_ms_range(min(h[2] for h in held), max(h[2] for h in held))}, as it timed it, a loaded "
            "machine's wait for the CPU included): spikes with it, none without it, so no finding"
        )
    return {
        "recorded_steps": recorded,
        "recorded_s": [low, high] if low is not None else None,
        "job_median_s": median,
        "aftercare_steps": beside,
        "checkpoint_spikes": [{"step": s, "step_s": step_s, "checkpoint_s": c} for s, step_s, c in held],
        "lines": lines,
    }


def _spans_text(spans) -> str:
    return ", ".join(f"{a}-{b}" if b != a else f"{a}" for a, b in spans)


def _ms_range(low: float, high: float) -> str:
    return f"{low * 1e3:.1f} ms" if abs(high - low) < 5e-5 else f"{low * 1e3:.1f}-{high * 1e3:.1f} ms"


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
    command works as printed. The spike is the job's worst (job["spikes"] comes worst first): one
    beside a window's aftercare is among them only when its step times tell it is the job's own
    (findings.spike_beside_aftercare), and the run suggested profiles that step with no aftercare
    beside it (its own comes after its window). Preferring a spike clear of the aftercare sent a
    loaded machine's 5x step ahead of the job's 750x stall (CI, the print-env route's test)."""
    found = []
    if job["spikes"]:
        spike = job["spikes"][0]
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
