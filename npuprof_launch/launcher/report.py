"""From the records, the process log, the launcher's account and the files to a verdict.

The same facts feed the launcher's end-of-run summary (summary.py) and ``npuprof-run --check DIR
--json`` (docs/answer.md, 'JSON', gives its fields). ``passed`` is true only when every process meant to profile
completed its windows and each of its deliverables exists and parses.

When the chain breaks, the report gives the reason of what broke first, and no advice that does
not apply: the command could not start; no Python process loaded the hook; the hook loaded but
no process imported torch; the job failed (exit status, signal) before the schedule completed;
no step was seen; a declared function was never imported, not found, never called, or called on
the wrong thread; the job was interrupted. Schedule advice ("run more steps") comes only when
the job ended normally and really ran short of steps.
"""

from __future__ import annotations

import os
from typing import Any

from npuprof_launch.common import deliverables, names, options, outcomes, processlog
from npuprof_launch.common.record import (
    ENDED_EXEC,
    ReadRecord,
    alive_here,
    attempt_of,
    process_count,
    read_dir,
    stop_under_way,
)
from npuprof_launch.launcher import (
    answer,
    failures,
    handoff,
    jobview,
    launch,
    leftovers,
    lockstep,
    nextruns,
    onslowdown,
    periods,
    reasons,
    runs,
    slowdowns,
    stallview,
    windowcheck,
    windowfiles,
    wording,
)
from npuprof_launch.launcher.progress import Progress

TOP_OPERATORS = 5
#: Up to this much trace on disk every trace is read again (deep); past it the windows' own
#: summaries are used (aftercare.py) and ``--check --deep`` reads them all, at about DEEP_RATE.
DEEP_BYTES = 512 * 2**20
DEEP_RATE = 40 * 2**20


def build(
    output_dir: str,
    run_id: str | None = None,
    deep: bool | None = None,
    run: dict | None = None,
    window: int | None = None,
) -> dict:
    """The report of one run under ``output_dir``: ``run_id``'s, else the latest (runs.py); the
    other runs there are listed, never merged in.

    ``deep``: read every trace again (True), use the windows' own summaries (False), or the first
    when the traces are small (None: up to DEEP_BYTES on disk). ``run``: the launcher's record of
    the run, where it has it in hand (it may not have been written). ``window``: the NPU window
    handed to msprof-analyze (handoff.py; by default the first complete one).
    """
    with deliverables.collector_paused():
        return _build(output_dir, run_id, deep, run, window)


#: The problems whose reason says how the command ended already (reasons.how_the_job_ended).
ENDING_TOLD = ("window_incomplete", "nothing_profiled", "target_no_step")


