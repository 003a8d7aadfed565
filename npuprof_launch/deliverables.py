"""Deliverable rules: what a finished trace must contain to count, in one place.

torch backend: a Chrome trace JSON that parses, has events, and has ``ProfilerStep#`` spans.
npu backend: the Ascend layout checks (see ``check_ascend_dir``).
The report, ``--check`` and the tests all use these functions.
"""

from __future__ import annotations

import json
import os

STEP_PREFIX = "ProfilerStep#"


class TraceSummary:
    """What one torch trace holds, as far as the report cares."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[str] = []
        self.step_names: list[str] = []
        self.step_durations_us: list[float] = []
        self.self_time_us: dict[str, float] = {}
        self.events = 0


def load_trace_events(path: str) -> list:
    with open(path) as handle:
        data = json.load(handle)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ValueError("no traceEvents list")
    return events


def summarize_torch_trace(path: str) -> TraceSummary:
    """Parse a Chrome trace once: its step spans and the self time of each CPU operator."""
    summary = TraceSummary(path)
    try:
        events = load_trace_events(path)
    except (OSError, ValueError) as exc:
        summary.problems.append(f"{path}: not a readable Chrome trace ({exc})")
        return summary
    spans = []
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        summary.events += 1
        name = str(event.get("name", ""))
        if name.startswith(STEP_PREFIX):
            summary.step_names.append(name)
            summary.step_durations_us.append(float(event.get("dur", 0)))
        elif event.get("cat") == "cpu_op":
            spans.append(
                (event.get("pid"), event.get("tid"), float(event.get("ts", 0)), float(event.get("dur", 0)), name)
            )
    summary.self_time_us = _self_times(spans)
    if summary.events == 0:
        summary.problems.append(f"{path}: the trace holds no events")
    elif not summary.step_names:
        summary.problems.append(f"{path}: the trace holds no {STEP_PREFIX} events")
    return summary


def _self_times(spans: list) -> dict[str, float]:
    """Self time per operator name: each span's duration less its direct children's, per thread."""
    totals: dict[str, float] = {}
    spans.sort(key=lambda s: (str(s[0]), str(s[1]), s[2], -s[3]))
    stack: list[list] = []
    thread = None
    for pid, tid, ts, dur, name in spans:
        if (pid, tid) != thread:
            _close(stack, float("inf"), totals)
            thread = (pid, tid)
        _close(stack, ts, totals)
        if stack:
            stack[-1][2] -= dur
        stack.append([ts + dur, name, dur])
    _close(stack, float("inf"), totals)
    return totals


def _close(stack: list, ts: float, totals: dict[str, float]) -> None:
    while stack and stack[-1][0] <= ts:
        _, name, self_time = stack.pop()
        totals[name] = totals.get(name, 0.0) + max(self_time, 0.0)


def count_profiler_steps(path: str) -> int:
    """The number of ``ProfilerStep#`` spans in a torch trace (used by tests and benchmarks)."""
    return len(summarize_torch_trace(path).step_names)


def check_ascend_dir(path: str, export_types) -> list[str]:
    """Problems of one ``*_ascend_pt`` directory; the npu backend's rules (filled in by the npu work)."""
    problems = []
    if not os.path.isdir(path):
        return [f"{path}: missing"]
    names = os.listdir(path)
    if not any(name.startswith("profiler_info") and name.endswith(".json") for name in names):
        problems.append(f"{path}: no profiler_info*.json: the profiler was never stopped properly")
    if "ASCEND_PROFILER_OUTPUT" not in names:
        problems.append(f"{path}: no ASCEND_PROFILER_OUTPUT/: the data was not parsed; run npuprof-run --analyse")
    return problems
