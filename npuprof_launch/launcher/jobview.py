"""The job's answer: one view of every process's whole run, short at any scale.

Two facts decide the method. In a synchronous data-parallel job every rank's step time is the
same, because the others wait for the slow one inside the collective; so step times alone find
spikes and drifts, and the slow rank only where ranks are not in lockstep (pipeline stages,
servers, rollouts). The window's traces do tell in lockstep: the rank that waits least in its
collectives is the one the others wait for (lockstep.py).

Step numbers are the job's: the duration of step ``s`` is the time between the boundaries that
end steps ``s - 1`` and ``s`` (steptimes.py); step 1 has none. ``step_time_s`` describes the
ranks' median step times: their median, 90th percentile and maximum.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from npuprof_launch.common import findings, stepstats, steptimes
from npuprof_launch.launcher import answer, cputime, heldback, jobend, lockstep, nextruns, periods, windowstall, wording

#: Out of lockstep, the ranks' last this many steps are compared step by step (4 bytes a step read
#: from each rank's file), and at most this many slow ranks named (the next among the rest each time).
COMPARED_STEPS = 1024
SLOW_RANKS_TESTED = 3
#: The tool's own steps are told from this many processes' step times.
TOOL_STEPS_READ = 64
#: A window whose profiler took this long to start has its start told (the user waits for it: a
#: first torch.profiler start in a process loads Kineto, 1.3-3.2 s seen with --target).
PROFILER_START_TOLD_S = 1.0
#: Where summarize() keeps its notes (items) until report.build takes them out (notes()).
NOTES = "_notes"


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
    job: dict[str, Any] = {
        "processes": len(processes),
        "ranks": len(ranks),
        "hosts": len({p.get("host") for p in processes}),
        "steps": max((p.get("steps") or 0 for p in processes), default=0),
        "windows_planned": sum(p.get("windows_planned") or 0 for p in processes),
        "windows_completed": sum(p.get("windows_completed") or 0 for p in processes),
        "step_time_s": None,
        "slow_ranks": [],
        "slow_rank_verdict": None,
        "waited_for": [],
        "held_back": [],
        "spikes": [],
        "spike_period": None,
        "undecidable_spikes": [],
        "window_spikes": [],
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
    median = (job["step_time_s"] or {}).get("median")
    for group in _groups(processes):
        pairs, in_lockstep, verdict = lockstep.slow_ranks(group)
        found = [{**_stage_of(process), **item} for process, item in pairs]
        once = [{**_stage_of(process), **item} for process, item in lockstep.waited_for(group)] if not found else []
        job["waited_for"].extend(once)
        if once and in_lockstep:
            in_lockstep += f" to tell a slow rank; in {once[0]['window']} the others waited for rank {once[0]['rank']}"
        if in_lockstep:
            in_lockstep += lockstep.too_few_text(verdict)
        reason = None
        if not found:
            found, reason = _slow_by_step_times(group, series)
        found, back = heldback.weigh(found, group, median, lockstep=in_lockstep is not None)
        job["held_back"].extend([{**_stage_of(group[0]), **back}] if back else [])
        # In lockstep the ranks' step times are alike by construction: the collectives' reason.
        if not found and not back and (in_lockstep or reason):
            reasons.append((in_lockstep, verdict) if in_lockstep else (reason, {}))
        job["slow_ranks"].extend(found)
    if len(ranks) >= 2:
        reason, evidence = reasons[0] if reasons else ("no per-step times to compare", {})
        job["slow_rank_verdict"] = {"found": bool(job["slow_ranks"]), "reason": None if job["slow_ranks"] else reason}
        if not job["slow_ranks"]:
            job["slow_rank_verdict"].update(evidence)
        if not job["slow_ranks"] and not job["held_back"]:
            job["no_rank_stands_out"] = job["slow_rank_verdict"]["reason"]
            busy = cputime.busy(timed)  # a small difference in work would not show: wording.unjudged
            job["slow_rank_verdict"].update({"machine_busy": busy} if busy else {})
    job["spikes"], undecidable, held = _spikes(timed, series)
    # Steps that may be the job's fill in its period: a wait for a CPU's, the aftercare's (a window's
    # recorded step does not: the profiler's cost is in it, 51 ms in a 1.5 ms job's first one)
    fills = [spike for spike in undecidable if spike.get("cpu_wait") or spike.get("beside_aftercare")]
    inside = windowstall.over_bar(timed, series, _stage_of)  # a window's own steps count for a period
    job["spike_period"] = periods.of_spikes(job["spikes"] + inside, fills, _near(timed, series, job["spikes"]))
    recorded = _recorded_spike(timed, series, median)
    job["window_spikes"] = windowstall.told(inside, job["spike_period"])
    windowstall.one_step(job)  # a rank named by its time in collectives that one step's spike holds
    if job["spike_period"]:  # the job's own periodic work: a wait for a CPU in it explains nothing away
        on = set(job["spike_period"]["steps"])
        undecidable = [spike for spike in undecidable if spike["step"] not in on or not spike.get("cpu_wait")]
    job["undecidable_spikes"] = undecidable[: findings.SPIKES_SHOWN]
    job["spikes"] = job["spikes"][: findings.SPIKES_SHOWN]
    beside = [spike for spike in job["undecidable_spikes"] if spike.get("beside_aftercare")]
    job["tool_steps"] = _tool_steps(timed, series, job["step_time_s"], beside, held, recorded)
    job[NOTES] = _cpu_wait_notes(job["undecidable_spikes"]) + jobend.notes(job["undecidable_spikes"])
    job["cpu_wait_lines"] = answer.texts(job[NOTES])
    job["window_steps"] = _window_steps(processes)
    waiting = any(process.get("collective_s") for process in processes)  # its ranks wait for each other
    step = recorded["step"] if recorded else None
    job["suggestions"] = nextruns.of_job(job, command, given or {}, route, waiting, step)
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


def _near(timed: list[dict], series: dict, spikes: list[dict]) -> list[dict]:
    """The steps near a spike (periods.near_steps) of the spikes' stage, where there are spikes."""
    if not spikes:
        return []
    stage = spikes[0].get("stage")
    rows = [
        (p.get("rank"), steps.first, p.get("step_offset") or 0, steps.durations, steps.tool, _median(p))
        for p in timed
        if (steps := series.get(id(p))) is not None and _stage_of(p).get("stage") == stage
    ]
    return periods.near_steps(rows)