def _build(output_dir: str, run_id: str | None, deep: bool | None, run: dict | None, window: int | None) -> dict:
    output_dir = os.path.abspath(output_dir)
    accounts = launch.read_runs(output_dir)
    every_record = read_dir(output_dir)
    listing = runs.listed(every_record, accounts, processlog.read(output_dir), output_dir)
    reported = run_id if run_id is not None else runs.chosen(listing, None)
    if run is None and reported is not None:
        run = accounts.get(reported)
    together = runs.joined(listing, reported)  # a job on several nodes: one launcher, one run id a node
    records = [r for r in every_record if reported is None or "unreadable" in r or (r.get("run_id") or "") in together]
    weight = windowfiles.trace_bytes(output_dir, records)
    reread = deep is True  # --deep: NPU sessions too, not what their aftercare kept (keptreading.py)
    if deep is None:
        deep = weight <= DEEP_BYTES
    if reported is None:
        log = processlog.read(output_dir)
    else:
        log = [line for run_id in sorted(together) for line in processlog.read(output_dir, run_id)]
    ended = failures.accounts(log)  # how failed children ended, as their launchers saw it
    problems: list[tuple[tuple | None, dict]] = []  # (what a rank's problem says past its label, the item)
    findings: list[dict] = []
    processes, excluded, declined, replaced = [], [], [], []
    reading = Progress("reading the output" + (" and every trace" if deep else ""), len(records), "processes")
    for index, record in enumerate(records):
        reading.set(index)
        if "unreadable" in record:
            text = f"status record {record['file']} is unreadable: {record['unreadable']}"
            problems.append((None, answer.item("record_unreadable", text, file=record["file"])))
        elif record.get("ended") == ENDED_EXEC:
            replaced.append(record)
            record = _moved_on(record, records, findings)
            if record.get("windows") or record.get("traces"):  # the old image's window: a row of its own
                processes.append(_process(record, output_dir, run, problems, findings, deep, reread, ended))
        elif record.get("declined"):
            declined.append(record)
            problems.append(_about(record, "not_profiled", f"not profiled: {record['declined']}"))
        elif record.get("state") == "off" and not record.get("windows_planned"):
            excluded.append(record)
        else:
            processes.append(_process(record, output_dir, run, problems, findings, deep, reread, ended))
    reading.set(len(records))
    reading.finish()
    findings.extend(_rpc_agents(records))
    processes.sort(key=_order)
    for text in _excluded_problems(excluded, processes):
        problems.append((None, answer.item("ranks_matched_nothing", text)))
    idle = [line for line in log if line.get("event") == processlog.IDLE and not line.get("launcher")]
    workers = [line for line in idle if line.get("worker")]  # multiprocessing's children: never meant to step
    idle = [line for line in idle if not line.get("worker")]
    launchers = [line for line in log if line.get("event") == processlog.IDLE and line.get("launcher")]
    declared, told = _declared_problems(records, idle, run)
    problems.extend((None, one) for one in declared)
    full = windowfiles.full_disk(output_dir)  # its effects (no record, no trace) would be told as causes
    if not processes and not excluded and not declined and not declared and not replaced and not full:
        problems.append((None, answer.item("nothing_profiled", reasons.why_nothing(run, log, idle))))
    untracked = runs.untracked_problem(output_dir, every_record)
    if untracked:
        problems.append((None, answer.item("untracked_output", untracked)))
    given = runs.given_options(run, records, output_dir)
    job = jobview.summarize(
        processes,
        run.get("command") if run else None,
        given,
        route=runs.route(run, records),
        steps_of=lambda process: jobview.read_steps(process, output_dir),
    )
    for process in processes:  # read by the job's view alone: the rows stay small
        process.pop(lockstep.COLLECTIVES, None)
        process.pop(lockstep.ON_CPU, None)
        process.pop(lockstep.DEVICE, None)
    job["processes"] = process_count(processes)  # a process with two stages has two rows
    job["stalls"], job["pauses"] = stallview.summarize([r for r in records if "unreadable" not in r], output_dir)
    findings[:0] = [stallview.stall_item(stall) for stall in job["stalls"]]  # the job stopped: said first
    failed, folded = failures.items(records, answer.of_kind(findings, "ended_without_handlers"), log)
    findings = [one for one in findings if not any(one is told for told in folded)]
    findings[len(job["stalls"]) : len(job["stalls"])] = failed  # how it failed: next
    said = failed or any(one["kind"] in ENDING_TOLD for _, one in problems)
    ending = failures.ended_item(run, [r for r in records if "unreadable" not in r], bool(said))
    findings.extend([ending] if ending else [])
    findings.extend(stallview.pause_item(pause) for pause in job["pauses"])
    for key in ("spikes", "window_spikes"):  # a pause's step is told as the pause
        job[key] = stallview.unexplained(job[key], job["pauses"])
    job["slowdowns"], job["undecidable_slowdowns"] = slowdowns.of_processes(processes, output_dir)
    for slowdown in job["slowdowns"]:
        slowdown["recorded"] = slowdowns.recorded(slowdown, job["window_steps"], job["steps"])
    for slowdown in job["undecidable_slowdowns"]:
        text = slowdowns.cpu_wait_text(slowdown)
        job["cpu_wait_lines"].append(text)
        evidence = {key: slowdown.get(key) for key in ("cpu_wait_s", "before_s", "after_s", "ratio")}
        findings.append(answer.item("cpu_wait", text, slowdown["ranks"], [slowdown["step"]], **evidence))
    findings.extend(slowdowns.item(slowdown) for slowdown in job["slowdowns"])
    command, route = run.get("command") if run else None, runs.route(run, records)
    job["suggestions"] += nextruns.slowdown_runs(job, job["slowdowns"], command, given, route)
    findings.extend(onslowdown.asked_windows(processes, [r for r in records if "unreadable" not in r]))
    if given.get("on-slowdown") and job["slowdowns"] and not answer.of_kind(findings, *onslowdown.ASKED):
        findings.append(onslowdown.unseen_item(job["slowdowns"][0]))
    slow_ranks = {(slow["rank"], slow.get("stage")): slow["method"] for slow in job["slow_ranks"]}
    waited_in = {(once["rank"], once.get("stage")): once["window"] for once in job["waited_for"]}
    for process in processes:
        method = slow_ranks.get((process.get("rank"), process.get("stage")))
        if method is not None:
            process["slowest_rank"] = True
            process["slow_by"] = method
        if (process.get("rank"), process.get("stage")) in waited_in:
            process["waited_for_in"] = waited_in[(process.get("rank"), process.get("stage"))]
    findings.extend(_slow_rank_item(slow) for slow in job["slow_ranks"])
    findings.extend(_waited_for_item(once) for once in job["waited_for"])
    findings.extend(_held_back_item(held) for held in job.get("held_back") or ())
    findings.extend(_spike_item(spike, job) for spike in job["spikes"] + job["window_spikes"])
    if job.get("spike_period"):
        period = job["spike_period"]
        evidence = {"every": period["every"], **({"near": period["near"]} if period.get("near") else {})}
        findings.append(answer.item("period", periods.text(period), steps=period["steps"], **evidence))
    differing = _differing_windows(job["window_steps"])
    if differing:
        text = "the ranks' windows cover different steps: " + "; ".join(
            f"{_whose(w)}: steps {_steps_text(w['steps'])}" for w in differing
        )
        ranks = [rank for w in differing for rank in w["ranks"]]
        spans = [span for entry in differing for span in entry["steps"]]
        findings.append(answer.item("windows_differ", text, ranks, answer.steps_of(spans)))
    if full and (problems or not processes):
        problems.insert(0, (None, answer.item("disk_full", full)))
    if not deep and weight:
        text = (
            f"the traces ({weight / 2**30:.1f} GB) were not read again: their summaries were; "
            f"npuprof-run --check {output_dir} --deep reads every one (about {weight / DEEP_RATE / 60:.0f} min)"
        )
        findings.append(answer.item("traces_summarized", text, trace_bytes=weight))
    findings.extend(jobview.notes(job))
    made, differs = _handoff(output_dir, reported, processes, window)
    findings.extend(differs)
    return {
        "schema_version": answer.SCHEMA_VERSION,
        "passed": not problems and bool(processes),
        "deep": deep,
        "trace_bytes": weight,
        "findings": answer.of_severity(findings, answer.FINDING),
        "problems": _grouped(problems),
        "notes": answer.of_severity(findings, answer.NOTE),
        "job": job,
        "processes": processes,
        "handoff": made,
        "replaced": [_label(r) for r in replaced],
        "idle_processes": sum(1 for line in idle if not line.get("stepped") and id(line) not in told),
        # torchrun's agent and the like: they import torch to start the workers, never to step.
        "launcher_processes": len(launchers),
        # mp.spawn's workers that served (RPC agents), spawned data loaders' workers: by kind.
        "idle_workers": {kind: sum(1 for line in workers if line["worker"] == kind) for kind in _kinds(workers)},
        "left_out": _left_out(excluded),
        "run": run,
        "run_id": reported,
        "runs": [dict(item, reported=item["run_id"] in together) for item in listing],
        "output_dir": output_dir,
        "raw_kept": windowfiles.raw_kept(processes, output_dir),
    }


