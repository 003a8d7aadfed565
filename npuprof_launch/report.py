"""From the status records and the files on disk to a verdict: what was collected, what broke.

The same facts feed the launcher's end-of-run table (stderr) and ``npuprof-run --check DIR
--json`` (DESIGN.md section 4). ``passed`` is true only when every process meant to profile
completed its windows and each of its deliverables exists and parses.
"""

from __future__ import annotations

import os

from npuprof_launch import deliverables, names, options, processlog
from npuprof_launch.record import read_dir
from npuprof_launch.schedule import Schedule

#: Ranks whose mean step time exceeds the fastest by more than this are flagged.
SLOW_RANK_RATIO = 1.10
TOP_OPERATORS = 5


def _schedule_formula(options: dict) -> str:
    return Schedule(
        skip_first=options["skip-first"],
        wait=options["wait"],
        warmup=options["warmup"],
        active=options["active"],
        repeat=options["repeat"],
    ).formula()


def _label(record: dict) -> str:
    rank = record.get("rank")
    where = f"rank {rank}" if rank is not None else "process"
    return f"{where} (pid {record.get('pid')} on {record.get('host')})"


def _check_traces(record: dict, output_dir: str, process: dict, problems: list[str]) -> None:
    backend = record.get("backend")
    export_type = (record.get("options") or {}).get("export-type") or ["text"]
    for rel in record.get("traces", []):
        path = os.path.join(output_dir, rel)
        if backend == "npu":
            problems.extend(deliverables.check_ascend_dir(path, export_type))
            for name, us in deliverables.npu_operator_totals(path).items():
                process["_self"][name] = process["_self"].get(name, 0.0) + us
            continue
        summary = deliverables.summarize_torch_trace(path)
        problems.extend(summary.problems)
        process["profiler_steps"] += len(summary.step_names)
        for name, us in summary.self_time_us.items():
            process["_self"][name] = process["_self"].get(name, 0.0) + us
    saved = record.get("windows_completed", 0) + record.get("partial_traces", 0)
    if backend == "npu" and saved and not record.get("traces"):
        problems.append(
            f"{_label(record)}: torch_npu handed over {saved} window(s) but no {record.get('worker')}_*"
            f"{names.ASCEND_DIR_SUFFIX} directory appeared in {output_dir}: torch_npu wrote no data "
            "(its [ERROR] lines on the job's stderr say why)"
        )


def build(output_dir: str, run_id: str | None = None) -> dict:
    """The report of everything under ``output_dir`` (only run ``run_id``'s processes, if given)."""
    output_dir = os.path.abspath(output_dir)
    records = read_dir(output_dir)
    if run_id:
        records = [r for r in records if r.get("run_id") == run_id]
    problems: list[str] = []
    processes = []
    excluded = []
    declined = 0
    for record in records:
        if "unreadable" in record:
            problems.append(f"status record {record['file']} is unreadable: {record['unreadable']}")
            continue
        if record.get("declined"):
            problems.append(f"{_label(record)}: not profiled: {record['declined']}")
            declined += 1
            continue
        if record.get("state") == "off" and record.get("windows_planned", 0) == 0:
            excluded.append(record)
            continue
        process = {
            "host": record.get("host"),
            "pid": record.get("pid"),
            "rank": record.get("rank"),
            "stage": record.get("stage"),
            "target": record.get("target"),
            "backend": record.get("backend"),
            "state": record.get("state"),
            "steps": record.get("steps", 0),
            "windows_planned": record.get("windows_planned", 0),
            "windows_completed": record.get("windows_completed", 0),
            "partial_traces": record.get("partial_traces", 0),
            "mean_step_s": record.get("mean_step_s"),
            "run_id": record.get("run_id"),
            "traces": list(record.get("traces", [])),
            "warnings": list(record.get("warnings", [])),
            "errors": list(record.get("errors", [])),
            "profiler_steps": 0,
            "_self": {},
        }
        _check_traces(record, output_dir, process, problems)
        self_times = process.pop("_self")
        process["top_operators"] = [
            {"name": name, "self_us": round(us, 1)}
            for name, us in sorted(self_times.items(), key=lambda kv: -kv[1])[:TOP_OPERATORS]
        ]
        label = _label(record)
        for error in process["errors"]:
            problems.append(f"{label}: {error}")
        options = record.get("options") or {}
        if record.get("on_demand") and process["windows_completed"] < process["windows_planned"]:
            problems.append(
                f"{label}: {process['windows_completed']} of {process['windows_planned']} requested windows "
                "completed: the job ended (or was stopped) before the last requested window's steps ran"
            )
        elif process["windows_completed"] < process["windows_planned"] and not process["errors"]:
            problems.append(
                f"{label}: {process['windows_completed']} of {process['windows_planned']} windows completed: "
                f"the job ran {process['steps']} steps, the schedule needs {_schedule_formula(options)}; "
                "lower --skip-first/--active/--repeat or run more steps"
            )
        processes.append(process)
    problems.extend(_excluded_problems(excluded, processes))
    idle = _idle_processes(output_dir, run_id)
    unstepped = _declared_problems(records, idle)
    problems.extend(unstepped)
    if not processes and not excluded and not declined and not unstepped:
        hint = f" ({len(idle)} processes imported torch but never stepped)" if idle else ""
        problems.append(
            "no process saw a step: no optimizer.step was called" + hint + "; if the job has no optimizer "
            "(inference, RL), pass --target MOD:QUALNAME naming the function that runs one step"
        )
    findings: list[str] = []
    _flag_slow_ranks(processes, findings)
    return {
        "passed": not problems and bool(processes),
        "findings": findings,
        "problems": problems,
        "processes": processes,
        "idle_processes": sum(1 for line in idle if not line.get("stepped")),
        "output_dir": output_dir,
    }


