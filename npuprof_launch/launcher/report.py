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
from npuprof_launch.common.record import ENDED_EXEC, alive_here, read_dir
from npuprof_launch.launcher import jobview, launch, runs, slowdowns, stallview, windowfiles, wording
from npuprof_launch.launcher.progress import Progress

TOP_OPERATORS = 5
#: Up to this much trace on disk every trace is read again (deep); past it the windows' own
#: summaries are used (aftercare.py) and ``--check --deep`` reads them all, at about DEEP_RATE.
DEEP_BYTES = 512 * 2**20
DEEP_RATE = 40 * 2**20

#: Why a Python process may not load the hook, for the report's first reason.
NO_HOOK_CAUSES = (
    "a launch script that replaces PYTHONPATH (keep it: PYTHONPATH=/somewhere:$PYTHONPATH), `env -i`, "
    "`python -I`, `-E` or `-S` (they ignore PYTHONPATH or skip site), or an interpreter without npuprof_launch"
)
PYTHON_FLAGS_WITHOUT_HOOK = {"-I": "isolated mode", "-E": "ignores PYTHON* variables", "-S": "skips site"}


def build(output_dir: str, run_id: str | None = None, deep: bool | None = None, run: dict | None = None) -> dict:
    """The report of one run under ``output_dir``: ``run_id``'s, else the latest (runs.py); the
    other runs there are listed, never merged in.

    ``deep``: read every trace again (True), use the windows' own summaries (False), or the first
    when the traces are small (None: up to DEEP_BYTES on disk). ``run``: the launcher's record of
    the run, where it has it in hand (it may not have been written).
    """
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
    if deep is None:
        deep = weight <= DEEP_BYTES
    if reported is None:
        log = processlog.read(output_dir)
    else:
        log = [line for run_id in sorted(together) for line in processlog.read(output_dir, run_id)]
    problems: list[tuple[int | None, str]] = []
    findings: list[str] = []
    processes, excluded, declined, replaced = [], [], [], []
    reading = Progress("reading the output" + (" and every trace" if deep else ""), len(records), "processes")
    for index, record in enumerate(records):
        reading.set(index)
        if "unreadable" in record:
            problems.append((None, f"status record {record['file']} is unreadable: {record['unreadable']}"))
        elif record.get("ended") == ENDED_EXEC:
            replaced.append(record)
            if record.get("windows") or record.get("traces"):  # the old image's window: a row of its own
                processes.append(_process(record, output_dir, run, problems, findings, deep))
        elif record.get("declined"):
            declined.append(record)
            problems.append((record.get("rank"), f"{_label(record)}: not profiled: {record['declined']}"))
        elif record.get("state") == "off" and not record.get("windows_planned"):
            excluded.append(record)
        else:
            processes.append(_process(record, output_dir, run, problems, findings, deep))
    reading.set(len(records))
    reading.finish()
    processes.sort(key=_order)
    problems.extend((None, problem) for problem in _excluded_problems(excluded, processes))
    idle = [line for line in log if line.get("event") == processlog.IDLE]
    declared, told = _declared_problems(records, idle, run)
    problems.extend((None, problem) for problem in declared)
    full = windowfiles.full_disk(output_dir)  # its effects (no record, no trace) would be told as causes
    if not processes and not excluded and not declined and not declared and not replaced and not full:
        problems.append((None, _why_nothing(run, log, idle)))
    untracked = runs.untracked_problem(output_dir, every_record)
    if untracked:
        problems.append((None, untracked))
    given = runs.given_options(run, records, output_dir)
    job = jobview.summarize(
        processes,
        run.get("command") if run else None,
        given,
        route=runs.route(run, records),
        steps_of=lambda process: jobview.read_steps(process, output_dir),
    )
    job["processes"] = runs.process_count(processes)  # a process with two stages has two rows
    job["stalls"], job["pauses"] = stallview.summarize([r for r in records if "unreadable" not in r], output_dir)
    findings[:0] = [stallview.stall_line(stall) for stall in job["stalls"]]  # the job stopped: said first
    findings.extend(stallview.pause_line(pause) for pause in job["pauses"])
    job["spikes"] = stallview.unexplained(job["spikes"], job["pauses"])  # a pause's step is told as the pause
    job["slowdowns"], job["undecidable_slowdowns"] = slowdowns.of_processes(processes, output_dir)
    job["cpu_wait_lines"].extend(slowdowns.cpu_wait_text(slowdown) for slowdown in job["undecidable_slowdowns"])
    findings.extend(slowdowns.text(slowdown) for slowdown in job["slowdowns"])
    findings.extend(slowdowns.asked_windows(processes, [r for r in records if "unreadable" not in r]))
    slow_ranks = {(slow["rank"], slow.get("stage")): slow["method"] for slow in job["slow_ranks"]}
    waited_in = {(once["rank"], once.get("stage")): once["window"] for once in job["waited_for"]}
    for process in processes:
        method = slow_ranks.get((process.get("rank"), process.get("stage")))
        if method is not None:
            process["slowest_rank"] = True
            process["slow_by"] = method
        if (process.get("rank"), process.get("stage")) in waited_in:
            process["waited_for_in"] = waited_in[(process.get("rank"), process.get("stage"))]
    for slow in job["slow_ranks"]:
        what = "the slowest" if slow["method"] == "step_times" else "the one the others wait for"
        stage = f" in stage {slow['stage']}" if slow.get("stage") else ""
        findings.append(f"rank {slow['rank']} is {what}{stage}: {slow['evidence']}")
    for once in job["waited_for"]:
        stage = f" of stage {once['stage']}" if once.get("stage") else ""
        findings.append(
            f"{once['window']}{stage}, profiled: the others waited for rank {once['rank']}: {once['evidence']}"
        )
    for spike in job["spikes"]:
        findings.append(_spike_text(spike, job))
    if job.get("spike_period"):
        findings.append(jobview.period_text(job["spike_period"]))
    differing = _differing_windows(job["window_steps"])
    if differing:
        findings.append(
            "the ranks' windows cover different steps: "
            + "; ".join(f"{_whose(w)}: steps {_steps_text(w['steps'])}" for w in differing)
        )
    if full and (problems or not processes):
        problems.insert(0, (None, full))
    if not deep and weight:
        findings.append(
            f"the traces ({weight / 2**30:.1f} GB) were not read again: their summaries were; "
            f"npuprof-run --check {output_dir} --deep reads every one (about {weight / DEEP_RATE / 60:.0f} min)"
        )
    return {
        "passed": not problems and bool(processes),
        "deep": deep,
        "trace_bytes": weight,
        "findings": findings,
        "problems": _grouped(problems),
        "job": job,
        "processes": processes,
        "replaced": [_label(r) for r in replaced],
        "idle_processes": sum(1 for line in idle if not line.get("stepped") and id(line) not in told),
        "left_out": _left_out(excluded),
        "run": run,
        "run_id": reported,
        "runs": [dict(item, reported=item["run_id"] in together) for item in listing],
        "output_dir": output_dir,
        "raw_kept": windowfiles.raw_kept(processes, output_dir),
    }