def _median(process: dict) -> float:
    return process["step_stats"]["median_s"]


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


def _slow_by_step_times(group: list[dict], series: dict[int, Steps | None]) -> tuple[list[dict], str | None]:
    """Ranks not in lockstep: the rank whose steps are slower than the others' step by step, at
    findings.LEVEL (findings.slow_rank); then the next among the rest. The reason when none is."""
    rows = [(p, steps) for p in group if (steps := series.get(id(p))) is not None and len(steps.durations)]
    if len(rows) < 2:
        return [], "no per-step times to compare" if len(group) >= 2 else None
    shared = _shared_steps(rows)
    found: list[dict] = []
    while len(rows) >= 2 and len(found) < SLOW_RANKS_TESTED:
        by_rank = {p["rank"]: [steps.durations[step - steps.first] for step in shared] for p, steps in rows}
        verdict = findings.slow_rank(by_rank)
        more = cputime.longest([p for p, _ in rows], lockstep.DEVICE)  # the rank whose own work ran longer, if any
        verdict = cputime.confirm_slow(verdict, more) or verdict  # steps that overlap: the CPU tells
        if not verdict["found"] and not found:  # steps the sharing of the cores set: the work tells
            verdict = cputime.busier(more, by_rank) or verdict
        if not verdict["found"]:
            return found, None if found else verdict["reason"]
        process = next(p for p, _ in rows if p["rank"] == verdict["rank"])
        theirs = [stepstats.cpu_wait_in(p.get("cpu_wait"), shared) for p, _ in rows if p is not process]
        own = stepstats.cpu_wait_in(process.get("cpu_wait"), shared)
        ran_ratio = cputime.ratio_of([p for p, _ in rows], process["rank"])
        waited = findings.slow_rank_waited(verdict, own, theirs, len(shared), ran_ratio)
        if waited is not None and more is not None and more["rank"] == process["rank"]:
            verdict = {**verdict, **cputime.evidence_of(more), "rule": more["rule"]}  # a busier rank waits more
            verdict["evidence"] += (
                f"; it waited more for a CPU, having more to run: {cputime.did(more['rule'])} {cputime.text(more)}"
            )
        elif waited is not None:
            return found, None if found else waited
        found.append(
            {**_stage_of(process), **{k: v for k, v in verdict.items() if k != "found"}, "method": "step_times"}
        )
        rows = [(p, steps) for p, steps in rows if p is not process]
    return found, None