def _rpc_agents(records: list[ReadRecord]) -> list[dict]:
    """One note for the ranks whose windows recorded beside an RPC agent (outcomes.RPC_AGENT): torch's
    own line about it reaches the job's stderr only under the tool, so the answer says what it means."""
    found = [
        (record.get("rank"), outcome["step"])
        for record in records
        if "unreadable" not in record
        for outcome in outcomes.of_kind(outcomes.of_record(record), outcomes.RPC_AGENT)
    ]
    if not found:
        return []
    ranks, steps = zip(*found)
    return [answer.item("rpc_caller_only", outcomes.RPC_SENTENCE, ranks, [s for s in steps if s is not None])]


def _moved_on(record: ReadRecord, records: list[ReadRecord], notes: list[dict]) -> ReadRecord:
    """An image that re-executed itself (``os.exec``) right after its window opened, before any
    whole step: that window holds nothing, and the new image, which counts on, records the window
    (a job that runs one probe step and re-executes). The window is told as a note and taken out of
    the old image's row, its empty trace with it, when a later image of the process recorded one;
    else it stays a problem (the windows asked for were not recorded)."""
    cut = [
        outcome
        for outcome in outcomes.of_kind(outcomes.of_record(record), outcomes.CUT_SHORT)
        if outcome.get("by") == "os.exec" and outcome.get("kept") is None
    ]
    empty = [w for w in record.get("windows") or () if w.get("last_step") is None and not w.get("complete")]
    later = [
        other
        for other in records
        if "unreadable" not in other
        and (other.get("host"), other.get("pid")) == (record.get("host"), record.get("pid"))
        and (other.get("started_ns") or 0) > (record.get("started_ns") or 0)
        and any(w.get("complete") for w in other.get("windows") or ())
    ]
    if not cut or not empty or not later:
        return record
    recorded = [w for w in later[0]["windows"] if w.get("complete")][0]
    gone = {rel for w in empty for rel in w.get("traces") or ()}
    for window in empty:
        text = (
            f"{_label(record)}: the window opened at step {window['first_step']} recorded no whole step before "
            f"os.exec; the process's new image recorded the window (steps {recorded['first_step']}-"
            f"{recorded['last_step']})"
        )
        notes.append(answer.item("window_moved_on", text, [record.get("rank")], [window["first_step"]]))
    kept = record.copy()
    kept["windows"] = [w for w in record.get("windows") or () if w not in empty]
    kept["traces"] = [rel for rel in record.get("traces") or () if rel not in gone]
    kept["windows_planned"] = max(0, (record.get("windows_planned") or 0) - len(empty))
    return kept