def _label(record: dict) -> str:
    rank = record.get("rank")
    where = f"rank {rank}" if rank is not None else "process"
    stage = f" stage {record['stage']}" if record.get("stage") else ""
    attempt = runs.attempt_of(record)
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
    who = jobview.who(entry["ranks"]) if entry["ranks"] else "processes without a rank"
    return f"stage {entry['stage']} {who}" if entry.get("stage") else who


def _steps_text(pairs) -> str:
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in pairs)


def _process(record: dict, output_dir: str, run: dict | None, problems: list, findings: list, deep: bool) -> dict:
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
        attempt=runs.attempt_of(record),
        traces=list(record.get("traces") or []),
        windows=[dict(w) for w in record.get("windows") or []],
        warnings=list(record.get("warnings") or []),
        errors=list(record.get("errors") or []),
        profiler_steps=0,
    )
    self_times: dict[str, float] = {}
    trace_problems, collective_us, window_us = _check_traces(record, output_dir, process, self_times, deep)
    process["top_operators"] = [
        {"name": name, "self_us": round(us, 1)}
        for name, us in sorted(self_times.items(), key=lambda kv: -kv[1])[:TOP_OPERATORS]
    ]
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
    label = _label(record)
    for problem in trace_problems:
        problems.append((rank, problem))
    for error in windowfiles.unrepeated(process["errors"], trace_problems):
        problems.append((rank, f"{label}: {error}"))
    stale = record.get("ended") is None and not alive_here(record)
    if stale:
        process["ended_note"] = f"ended without exit handlers; last known step {record.get('steps')}"
    if wording.incomplete(process) and not process["errors"]:
        problems.append((rank, f"{label}: {_why_incomplete(record, process, run, stale)}"))
    elif stale:
        findings.append(
            f"{label} ended without its exit handlers (os._exit in a library, a kill, out of memory): its counts are "
            f"the last it wrote, step {record.get('steps')}"
        )
    return process


