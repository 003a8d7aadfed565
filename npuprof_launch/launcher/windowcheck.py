"""Each window of a process checked and read: its deliverables where they are now, its steps, its
time in collectives and each collective, its operators' time, from the aftercare's summary where one
was written (small files, whatever the trace's size), else from the trace itself; for an NPU
session, from what torch_npu's parse wrote (hcclcollectives.py), as the aftercare read it where its
files are unchanged since (keptreading.py). The report (report.py) makes a row of each process
with it.
"""

from __future__ import annotations

import os

from npuprof_launch.common import deliverables, keptreading, names, tracecollectives
from npuprof_launch.common.record import ReadRecord
from npuprof_launch.launcher import lockstep, windowfiles


def check(
    record: ReadRecord, output_dir: str, process: dict, self_times: dict, deep: bool, reread: bool = False
) -> tuple[list[tuple[str, str]], float, float]:
    """Each window's deliverables, from its aftercare's summary where one was written (small files,
    whatever the trace's size), else from the trace itself; and where each file is. Its problems
    are ``(kind, reason)``: the process's label goes first when they are told. ``deep``: torch
    traces read again, not their summaries; ``reread``: NPU sessions too, not what their aftercare
    kept of them (which holds, at any size, while their files are unchanged: keptreading.py)."""
    problems: list[tuple[str, str]] = []
    trace = "trace_problem"
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
            problems.extend((trace, error) for error in care["errors"])
            process.setdefault(windowfiles.LOGGED, []).extend(care.get("logged") or ())
        size = sum((care or {}).get("bytes", {}).values()) if care else 0
        plain = sum((care or {}).get("plain_bytes", {}).values()) if care else 0
        for rel in window.get("traces") or []:
            path, note = windowfiles.locate(output_dir, rel, window.get("staged"))
            if path is None:
                problems.append((trace, f"{rel}: missing"))
                continue
            if note:
                problems.append((trace, note))
            if not care:
                size += windowfiles.tree_bytes(path)
            if backend == "npu":
                kept = None if reread else ((care or {}).get(keptreading.RESULT_KEY) or {}).get(os.path.basename(path))
                reading = keptreading.of_session(path, kept)
                found = deliverables.check_ascend_dir(path, export_type, parse_asked, reading.sound)
                problems.extend((trace, problem) for problem in found)
                if not parse_asked and deliverables.unparsed(path):
                    process["raw_sessions"] = process.get("raw_sessions", 0) + 1
                plain += windowfiles.viewed_bytes(path)
                for name, us in reading.operator_totals.items():
                    self_times[name] = self_times.get(name, 0.0) + us
                timed = reading.step_times  # the NPU's own account of its steps
                if timed is not None:
                    process["profiler_steps"] += timed[0]
                    window_us += timed[1]
                    collective_us += timed[2]
                device = _device_steps(window, reading.computing)
                if device:
                    process.setdefault(lockstep.DEVICE, {}).update(device)
                each = reading.collectives  # HCCL's operations, as gloo's and NCCL's feed the judge
                if each is not None:
                    process.setdefault(lockstep.COLLECTIVES, []).extend(each)
                    read = process.setdefault("collectives_read", [])
                    if each.source not in read:
                        read.append(each.source)
                continue
            summary = care.get("summary") if care and care.get("status") == "done" and not deep else None
            if summary is None:
                path, parsed = windowfiles.summarize_where_it_is(
                    output_dir, rel, window.get("staged"), path, record.get("gloo_threads")
                )
                if parsed is None:
                    problems.append((trace, f"{rel}: missing"))
                    continue
                plain = plain or (windowfiles.tree_bytes(path) if not path.endswith(".gz") else 0)
                summary = {
                    "steps": len(parsed.step_names),
                    "collective_us": parsed.collective_us,
                    "window_us": sum(parsed.step_durations_us),
                    "self_time_us": parsed.self_time_us,
                    "problems": parsed.problems,
                    "collectives": parsed.collectives,
                }
            problems.extend((trace, problem) for problem in summary.get("problems") or [])
            process["profiler_steps"] += summary.get("steps", 0)
            collective_us += summary.get("collective_us", 0.0)
            window_us += summary.get("window_us", 0.0)
            collectives = tracecollectives.of(summary.get("collectives"))
            if collectives is not None:
                process.setdefault(lockstep.COLLECTIVES, []).extend(collectives)
                on_cpu = summary["collectives"].get("by") == tracecollectives.BY_ORDER  # gloo's: CPU tensors
                process[lockstep.ON_CPU] = process.get(lockstep.ON_CPU, True) and on_cpu
            for name, us in (summary.get("self_time_us") or {}).items():
                self_times[name] = self_times.get(name, 0.0) + us
        if window.get("traces"):
            process["window_bytes"].append(size)
            warnings = windowfiles.size_warnings(window, size, plain, backend)
            problems.extend(("output_size", warning) for warning in warnings)
    saved = (record.get("windows_completed") or 0) + (record.get("partial_traces") or 0)
    if backend == "npu" and saved and not record.get("traces"):
        problems.append(
            (
                trace,
                f"torch_npu handed over {saved} window(s) but no {record.get('worker')}_*"
                f"{names.ASCEND_DIR_SUFFIX} directory appeared in {output_dir}: torch_npu wrote no data "
                "(its [ERROR] lines on the job's stderr say why)",
            )
        )
    return problems, collective_us, window_us


def _device_steps(window: dict, computing: list[tuple[int, float]] | None) -> dict[int, float]:
    """The device's computing time in each of the window's recorded steps, in the job's numbering
    (the session numbers them ``ProfilerStep#``, from the window's ``profiler_steps_from``); none
    where the window does not say where its numbering starts."""
    first, start = window.get("first_step"), window.get("profiler_steps_from")
    if computing is None or first is None or start is None:
        return {}
    last = window.get("last_step") or first
    shifted = ((first + number - start, seconds) for number, seconds in computing)
    return {step: seconds for step, seconds in shifted if first <= step <= last}