def _handoff(
    output_dir: str, run_id: str | None, processes: list[dict], window: int | None
) -> tuple[dict | None, list]:
    """msprof-analyze's directory for one NPU window (handoff.py): a failure to lay it out is one
    line, never the report's."""
    try:
        return handoff.build(output_dir, run_id or "", processes, window)
    except OSError as exc:
        names.say(f"could not lay out the directory for msprof-analyze: {exc}")
        return None, []


def _kinds(workers: list[dict]) -> list[str]:
    return sorted({str(line["worker"]) for line in workers})


def _label(record: ReadRecord) -> str:
    rank = record.get("rank")
    where = f"rank {rank}" if rank is not None else "process"
    stage = f" stage {record['stage']}" if record.get("stage") else ""
    attempt = attempt_of(record)
    restart = f", after restart {attempt}" if attempt else ""
    image = ", before its os.exec" if record.get("ended") == ENDED_EXEC else ""
    return f"{where}{stage} (pid {record.get('pid')} on {record.get('host')}{restart}{image})"


def _order(process: dict) -> tuple:
    """Attempts apart, in order; in each, ranks in numeric order, rankless processes after them,
    stages together."""
    rank = process.get("rank")
    return (
        process.get("attempt") or 0,
        rank is None,
        rank if rank is not None else 0,
        str(process.get("stage")),
        process.get("pid") or 0,
    )


def _differing_windows(window_steps: list[dict]) -> list[dict]:
    """The entries of the stages whose processes' windows cover different steps (stages are given
    their own selections on purpose, so only processes of one stage are compared)."""
    per_stage: dict = {}
    for entry in window_steps:
        per_stage.setdefault(entry.get("stage"), []).append(entry)
    return [entry for entries in per_stage.values() if len(entries) > 1 for entry in entries]