def _why_incomplete(record: dict, process: dict, run: dict | None, stale: bool) -> str:
    """The true reason a process's windows did not all complete, the most telling first: decided on
    the record's outcomes (outcomes.py) and the run's own data, never on the words of a warning."""
    done = f"{process['windows_completed']} of {process['windows_planned']}"
    steps = record.get("steps")
    at = steps + (record.get("step_offset") or 0) if isinstance(steps, int) else steps  # the job's number of it
    found = outcomes.of_record(record)
    cut = outcomes.of_kind(found, outcomes.CUT_SHORT)
    if record.get("on_demand"):
        return (
            f"{done} requested windows completed: the job ended (or was stopped) before the last requested "
            "window's steps ran"
        )
    threads = outcomes.of_kind(found, *outcomes.THREAD_KINDS)
    if threads:
        return f"{done} windows completed: {outcomes.sentence(threads[0])}"
    passed = outcomes.of_kind(found, outcomes.FROM_STEP_PASSED)
    if passed and len(passed) + process["windows_completed"] >= (process["windows_planned"] or 0):
        return f"{done} windows completed: {outcomes.sentence(passed[0])}"
    ended = _how_the_job_ended(run)
    raised = [outcomes.sentence(outcome) for outcome in outcomes.of_kind(found, outcomes.UNCAUGHT)]
    if cut:
        kept, by, stopped = outcomes.kept_words(cut[-1]), cut[-1].get("by"), _stopped_by(run)
        for signal_name in ("SIGINT", "SIGTERM"):
            if signal_name in (by, stopped):
                return f"interrupted by {signal_name} at step {at}; {kept} (partial)"
        if raised:
            return f"{done} windows completed: {raised[0]}; {kept}"
        if by == "window_timeout":
            return f"{done} windows completed: {outcomes.sentence(cut[-1])} (partial)"
        if by == "exit":
            if ended:
                return f"{done} windows completed: {ended} at step {at}; {kept}"
            if outcomes.stopped_stepping(cut[-1], process.get("median_step_s")):
                return (
                    f"{done} windows completed: the process stopped stepping after step {at}, inside a window, "
                    f"and ended {cut[-1]['idle_s']} s later; {kept} (partial); --window-timeout SECONDS saves such a "
                    "window while the process still runs"
                )
            return f"{wording.ran_short(record, done, steps)}; {kept}"
        return (
            f"{done} windows completed: the window was cut short by {outcomes.cut_words(cut[-1])} at step {at}; {kept}"
        )
    if raised:
        return f"{done} windows completed: {raised[0]}, before the schedule completed"
    if ended:
        return f"{done} windows completed: {ended} after step {steps} of this process, before the schedule completed"
    if stale:
        return (
            f"{done} windows completed: it ended without its exit handlers (os._exit in a library, a kill, out of "
            f"memory); last known step {at}"
        )
    return wording.ran_short(record, done, steps)


