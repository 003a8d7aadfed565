"""A large output directory for timing ``--check``, written directly instead of running jobs.

Each rank gets what the torch backend leaves behind: a status record and one Chrome trace in
torch.profiler's layout (metadata, ``ProfilerStep#`` spans holding nested ``cpu_op`` events,
forward/backward flow arrows, the profiler's own span). Only the trace size changes between
the sizes of one benchmark, so ``--check`` time can be set against it. The names and the record
come from the package (names.py, options.py), so the layout follows the product's.

``write_output(..., step_times=N, summaries=True)`` writes what a run of the tool leaves today
besides: each rank's whole-run step times (N steps, steptimes.py) with the statistics its session
computes at its end (``step_stats``), and each window's aftercare result with the trace's summary
(aftercare.py), which the report reads instead of the trace past ``report.DEEP_BYTES`` of traces:
its time in collectives a third of the window, and as many collectives as a window keeps in three
recorded steps, so that the test of which rank the others wait for runs over them all
(launcher/collectives.py).
``link=True`` writes one trace and hard-links it for every rank: the report then only stats the
traces (their summaries stand for them), and a thousand ranks of traces cost one file's disk.
"""

from __future__ import annotations

import array
import json
import os
import random

from npuprof_launch.common import (
    deliverables,
    files,
    keptreading,
    names,
    options,
    record,
    stepstats,
    steptimes,
    tracecollectives,
    windowresults,
)
from npuprof_launch.common.schedule import Schedule
from npuprof_launch.inprocess import aftercare

#: The operators of one step: (name, children), nested as torch records them.
STEP_OPERATORS = (
    ("aten::linear", (("aten::t", (("aten::transpose", ()),)), ("aten::addmm", ()))),
    ("aten::relu", (("aten::clamp_min", ()),)),
    ("aten::mse_loss", (("aten::mean", ()),)),
    ("autograd::engine::evaluate_function: AddmmBackward0", (("aten::mm", ()), ("aten::sum", ()))),
    ("Optimizer.step#AdamW.step", (("aten::_foreach_add_", ()), ("aten::_foreach_lerp_", ()))),
    ("Optimizer.zero_grad#AdamW.zero_grad", ()),
)
#: Microseconds of a leaf operator, and the gap around every child.
LEAF_US, GAP_US = 10.0, 1.0


def _operator_events(tree, pid: int, ts: float, ids: list[int], events: list[dict]) -> float:
    """Append the events of ``tree`` from ``ts`` on, children strictly inside parents; returns the end."""
    for name, children in tree:
        index = ids[0] = ids[0] + 1
        event = {
            "ph": "X",
            "cat": "cpu_op",
            "name": name,
            "pid": pid,
            "tid": pid,
            "ts": ts,
            "dur": 0.0,
            "args": {
                "External id": index,
                "Record function id": 0,
                "Sequence number": index,
                "Fwd thread id": 0,
                "Ev Idx": index,
            },
        }
        events.append(event)
        end = _operator_events(children, pid, ts + GAP_US, ids, events) + GAP_US if children else ts + LEAF_US
        event["dur"] = end - ts
        ts = end + GAP_US
    return ts


def _step_events(step: int, layers: int, pid: int, start_us: float, ids: list[int]) -> tuple[list[dict], float]:
    """One ProfilerStep span holding ``layers`` times the operators above, each with a flow arrow."""
    ids[0] += 1
    span = {
        "ph": "X",
        "cat": "user_annotation",
        "name": f"ProfilerStep#{step}",
        "pid": pid,
        "tid": pid,
        "ts": start_us,
        "dur": 0.0,
        "args": {"External id": ids[0], "Record function id": 0, "Ev Idx": ids[0]},
    }
    events = [span]
    end = start_us + GAP_US
    for _ in range(layers):
        begin = end
        end = _operator_events(STEP_OPERATORS, pid, begin, ids, events)
        flow = {"id": ids[0], "pid": pid, "tid": pid, "cat": "fwdbwd", "name": "fwdbwd"}
        events.append({"ph": "s", "ts": begin + GAP_US, **flow})
        events.append({"ph": "f", "ts": end - 2 * GAP_US, "bp": "e", **flow})
    span["dur"] = end - start_us
    return events, end + GAP_US