def _whose(entry: dict) -> str:
    who = wording.who(entry["ranks"]) if entry["ranks"] else "processes without a rank"
    return f"stage {entry['stage']} {who}" if entry.get("stage") else who


def _steps_text(pairs) -> str:
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in pairs)


def _process(
    record: ReadRecord,
    output_dir: str,
    run: dict | None,
    problems: list,
    findings: list,
    deep: bool,
    reread: bool,
    ended: dict | None = None,
) -> dict:
    """One report row, its deliverables checked; its problems added, each with its true reason."""
    process: dict[str, Any] = {
        key: record.get(key)
        for key in (
            "host",
            "pid",
            "rank",
            "rank_source",
            "stage",
            "target",
            "backend",
            "state",
            "steps",
            "step_offset",
            "numbered_by",
            "windows_planned",
            "windows_completed",
            "partial_traces",
            "mean_step_s",
            "run_id",
            "ended",
            "step_times",
            "checkpoint_s",
            "cpu_wait",
        )
    }
    process.update(
        attempt=attempt_of(record),
        traces=list(record.get("traces") or []),
        windows=[dict(w) for w in record.get("windows") or []],
        warnings=list(record.get("warnings") or []),
        errors=list(record.get("errors") or []),
        profiler_steps=0,
    )
    printed = record.get("profiler_errors")  # None: an older record, its profiler's errors among its errors
    said = {text: names.PROFILER_ERROR + text for text in printed or ()}  # each printed error's sentence
    process["errors"] += said.values()
    self_times: dict[str, float] = {}
    trace_problems, collective_us, window_us = windowcheck.check(record, output_dir, process, self_times, deep, reread)
    process["top_operators"] = [
        {"name": name, "self_us": round(us, 1)}
        for name, us in sorted(self_times.items(), key=lambda kv: -kv[1])[:TOP_OPERATORS]
    ]
    # what ``self_us`` measures: CPU self time of a torch trace's operators, or an NPU session's device
    # time per operator type (op_statistic.csv, kernel_details.csv): told apart wherever it is shown
    process["top_operators_time"] = "device" if record.get("backend") == "npu" else "self"  # wording.OPERATOR_TIME
    process["warmup"] = (record.get("options") or {}).get("warmup") or 0
    stats = record.get("step_stats") or jobview.load(process, output_dir, warmup=process["warmup"])
    process["step_stats"] = stats
    if stats:
        process["median_step_s"] = stats["median_s"]
    if window_us:
        process["collective_s"] = collective_us / 1e6
        process["window_s"] = window_us / 1e6
        spans = [(w["first_step"], w.get("last_step") or w["first_step"]) for w in process["windows"]]
        if spans:  # none for traces listed without their windows (an old record, a synthetic one)
            one = len(spans) == 1 and spans[0][0] == spans[0][1]
            process["window_label"] = ("step " if one else "steps ") + _steps_text(spans)
    rank = record.get("rank")
    problems.extend(_about(record, kind, reason) for kind, reason in trace_problems)
    logged = process.pop(windowfiles.LOGGED, [])
    if printed is None:
        told = windowfiles.unrepeated(process["errors"], [reason for _, reason in trace_problems])
    else:  # each printed error once: as the parse's log line where it logged it too (it says more)
        told = list(record.get("errors") or [])
        told += [sentence for text, sentence in said.items() if not windowfiles.logged(text, logged)]
    for error in told:
        problems.append(_about(record, "profiler_error", error))
    stale = record.get("ended") is None and not alive_here(record)
    if stale:
        process["ended_note"] = f"ended without exit handlers; last known step {record.get('steps')}"
    if wording.incomplete(process) and not process["errors"]:
        account = (ended or {}).get((record.get("host"), record.get("pid")))
        # not read mid-run (it ended, with or without its handlers): a stop under way is where it ended
        stopping = stop_under_way(record) if stale or record.get("ended") is not None else None
        ended_in_stop = None
        if stopping is not None:
            left, forked = runs.left_by_stop(output_dir, record), leftovers.forked_in_stop(record, output_dir)
            ended_in_stop = {"window": stopping, "left": left, "forked": forked}
        why = reasons.why_incomplete(record, process, run, stale, account, ended_in_stop)
        done = {key: process[key] for key in ("windows_completed", "windows_planned")}
        problems.append(_about(record, "window_incomplete", why, **done))
    elif stale:
        text = (
            f"{_label(record)} ended without its exit handlers (os._exit in a library, a kill, out of memory): its "
            f"counts are the last it wrote, step {record.get('steps')}"
        )
        last = record.get("steps")
        at = [last + (record.get("step_offset") or 0)] if isinstance(last, int) else []
        note = answer.item("ended_without_handlers", text, [rank], at, pid=record.get("pid"), host=record.get("host"))
        findings.append(note)
    return process