def _stopped_by(run: dict | None) -> str | None:
    """ "SIGINT" or "SIGTERM" when the run's data says the command was stopped by one, else None
    (the same cases as _how_the_job_ended's words, read from the data)."""
    if not run or run.get("start_error"):
        return None
    if run.get("signal"):
        return run["signal"] if run["signal"] in ("SIGINT", "SIGTERM") else None
    status = run.get("status")
    if "SIGINT" in (run.get("received") or []) and status not in (None, 130):
        return "SIGINT"
    if status in (None, 0):
        return None
    if status == 130:
        return "SIGINT"
    if status == 143 or "SIGTERM" in (run.get("forwarded") or []):
        return "SIGTERM"
    return None


def _how_the_job_ended(run: dict | None) -> str | None:
    """How the launcher saw the command end, when it did not end well; None for exit status 0."""
    if not run:
        return None
    if run.get("start_error"):
        return f"the command could not start ({run['start_error']})"
    if run.get("signal"):
        forwarded = " (forwarded by npuprof-run)" if run["signal"] in (run.get("forwarded") or []) else ""
        return f"the command was killed by signal {run['signal']}{forwarded}"
    status = run.get("status")
    if "SIGINT" in (run.get("received") or []) and status not in (None, 130):
        return f"the command was interrupted (SIGINT; the job caught it and ended with status {status})"
    if status in (None, 0):
        return None
    if status == 130:
        return "the command was interrupted (SIGINT, exit status 130)"
    if status == 143 or "SIGTERM" in (run.get("forwarded") or []):
        return f"the command was stopped (SIGTERM, exit status {status})"
    if status > 128:
        import signal

        try:
            name = signal.Signals(status - 128).name
            return f"the command exited with status {status} (a process died of {name})"
        except ValueError:
            pass
    return f"the command exited with status {status}"


def _why_nothing(run: dict | None, log: list[dict], idle: list[dict]) -> str:
    """No process made a record: the first link of the chain that broke."""
    ended = _how_the_job_ended(run)
    if run and run.get("start_error"):
        return ended or "the command could not start"
    loaded = [line for line in log if line.get("event") == processlog.LOADED]
    missing = [line for line in log if line.get("event") == processlog.NO_PACKAGE]
    prefix = f"{ended}; " if ended else ""
    if missing and not loaded:
        python = missing[0].get("executable")
        return (
            f"{prefix}no process could load the hook: {python} has no npuprof_launch installed; install it there "
            "(pip install npuprof-launch) or run the job with the Python that has it"
        )
    if not loaded and not idle:
        flags = _python_flags(run.get("command") if run else None)
        cause = f"the command runs python {flags}" if flags else f"the likely causes: {NO_HOOK_CAUSES}"
        if run is None:
            return (
                "no process of this output loaded the hook (nothing in npuprof_status/ says one did; for an env-only "
                f"job run with --print-env that is expected until a process profiles); {cause}"
            )
        return f"{prefix}no Python process loaded the hook ({cause})"
    if not idle:
        count = len(loaded)
        return (
            f"{prefix}{wording.count(count, 'Python process')} loaded the hook, but none imported torch "
            "(the job is not a PyTorch job, or it ended before importing torch)"
        )
    idle_count = sum(1 for line in idle if not line.get("stepped"))
    if ended:
        return f"{ended} before any step ({wording.count(idle_count, 'process')} had imported torch)"
    return wording.no_step(idle_count, idle)


def _python_flags(command: list[str] | None) -> str:
    """The flags of a ``python`` command that keep the hook out (-I, -E, -S), or an empty string."""
    if not command or "python" not in os.path.basename(command[0]):
        return ""
    found = []
    for arg in command[1:]:
        if not arg.startswith("-") or arg.startswith("--") or arg in ("-c", "-m"):
            break
        for letter in arg[1:]:
            flag = f"-{letter}"
            if flag in PYTHON_FLAGS_WITHOUT_HOOK:
                found.append(f"{flag} ({PYTHON_FLAGS_WITHOUT_HOOK[flag]})")
    return ", ".join(found)