def _last_s(steps: Steps | None, last: int | None) -> float | None:
    """The time of step ``last`` where the step times read end with it, else None."""
    if steps is None or not steps.durations or steps.first + len(steps.durations) - 1 != last:
        return None
    return steps.durations[-1]


def _spikes(timed: list[dict], series: dict[int, Steps | None]) -> tuple[list[dict], list[dict], list[tuple]]:
    """Spikes grouped by step across ranks (lockstep spreads one rank's spike to all), worst first;
    and apart, those beside the tool's aftercare that the step times cannot tell from its cost
    (findings.spike_beside_aftercare): a rank's spike there is named only on its own evidence;
    and those a wait for a CPU explains: the rank's own, or in lockstep the wait (_waited_for_theirs)
    of the rank it waited for; never one rank's stall by another's wait out of lockstep (tried: two
    ranks training alone, rank 1 slept 0.6 s in step 7 and rank 0's small wait there made the step
    undecidable on both). Third, the spikes that
    another rank's checkpoint at that step explains, as ``(step, step_s, checkpoint_s, rank)``: in
    lockstep the others wait for its record writing (tried: a healthy 2-rank DDP job of 5 ms steps
    beside a CPU hog, rank 1's writing took 42.5 ms of step 5, and rank 0's step 5 was named a
    spike of 48.5 ms), so a spike with that time and none without it is the tool's. Fourth, a spike
    of the job's last step on some ranks of a lockstep group only (jobend.py; ``series``: the rows'
    step times, read_steps)."""
    writing: dict[tuple, list[tuple]] = {}
    for process in timed:
        for step, seconds in process.get("checkpoint_s") or ():
            shifted = int(step) + (process.get("step_offset") or 0)
            writing.setdefault((tuple(_stage_of(process).items()), shifted), []).append((process, float(seconds)))
    by_step: dict[tuple, list[dict]] = {}
    owner: dict[int, tuple[dict, float]] = {}  # id(item) -> its process and median step
    held: list[tuple] = []
    for process in timed:
        stats = process["step_stats"]
        for spike in stats["spikes"]:
            key = (tuple(_stage_of(process).items()), spike["step"])  # a stage's steps are its own calls
            step = spike["step"] + (process.get("step_offset") or 0)
            theirs = [(p, c) for p, c in writing.get((key[0], step), ()) if p is not process]
            other, seconds = max(theirs, key=lambda pair: pair[1], default=(None, 0.0))
            if other is not None and spike["step_s"] - seconds <= stepstats.spike_bar(stats["median_s"]):
                held.append((step, spike["step_s"], seconds, other.get("rank")))
                continue
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
                own = stats.get("own_median_s") or stats["median_s"]  # its steps' own time: like for like
                ok, text = findings.spike_with_cpu_wait(spike["step_s"], own, spike, own != stats["median_s"])
                item["cpu_verdict"] = (ok, text if item["rank"] is None else f"rank {item['rank']}: {text}")
            by_step.setdefault(key, []).append(item)
            owner[id(item)] = (process, stats["median_s"])
    grouped, undecidable = [], []
    for (stage, step), items in by_step.items():
        spiked = [owner[id(item)][0] for item in items]
        same = [p for p in timed if tuple(_stage_of(p).items()) == stage]
        ended = jobend.ended_first(spiked, same, step, lambda p: _last_s(series.get(id(p)), p.get("steps")))
        if ended:  # the job's last step, where the ranks done first exit: never named
            undecidable.append(jobend.told_apart(_spike_group(dict(stage), step, items), ended))
            continue
        own = [item for item in items if not item.get("cpu_verdict", (True, ""))[0]]  # its own wait explains it
        mine = {id(item) for item in own}
        waited = [item for item in items if id(item) in mine or _waited_for_theirs(item, own, owner)]
        if waited:
            group = _spike_group(dict(stage), step, waited)
            group["cpu_wait"] = True
            group["undecidable"] = max(own, key=lambda item: item["cpu_wait_s"])["cpu_verdict"][1]
            undecidable.append(group)
        told = {id(item) for item in waited}
        rest = [item for item in items if id(item) not in told]
        named = [item for item in rest if item.get("verdict", (True, ""))[0]]
        unnamed = [item for item in rest if not item.get("verdict", (True, ""))[0]]
        held_up = {id(item) for item in named if _waited_for_theirs(item, unnamed, owner, beside=True)}
        named = [item for item in named if id(item) not in held_up]
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
            group = _spike_group(dict(stage), step, unnamed + [item for item in rest if id(item) in held_up])
            group["beside_aftercare"] = True
            group["undecidable"] = max(unnamed, key=lambda item: item["vs_median"])["verdict"][1]
            undecidable.append(group)
    grouped.sort(key=lambda item: (-item["vs_median"], item["step"]))
    undecidable.sort(key=lambda item: (-item["vs_median"], item["step"]))
    return grouped, undecidable, held