def trace_text(megabytes: float, steps: int, pid: int = 4242) -> str:
    """A Chrome trace of about ``megabytes`` MB holding ``steps`` ProfilerStep spans.

    A large trace is large because each step runs many operators (a big model), not because a
    window holds many steps; so the size grows with the operators per step.
    """
    one_layer, _end = _step_events(0, 1, pid, 0.0, [0])
    layers = max(1, int(megabytes * 1e6 / len(json.dumps(one_layer)) / steps))
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "ts": 0, "pid": pid, "tid": pid, "args": {"name": "thread 1 (python)"}},
    ]
    ids, ts = [0], 1000.0
    for step in range(steps):
        step_events, ts = _step_events(step, layers, pid, ts, ids)
        events.extend(step_events)
    events.append(
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": 999.0,
            "dur": ts - 999.0,
            "args": {"Op count": 0},
        }
    )
    document = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "trace_id": "0" * 32,
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        "traceEvents": events,
        "traceName": "synthetic",
    }
    return json.dumps(document)


#: The job's collectives (microseconds): one all-reduce every ROUND_US, each rank reaching it at a
#: random moment within ARRIVAL_US, the LATE_RANK LATE_US later than that, and every rank leaving it
#: DONE_US after it was due. synthetic_npu_output.py writes the same job's HCCL operations.
ROUND_US, ARRIVAL_US, LATE_US, DONE_US, LATE_RANK = 10_000, 1000, 3000, 5000, 0


def arrival_us(rng: random.Random, rank: int, index: int) -> float:
    """When ``rank`` reaches the step's ``index``-th all-reduce, from the step's first one being due."""
    return ROUND_US * index + rng.uniform(0, ARRIVAL_US) + (LATE_US if rank == LATE_RANK else 0)


def collectives_of(rank: int, first: int, last: int) -> dict:
    """A window's collectives as the aftercare keeps them (tracecollectives.py), as many as it keeps:
    all-reduces that block one after another (a round each), each rank reaching each at a random
    moment, rank 0 3 ms late: the report names it, so its whole test runs."""
    rng = random.Random(rank)
    steps = range(first, last + 1)
    per_step = tracecollectives.MOST // len(steps)
    items = []
    for step in steps:
        for index in range(per_step):
            start = arrival_us(rng, rank, index)
            items.append([0, index, step, round(start, 1), round(ROUND_US * index + DONE_US - start, 1)])
    return {"by": tracecollectives.BY_ORDER, "seen": len(items), "groups": ["gloo:all_reduce"], "items": items}


def step_durations(steps: int, seed: int = 0) -> array.array:
    """``steps`` step durations (seconds) of a steady job: 0.1 s with 2 % of jitter, float32."""
    rng = random.Random(seed)
    return array.array("f", (0.1 * (1 + 0.02 * rng.random()) for _ in range(steps)))