def _check_traces(
    record: dict, output_dir: str, process: dict, self_times: dict, deep: bool
) -> tuple[list[str], float, float]:
    """Each window's deliverables, from its aftercare's summary where one was written (small files,
    whatever the trace's size), else from the trace itself; and where each file is."""
    problems: list[str] = []
    collective_us = window_us = 0.0
    backend = record.get("backend")
    export_type = (record.get("options") or {}).get("export-type") or ["text"]
    parse_asked = (record.get("options") or {}).get("analyse") is not False
    process["window_bytes"] = []
    windows = [dict(w) for w in record.get("windows") or []]
    attributed = {rel for window in windows for rel in window.get("traces") or ()}
    loose = [rel for rel in record.get("traces") or () if rel not in attributed]
    if loose:  # a record from before windows were recorded, or traces listed by hand
        windows.append({"traces": loose})
    for window in windows:
        care = windowfiles.aftercare_result(output_dir, window)
        if care and care.get("errors"):
            problems.extend(f"{_label(record)}: {error}" for error in care["errors"])
        size = sum((care or {}).get("bytes", {}).values()) if care else 0
        plain = sum((care or {}).get("plain_bytes", {}).values()) if care else 0
        for rel in window.get("traces") or []:
            path, note = windowfiles.locate(output_dir, rel, window.get("staged"))
            if path is None:
                problems.append(f"{_label(record)}: {rel}: missing")
                continue
            if note:
                problems.append(f"{_label(record)}: {note}")
            if not care:
                size += windowfiles.tree_bytes(path)
            if backend == "npu":
                problems.extend(deliverables.check_ascend_dir(path, export_type, parse_asked))
                if not parse_asked and deliverables.unparsed(path):
                    process["raw_sessions"] = process.get("raw_sessions", 0) + 1
                plain += windowfiles.viewed_bytes(path)
                for name, us in deliverables.npu_operator_totals(path).items():
                    self_times[name] = self_times.get(name, 0.0) + us
                continue
            summary = care.get("summary") if care and care.get("status") == "done" and not deep else None
            if summary is None:
                path, parsed = windowfiles.summarize_where_it_is(output_dir, rel, window.get("staged"), path)
                if parsed is None:
                    problems.append(f"{_label(record)}: {rel}: missing")
                    continue
                plain = plain or (windowfiles.tree_bytes(path) if not path.endswith(".gz") else 0)
                summary = {
                    "steps": len(parsed.step_names),
                    "collective_us": parsed.collective_us,
                    "window_us": sum(parsed.step_durations_us),
                    "self_time_us": parsed.self_time_us,
                    "problems": parsed.problems,
                }
            problems.extend(summary.get("problems") or [])
            process["profiler_steps"] += summary.get("steps", 0)
            collective_us += summary.get("collective_us", 0.0)
            window_us += summary.get("window_us", 0.0)
            for name, us in (summary.get("self_time_us") or {}).items():
                self_times[name] = self_times.get(name, 0.0) + us
        if window.get("traces"):
            process["window_bytes"].append(size)
            warnings = windowfiles.size_warnings(window, size, plain, backend)
            problems.extend(f"{_label(record)}: {warning}" for warning in warnings)
    saved = (record.get("windows_completed") or 0) + (record.get("partial_traces") or 0)
    if backend == "npu" and saved and not record.get("traces"):
        problems.append(
            f"{_label(record)}: torch_npu handed over {saved} window(s) but no {record.get('worker')}_*"
            f"{names.ASCEND_DIR_SUFFIX} directory appeared in {output_dir}: torch_npu wrote no data "
            "(its [ERROR] lines on the job's stderr say why)"
        )
    return problems, collective_us, window_us


def _left_out(excluded: list[dict]) -> dict | None:
    """The processes ``--ranks`` left out on purpose (they stepped, and never started a profiler):
    named, so that a rank missing from the table is not taken for a lost one."""
    if not excluded:
        return None
    chosen = (excluded[0].get("options") or {}).get("ranks")
    ranks = sorted({r["rank"] if r.get("rank") is not None else 0 for r in excluded})
    return {
        "ranks": ranks,
        "processes": runs.process_count(excluded),
        "option": f"--ranks {options.BY_NAME['ranks'].format(chosen)}" if chosen else None,
    }