def _about(record: ReadRecord, kind: str, reason: str, **evidence) -> tuple[tuple | None, dict]:
    """A problem of one process, its label first; with the key that tells it the same as another
    rank's (_grouped), where it has a rank."""
    text = f"{_label(record)}: {reason}"
    one = answer.item(kind, text, [record.get("rank")], pid=record.get("pid"), host=record.get("host"), **evidence)
    rank = record.get("rank")
    return ((kind, record.get("stage") or "", reason) if rank is not None else None), one


def _left_out(excluded: list[ReadRecord]) -> dict | None:
    """The processes ``--ranks`` left out on purpose (they stepped, and never started a profiler):
    named, so that a rank missing from the table is not taken for a lost one."""
    if not excluded:
        return None
    chosen = (excluded[0].get("options") or {}).get("ranks")
    ranks = sorted({r["rank"] or 0 for r in excluded})
    return {
        "ranks": ranks,
        "processes": process_count(excluded),
        "option": f"--ranks {options.BY_NAME['ranks'].format(chosen)}" if chosen else None,
    }


def _excluded_problems(excluded: list[ReadRecord], processes: list[dict]) -> list[str]:
    if not excluded or processes:
        return []
    ranks = sorted({rank for rank in (r["rank"] for r in excluded) if rank is not None})
    wanted = options.BY_NAME["ranks"].format((excluded[0].get("options") or {}).get("ranks") or ())
    return [f"--ranks {wanted} matched no process; the ranks that stepped were {ranks or 'none known'}"]


def _declared_problems(records: list[ReadRecord], idle: list[dict], run: dict | None) -> tuple[list[dict], set[int]]:
    """Each declared function (--target, a stage) that made no step in any process, and why; and
    the processes these name (the ids of their lines), counted there and not again as idle.

    A process that never called it is not a problem by itself (an API server never runs the
    model), so the reasons only matter when no process at all stepped the function; the most
    telling reason comes first: not found, then never called, then never imported. A job that
    failed is said first: it may have failed before the call.
    """
    stepped = {(r.get("stage"), r.get("target")) for r in records if r.get("target")}
    why_not: dict[tuple, dict[str, int]] = {}
    whys: dict[str, str | None] = {}
    told: set[int] = set()
    for line in idle:
        for item in line.get("declared") or ():
            key = (item.get("stage"), item.get("target"))
            if key not in stepped:
                told.add(id(line))
                counts = why_not.setdefault(key, {})
                counts[item.get("reason")] = counts.get(item.get("reason"), 0) + 1
                whys[item.get("reason")] = processlog.why_of(item)
    ended = reasons.how_the_job_ended(run)
    problems = []
    for (stage, target), counts in why_not.items():
        what = f"stage {stage} ({target})" if stage else f"--target {target}"
        why = "; ".join(
            f"{reason} ({wording.count(n, 'process')})"
            for reason, n in sorted(counts.items(), key=lambda kv: _told_first(whys.get(kv[0])))
        )
        prefix = f"{ended}; " if ended else ""
        text = f"{prefix}{what} made no step in any process, so nothing was profiled for it: {why}"
        each = [{"why": whys.get(reason), "reason": reason, "processes": n} for reason, n in counts.items()]
        problems.append(answer.item("target_no_step", text, target=target, stage=stage, reasons=each))
    return problems, told


def _told_first(why: str | None) -> int:
    """A declared function's reason's place among the others (processlog.WHY_ORDER; unknown last)."""
    return processlog.WHY_ORDER.index(why) if why in processlog.WHY_ORDER else len(processlog.WHY_ORDER)