def write_output(
    directory: str,
    ranks: int,
    megabytes: float,
    *,
    step_times: int = 0,
    summaries: bool = False,
    link: bool = False,
) -> int:
    """Write ``ranks`` processes' status records and traces of ``megabytes`` MB each; returns the
    bytes of trace the report sees (hard links counted once per rank, as the report counts them).

    ``step_times``: steps of whole-run step times per rank (0: none); ``summaries``: each window's
    aftercare result with its summary; ``link``: one trace file, hard-linked for every rank.
    """
    config, problems = options.resolve({}, {})
    if problems:
        raise RuntimeError(f"the default options do not resolve: {problems}")
    text = trace_text(megabytes, config.active)
    started = 1_700_000_000_000_000_000
    total = 0
    first_trace = None
    summary = None
    pattern = step_durations(step_times) if step_times else None
    window_first = config.skip_first + 1
    window_last = Schedule.of(config).length()
    if summaries:  # three recorded steps at least: with fewer, the report compares no collectives one by one
        window_last = max(window_last, window_first + 2)
    for rank in range(ranks):
        pid = 10_000 + rank
        worker = names.worker_name(rank, pid=pid, environ={})
        trace = names.torch_trace_name(worker, started + 1)
        files.make_dirs(directory)
        path = os.path.join(directory, trace)
        if link and first_trace is not None:
            os.link(first_trace, path)
        else:
            with open(path, "w") as handle:
                handle.write(text)
            first_trace = path
        total += len(text)
        status = names.status_path(directory, worker, started)
        windows = []
        if summaries:
            if summary is None:
                summary = aftercare._merge(None, deliverables.summarize_torch_trace(path))
                summary["collective_us"] = 0.3 * summary["window_us"]  # in lockstep: the collectives' test runs
            summary = dict(summary, collectives=collectives_of(rank, window_first, window_last))
            sizes = {trace: len(text)}
            windows.append(
                window_done(directory, status, trace, (window_first, window_last), pid, started, summary, sizes, sizes)
            )
        fields = process_fields(config, rank=rank, pid=pid, worker=worker, started=started, traces=[trace])
        if summaries:
            fields["windows"] = windows
        if pattern is not None:
            add_step_times(fields, directory, status, pattern, rank, config, (window_first, window_last))
        record.write(status, record.normalized(fields))
    return total


def window_done(
    directory: str,
    status: str,
    trace: str,
    steps: tuple[int, int],
    pid: int,
    started: int,
    summary: dict | None,
    size: dict[str, int],
    plain: dict[str, int],
    readings: dict | None = None,
) -> dict:
    """A complete window of ``steps`` holding ``trace``: its aftercare result written beside the
    status record (done, with ``summary``, the bytes and an NPU session's ``readings``), and the
    record's entry for it."""
    result = windowresults.result_path(status, 1)
    files.write_json(
        result,
        {
            "status": "done",
            "started_ns": started + 1,
            "ended_ns": started + 2,
            "pid": pid + 1,
            "traces": [trace],
            "left": [],
            "errors": [],
            "logged": [],
            "summary": summary,
            "bytes": size,
            "plain_bytes": plain,
            keptreading.RESULT_KEY: readings or {},
        },
    )
    first, last = steps
    relative = os.path.relpath(result, directory)
    return {"first_step": first, "last_step": last, "complete": True, "traces": [trace], "aftercare": relative}


def process_fields(
    config: options.Config, *, rank: int, pid: int, worker: str, started: int, traces: list[str], backend: str = "torch"
) -> dict:
    """A finished process's status record, as the hook leaves it: one window of the default
    schedule, complete."""
    steps = Schedule.of(config).length()
    return {
        "host": names.host(),
        "pid": pid,
        "rank": rank,
        "worker": worker,
        "run_id": "synthetic",
        "argv": ["train.py"],
        "state": "done",
        "clock": "optimizer.step",
        "backend": backend,
        "options": config.as_dict(),
        "steps": steps,
        "mean_step_s": 0.5,
        "window_steps": [config.skip_first + 1, steps],
        "schedule_steps": steps,
        "windows_planned": config.repeat,
        "windows_completed": config.repeat,
        "partial_traces": 0,
        "traces": traces,
        "warnings": [],
        "errors": [],
        "started_ns": started,
        "updated_ns": started + 2,
        "ended": record.ENDED_EXIT,
    }


def add_step_times(
    fields: dict,
    directory: str,
    status: str,
    pattern: array.array,
    rank: int,
    config: options.Config,
    window: tuple[int, int],
) -> None:
    """Write the rank's whole-run step times beside its record (``pattern`` rotated by the rank:
    every rank a little different, built at C speed) and the statistics its session computes."""
    shift = rank % len(pattern)
    durations = pattern[shift:] + pattern[:shift]
    times_path = names.step_times_path(status)
    steptimes.append(times_path, durations)
    first, last = window
    ticks = stepstats.ToolSteps([{"first_step": first, "last_step": last}], len(durations) + 1, config.warmup)
    fields.update(
        step_times=os.path.relpath(times_path, directory),
        step_stats=stepstats.rank_stats(durations, ticks),
        steps=max(fields["steps"], len(durations) + 1),
        mean_step_s=0.1,
    )