def _waited_for_theirs(item: dict, own: list[dict], owner: dict[int, tuple[dict, float]], beside: bool = False) -> bool:
    """Whether another rank's wait for a CPU explains this rank's spike: ranks not known to be apart
    (lockstep.apart), a rank whose own spike its wait explains (``own``, at that step), when that
    wait takes this one's under the spike bar too: that rank was runnable and unscheduled, and this
    one waited for it in a collective. Another rank's shorter wait never explains a longer stall.
    ``beside``: others' spikes beside the tool's aftercare, at least as long: it waited for them (F15:
    a healthy 8-rank DDP rank's last step of 106 ms, 1.6 ms of it waiting for a CPU)."""
    process, median = owner[id(item)]
    bar = stepstats.spike_bar(median)
    return any(
        (item["step_s"] <= other["step_s"] if beside else item["step_s"] - other["cpu_wait_s"] <= bar)
        and not lockstep.apart(process, owner[id(other)][0])
        for other in own
    )


def _cpu_wait_notes(undecidable: list[dict]) -> list[dict]:
    """The spikes a wait for a CPU explains, an item for each block of readings (its steps together)."""
    by_reason: dict[str, list[dict]] = {}
    for spike in sorted((s for s in undecidable if s.get("cpu_wait")), key=lambda s: s["step"]):
        by_reason.setdefault(spike["undecidable"], []).append(spike)
    notes = []
    for reason, spikes in by_reason.items():
        steps, ratios = (", ".join(text) for text in zip(*((f"{s['step']}", f"{s['vs_median']:.1f}x") for s in spikes)))
        line = f"step{'s' if len(spikes) > 1 else ''} {steps} ({ratios} the median): {reason}"
        ranks = [rank for spike in spikes for rank in spike.get("ranks") or ()]
        told = [{key: s.get(key) for key in ("step", "step_s", "vs_median", "cpu_wait_s")} for s in spikes]
        notes.append(answer.item("cpu_wait", line, ranks, [s["step"] for s in spikes], spikes=told))
    return notes


def notes(job: dict) -> list[dict]:
    """The notes of the job's answer (answer.NOTE): why no rank stands out, the tool's own steps,
    the steps and slowdowns a wait for a CPU explains; taken out of ``job`` (its lines stay there)."""
    told = []
    if job.get("no_rank_stands_out"):
        verdict = {key: value for key, value in (job.get("slow_rank_verdict") or {}).items() if key != "reason"}
        told.append(answer.item("no_rank_stands_out", job["no_rank_stands_out"], **verdict))
    told.extend((job.get("tool_steps") or {}).pop(NOTES, ()))
    told.extend(job.pop(NOTES, ()))
    return told


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


def _slow_edges(processes: list[dict], key: str) -> list[dict]:
    """The windows whose profiler took PROFILER_START_TOLD_S or more to start (``key`` "start_s") or
    to stop and export ("stop_s"), longest first; none in a record written before they were kept."""
    slow = [
        {"rank": process.get("rank"), "first_step": window.get("first_step"), key: window[key]}
        for process in processes
        for window in process.get("windows") or ()
        if (window.get(key) or 0) >= PROFILER_START_TOLD_S
    ]
    return sorted(slow, key=lambda one: -one[key])