def _where(finding: dict, job: dict) -> str:
    """Whose steps a finding counts: "all 4 ranks", "rank 1", "2 processes"."""
    ranks = finding["ranks"]
    if ranks and len(ranks) == job["ranks"] and len(ranks) > 1:
        return wording.every_rank(len(ranks))
    if ranks:
        return wording.who(ranks)
    return wording.count(finding["processes"], "process")


def _spike_item(spike: dict, job: dict) -> dict:
    stage = f"stage {spike['stage']} " if spike.get("stage") else ""
    text = f"{stage}step {spike['step']}: {_where(spike, job)}, "  # told: inside a window (windowstall.py)
    text += spike.get("told") or f"{spike['vs_median']:.1f}x the median ({spike['step_s'] * 1e3:.1f} ms)"
    if spike.get("beside_aftercare"):
        text += f", beside npuprof's aftercare of a window (compression, summary): {spike.get('evidence')}"
    if spike.get("cpu_evidence"):
        text += f"; {spike['cpu_evidence']}"
    evidence = {key: spike.get(key) for key in ("step_s", "vs_median", "processes", "test", "stage", "cpu_wait_s")}
    evidence |= {key: spike[key] for key in ("window", "window_median_s", "waited_for", "waited_s") if key in spike}
    return answer.item("spike", text, spike["ranks"], [spike["step"]], **evidence)


def _slow_rank_item(slow: dict) -> dict:
    """A rank named slow: by its step times (findings.slow_rank) or as the one the others wait for
    in collectives (lockstep.slow_ranks); its numbers as the evidence."""
    by_collectives = slow["method"] == "collectives"
    what = "the one the others wait for" if by_collectives else "the slowest"
    stage = f" in stage {slow['stage']}" if slow.get("stage") else ""
    text = f"rank {slow['rank']} is {what}{stage}: {slow['evidence']}"
    kind = "waited_for_rank" if by_collectives else "slow_rank"
    return answer.item(kind, text, [slow["rank"]], **_numbers(slow, ("rank", "evidence", "found")))


def _held_back_item(held: dict) -> dict:
    stage = f" in stage {held['stage']}" if held.get("stage") else ""
    text = f"rank {held['rank']}{stage} is held back by the machine: {held['evidence']}"
    return answer.item("held_back_rank", text, [held["rank"]], **_numbers(held, ("rank", "evidence")))


def _waited_for_item(once: dict) -> dict:
    stage = f" of stage {once['stage']}" if once.get("stage") else ""
    text = f"{once['window']}{stage}, profiled: the others waited for rank {once['rank']}: {once['evidence']}"
    return answer.item("waited_for_in_window", text, [once["rank"]], **_numbers(once, ("rank", "evidence")))


def _numbers(found: dict, left_out: tuple[str, ...]) -> dict:
    """A finding's fields as its item's evidence: what JSON holds, less those the item says otherwise."""
    kept = {
        key: value
        for key, value in found.items()
        if key not in left_out and isinstance(value, (int, float, str, list, bool))
    }
    if "steps" in kept:  # the item's own steps are step numbers: this is how many were compared
        kept["steps_compared"] = kept.pop("steps")
    return kept


def _grouped(problems: list[tuple[tuple | None, dict]]) -> list[dict]:
    """Problems in order; a problem of several ranks that says the same past their labels (the key
    _about gives it) told once, with the ranks."""
    groups: dict[object, list[dict]] = {}
    for about, one in problems:
        groups.setdefault(about if about is not None else id(one), []).append(one)
    told = []
    for key, items in groups.items():
        if len(items) == 1 or not isinstance(key, tuple):
            told.extend(items)
            continue
        kind, stage, reason = key
        ranks = [rank for one in items for rank in one["ranks"]]
        stage_text = f" stage {stage}" if stage else ""
        evidence = {"pids": [one["evidence"].get("pid") for one in items]}
        told.append(answer.item(kind, f"{wording.who(ranks)}{stage_text}: {reason}", ranks, **evidence))
    return told