def _excluded_problems(excluded: list[dict], processes: list[dict]) -> list[str]:
    if not excluded or processes:
        return []
    ranks = sorted({r["rank"] for r in excluded if r.get("rank") is not None})
    wanted = options.BY_NAME["ranks"].format((excluded[0].get("options") or {}).get("ranks") or ())
    return [f"--ranks {wanted} matched no process; the ranks that stepped were {ranks or 'none known'}"]


def _declared_problems(records: list[dict], idle: list[dict], run: dict | None) -> tuple[list[str], set[int]]:
    """Each declared function (--target, a stage) that made no step in any process, and why; and
    the processes these name (the ids of their lines), counted there and not again as idle.

    A process that never called it is not a problem by itself (an API server never runs the
    model), so the reasons only matter when no process at all stepped the function; the most
    telling reason comes first: not found, then never called, then never imported. A job that
    failed is said first: it may have failed before the call.
    """
    stepped = {(r.get("stage"), r.get("target")) for r in records if r.get("target")}
    reasons: dict[tuple, dict[str, int]] = {}
    told: set[int] = set()
    for line in idle:
        for item in line.get("declared") or ():
            key = (item.get("stage"), item.get("target"))
            if key not in stepped:
                told.add(id(line))
                counts = reasons.setdefault(key, {})
                counts[item.get("reason")] = counts.get(item.get("reason"), 0) + 1
    ended = _how_the_job_ended(run)
    problems = []
    for (stage, target), counts in reasons.items():
        what = f"stage {stage} ({target})" if stage else f"--target {target}"
        why = "; ".join(
            f"{reason} ({wording.count(n, 'process')})"
            for reason, n in sorted(counts.items(), key=lambda kv: _REASON_ORDER.get(kv[0].split(":")[0], 3))
        )
        prefix = f"{ended}; " if ended else ""
        problems.append(f"{prefix}{what} made no step in any process, so nothing was profiled for it: {why}")
    return problems, told


_REASON_ORDER = {"not found": 0, "never called": 1, "never imported": 2}


def _where(finding: dict, job: dict) -> str:
    """Whose steps a finding counts: "all 4 ranks", "rank 1", "2 processes"."""
    ranks = finding["ranks"]
    if ranks and len(ranks) == job["ranks"] and len(ranks) > 1:
        return f"all {len(ranks)} ranks"
    if ranks:
        return jobview.who(ranks)
    return wording.count(finding["processes"], "process")


def _spike_text(spike: dict, job: dict) -> str:
    stage = f"stage {spike['stage']} " if spike.get("stage") else ""
    text = f"{stage}step {spike['step']}: {_where(spike, job)}, {spike['vs_median']:.1f}x the median"
    text += f" ({spike['step_s'] * 1e3:.1f} ms)"
    if spike.get("beside_aftercare"):
        text += f", beside npuprof's aftercare of a window (compression, summary): {spike.get('evidence')}"
    if spike.get("cpu_evidence"):
        text += f"; {spike['cpu_evidence']}"
    return text


def _grouped(problems: list[tuple[int | None, str]]) -> list[str]:
    """Problems in order, those that differ only in their rank's label told once with the ranks."""
    import re

    label = re.compile(r"^rank (\d+)( stage \S+)? \(pid \d+ on [^)]*\): ")
    groups: dict[str, list[tuple[int | None, str]]] = {}
    for rank, text in problems:
        match = label.match(text) if rank is not None else None
        key = f"{match.group(2) or ''}\0{text[match.end() :]}" if match else text
        groups.setdefault(key, []).append((rank, text))
    lines = []
    for key, items in groups.items():
        if len(items) == 1 or "\0" not in key:
            lines.append(items[0][1])
            continue
        stage, _, rest = key.partition("\0")
        lines.append(f"{jobview.who(rank for rank, _ in items)}{stage}: {rest}")
    return lines