def _recorded_spike(timed: list[dict], series: dict, median: float | None) -> dict | None:
    """The slowest step a window recorded, less the profiler's start (in its first step's time),
    where it is over the spike bar: ``{"step", "step_s", "vs_median", "rank", "window_steps"}`` (the
    steps its window recorded: one is the run a spike's next: suggests), else None. The profiler's
    cost stays in it: the README's 1.5 ms job's first recorded step took 51 ms."""
    slowest: tuple[int, float, dict] = (0, 0.0, {})
    length = 0
    for process in timed[:TOOL_STEPS_READ]:
        steps, shift = series.get(id(process)), process.get("step_offset") or 0
        if steps is None:
            continue
        for window in process.get("windows") or ():
            for step in range(window.get("first_step") or 0, (window.get("last_step") or -1) + 1):
                index = step - shift - steps.first
                start = (window.get("start_s") or 0.0) if step == window["first_step"] else 0.0
                if 0 <= index < len(steps.durations) and steps.durations[index] - start > slowest[1]:
                    slowest = (step, float(steps.durations[index]) - start, process)
                    length = (window.get("last_step") or step) - window["first_step"] + 1
    step, seconds, process = slowest
    if not median or seconds <= stepstats.spike_bar(median):
        return None
    own = step - (process.get("step_offset") or 0)  # a warm-up step is no spike, so no spike's run
    return {
        "step": step,
        "step_s": seconds,
        "vs_median": round(seconds / median, 1),
        "rank": process.get("rank"),
        "window_steps": length,
        "warmup": 1 < own <= 1 + stepstats.WARMUP_STEPS,
        **_stage_of(process),
    }


def _tool_steps(
    timed: list[dict],
    series: dict,
    step_time: dict | None,
    undecidable: list[dict],
    theirs: Sequence[tuple] = (),
    recorded_spike: dict | None = None,
) -> dict | None:
    """The steps the tool's own work touched, apart, with their cost: the windows with the steps that
    start and stop them (the profiler's own cost), and the steps beside a window's aftercare; in the
    job's numbering, as the windows are (a resumed job's ``step_offset``). ``recorded_spike``: the
    slowest step a window recorded, over the spike bar (_recorded_spike)."""
    recorded: list[list[int]] = []
    beside: list[list[int]] = []
    low = high = None
    for process in timed[:TOOL_STEPS_READ]:
        steps = series.get(id(process))
        if steps is None:
            continue
        shift = process.get("step_offset") or 0
        ran = (process.get("steps") or 0) + 1  # a window cut by the process's end: its steps that ran
        for first, last in steps.tool.spans():
            if first > ran:
                continue
            last = min(last, ran)
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
    if not recorded and not beside and not held and not theirs:
        return None
    recorded, beside = stepstats.merged(recorded), stepstats.merged(beside)
    notes = []
    median = (step_time or {}).get("median")
    if recorded:
        took = f" took {_ms_range(low, high)}" if low is not None and high is not None else ""
        against = f" against a {median * 1e3:.2f} ms median" if median and low is not None else ""
        line = (
            f"steps {_spans_text(recorded)} (the windows and the steps that start and stop them){took}{against}: "
            "left out of the findings, since the profiler works in them (its cost is in their times)"
        )
        if recorded_spike:  # _recorded_spike's, from summarize
            step, seconds, rank = recorded_spike["step"], recorded_spike["step_s"], recorded_spike["rank"]
            whose = f" on rank {rank}" if rank is not None and len(timed) > 1 else ""
            line += (
                f"; the slowest step a window recorded, step {step}{whose} ({seconds * 1e3:.1f} ms without the "
                f"profiler's start, its other costs in it: {seconds / median:.1f}x the median), is in its trace"
            )
        range_s = [low, high] if low is not None else None
        slow, stops = _slow_edges(timed, "start_s"), _slow_edges(timed, "stop_s")
        if slow:
            line += (
                f"; the profiler's own start took up to {slow[0]['start_s']:.1f} s in "
                f"{wording.count(len(slow), 'window')} (the first start in a process loads its libraries)"
            )
        if stops:
            line += (
                f"; its stop, with the export, took up to {stops[0]['stop_s']:.1f} s in "
                f"{wording.count(len(stops), 'window')} (in the step after the window)"
            )
        notes.append(
            answer.item(
                "tool_steps",
                line,
                steps=answer.steps_of(recorded),
                step_s=range_s,
                median_s=median,
                profiler_starts=slow[: findings.SPIKES_SHOWN],
                profiler_stops=stops[: findings.SPIKES_SHOWN],
                recorded_spike=recorded_spike,
            )
        )
    if beside:
        line = f"steps {_spans_text(beside)} ran beside the tool's compression and summary of a window (its aftercare)"
        if undecidable:
            told = ", ".join(
                f"step {s['step']} ({s['step_s'] * 1e3:.1f} ms, {s['vs_median']:.1f}x)" for s in undecidable
            )
            line += f"; undecidable there, the job's or the tool's: {told}"
        undecided = [{"step": s["step"], "step_s": s["step_s"], "vs_median": s["vs_median"]} for s in undecidable]
        notes.append(answer.item("aftercare_steps", line, steps=answer.steps_of(beside), undecidable=undecided))
    if held:
        line = _writing_line(held, "held", "", ", as it timed it, a loaded machine's wait for the CPU included", "")
        writes = [{"step": one[0], "step_s": one[1], "writing_s": one[2]} for one in held]
        notes.append(answer.item("record_steps", line, steps=[one[0] for one in held], writes=writes))
    if theirs:
        ranks = wording.rank_list(sorted({item[3] for item in theirs}, key=str))
        line = _writing_line(
            sorted(theirs, key=lambda item: item[0]),
            "waited for",
            f" on rank {ranks}",
            "",
            ", which holds the other ranks in lockstep",
        )
        writes = [{"step": one[0], "step_s": one[1], "writing_s": one[2], "writer": one[3]} for one in theirs]
        notes.append(answer.item("record_steps", line, steps=[one[0] for one in theirs], writes=writes))
    return {
        "recorded_steps": recorded,
        "recorded_s": [low, high] if low is not None else None,
        "job_median_s": median,
        "aftercare_steps": beside,
        "checkpoint_spikes": [{"step": s, "step_s": step_s, "checkpoint_s": c} for s, step_s, c in held]
        + [{"step": s, "step_s": step_s, "checkpoint_s": c, "checkpoint_rank": r} for s, step_s, c, r in theirs],
        "lines": answer.texts(notes),
        NOTES: notes,
    }