def _excluded_problems(excluded: list[dict], processes: list[dict]) -> list[str]:
    if not excluded or processes:
        return []
    ranks = sorted({r.get("rank") for r in excluded if r.get("rank") is not None})
    wanted = options.BY_NAME["ranks"].format((excluded[0].get("options") or {}).get("ranks") or ())
    return [f"--ranks {wanted} matched no process; the ranks that stepped were {ranks or 'none known'}"]


def _declared_problems(records: list[dict], idle: list[dict]) -> list[str]:
    """Each declared function (--target, a stage) that made no step in any process, and why.

    A process that never called it is not a problem by itself (an API server never runs the
    model), so the reasons only matter when no process at all stepped the function; the most
    telling reason comes first: not found, then never called, then never imported.
    """
    stepped = {(r.get("stage"), r.get("target")) for r in records if r.get("target")}
    reasons: dict[tuple, dict[str, int]] = {}
    for line in idle:
        for item in line.get("declared") or ():
            key = (item.get("stage"), item.get("target"))
            if key not in stepped:
                counts = reasons.setdefault(key, {})
                counts[item.get("reason")] = counts.get(item.get("reason"), 0) + 1
    problems = []
    for (stage, target), counts in reasons.items():
        what = f"stage {stage} ({target})" if stage else f"--target {target}"
        why = "; ".join(
            f"{reason} ({n} process{'es' if n > 1 else ''})"
            for reason, n in sorted(counts.items(), key=lambda kv: _REASON_ORDER.get(kv[0].split(":")[0], 3))
        )
        problems.append(f"{what} made no step in any process, so nothing was profiled for it: {why}")
    return problems


_REASON_ORDER = {"not found": 0, "never called": 1, "never imported": 2}


def _idle_processes(output_dir: str, run_id: str | None) -> list[dict]:
    return [line for line in processlog.read(output_dir, run_id) if line.get("event") == processlog.IDLE]


def _flag_slow_ranks(processes: list[dict], findings: list[str]) -> None:
    """Flag the slowest rank: a finding about the job, not a problem of the collection (``passed`` keeps)."""
    groups = {(p.get("run_id"), p.get("stage")) for p in processes}
    if len(groups) > 1:  # steps compare only within one run, and a stage's only with the same stage's
        for run_id, stage in groups:
            _flag_slow_ranks([p for p in processes if (p.get("run_id"), p.get("stage")) == (run_id, stage)], findings)
        return
    timed = [p for p in processes if p["mean_step_s"] and p["rank"] is not None]
    if len(timed) < 2:
        return
    fastest = min(p["mean_step_s"] for p in timed)
    slowest = max(timed, key=lambda p: p["mean_step_s"])
    if slowest["mean_step_s"] > fastest * SLOW_RANK_RATIO:
        slowest["slowest_rank"] = True
        findings.append(
            f"rank {slowest['rank']} is the slowest: {slowest['mean_step_s'] * 1e3:.1f} ms per step against "
            f"{fastest * 1e3:.1f} ms for the fastest rank (more than {round((SLOW_RANK_RATIO - 1) * 100)}% apart)"
        )


def format_table(report: dict) -> str:
    """The launcher's end-of-run summary: one row per process, then the problems."""
    lines = []
    processes = report["processes"]
    out = report["output_dir"]
    lines.append(f"npuprof: {len(processes)} process(es) profiled, output in {out}")
    if processes:
        lines.append(f"  {'rank':>4} {'pid':>8} {'backend':7} {'steps':>6} {'windows':>7} {'step ms':>8}  traces")
        for p in processes:
            rank = "-" if p["rank"] is None else str(p["rank"])
            mean = f"{p['mean_step_s'] * 1e3:.2f}" if p["mean_step_s"] else "-"
            windows = f"{p['windows_completed']}/{p['windows_planned']}"
            flag = "  <- slowest" if p.get("slowest_rank") else ""
            traces = ", ".join(p["traces"]) or "(none)"
            if p.get("stage"):
                traces = f"stage {p['stage']}: {traces}"
            lines.append(
                f"  {rank:>4} {p['pid']:>8} {p['backend'] or '-':7} {p['steps']:>6} {windows:>7} {mean:>8}  "
                f"{traces}{flag}"
            )
            if p["top_operators"]:
                tops = ", ".join(f"{op['name']} {op['self_us'] / 1e3:.2f} ms" for op in p["top_operators"][:3])
                lines.append(f"       top self time: {tops}")
    if report.get("idle_processes"):
        lines.append(f"  {report['idle_processes']} other process(es) imported torch but never stepped")
    if report.get("findings"):
        lines.append("npuprof: findings:")
        lines.extend(f"  - {finding}" for finding in report["findings"])
    if report["problems"]:
        lines.append("npuprof: problems:")
        lines.extend(f"  - {problem}" for problem in report["problems"])
    return "\n".join(lines)