def _writing_line(items: list[tuple], did: str, whose: str, inside: str, after: str) -> str:
    """The steps the tool's record writing held, ``(step, step_s, checkpoint_s, ...)`` each, in one line."""
    steps = stepstats.merged([item[0], item[0]] for item in items)
    took = _ms_range(min(item[1] for item in items), max(item[1] for item in items))
    wrote = _ms_range(min(item[2] for item in items), max(item[2] for item in items))
    return (
        f"step{'s' if len(items) > 1 else ''} {_spans_text(steps)} ({took}) {did} the tool's own record writing"
        f"{whose} ({wrote}{inside}){after}: spikes with it, none without it, so no finding"
    )


def _spans_text(spans) -> str:
    return ", ".join(f"{a}-{b}" if b != a else f"{a}" for a, b in spans)


def _ms_range(low: float, high: float) -> str:
    return f"{low * 1e3:.1f} ms" if abs(high - low) < 5e-5 else f"{low * 1e3:.1f}-{high * 1e3:.1f} ms"


def _window_steps(processes: list[dict]) -> list[dict]:
    """The steps each set of ranks recorded: one entry when every rank's windows cover the same steps."""
    by_steps: dict[tuple, list] = {}
    for process in processes:
        covered = tuple(
            (w["first_step"], w["last_step"])
            for w in process.get("windows") or ()
            if w.get("last_step") and (w.get("complete") or w.get("traces"))  # one that recorded nothing: none
        )
        if covered:
            by_steps.setdefault((process.get("stage"), covered), []).append(process.get("rank"))
    return [
        {"stage": stage, "steps": [list(pair) for pair in covered], "ranks": sorted(r for r in ranks if r is not None)}
        for (stage, covered), ranks in sorted(by_steps.items(), key=lambda kv: str(kv[0]))
    ]
