"""A large NPU output directory for timing ``--check``, written directly instead of running jobs.

Each rank gets what a finished ``--backend npu`` process leaves behind: its status record (the
same fields as the torch output's, synthetic_output.py, with backend npu and the window's
aftercare result, which keeps no summary for a session but its reading of the session's largest
files, made by the aftercare's own call, keptreading.read), and one torch_npu session directory,
``{worker}_{pid}_{time}_ascend_pt/``, stopped (``profiler_info_{rank}.json``) and parsed, its
``ASCEND_PROFILER_OUTPUT/`` as torch_npu's parse writes it at the default level (Level0): the text
export's trace_view.json, kernel_details.csv, step_trace_time.csv, communication.json and
communication_matrix.json, or the db export's ``ascend_pytorch_profiler_{rank}.db`` (STEP_TIME,
COMMUNICATION_OP, the kernels as TASK and COMPUTE_TASK_INFO) and analysis.db (StepTraceTime). The
files are written by the torch_npu stand-in's own writer (tests/standin/.../_standin_output.py,
loaded by path as tests/npu_layout.py loads it), so names, headers and tables are the ones the
tests hold against torch_npu's sources.

The window records three steps of 170 all-reduces each, as many HCCL operations as a torch
window's summary keeps collectives (tracecollectives.MOST): the judge of which rank the others
wait for runs over all of them. The job is figure 9a's (synthetic_output.collectives_of): every
rank reaches each all-reduce at its own random moment within a millisecond (its own seed, the
same draws as there), rank 0 three milliseconds later, and each operation ends on every rank when
9a's does, after the last has arrived and the bytes have moved; so the report names rank 0 from
the collectives on both, and each rank's communication.json, step_trace_time.csv and db differ.
trace_view.json and kernel_details.csv are written once and hard-linked for every rank: the report
only checks that the timeline holds events and sums the kernels by type, the same on every rank of
a data-parallel job.
"""

from __future__ import annotations

import os
import random
import sys

import synthetic_output

from npuprof_launch.common import deliverables, files, keptreading, names, options, record, tracecollectives

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: A recorded step's span (its 170 all-reduces, one every synthetic_output.ROUND_US), and where they begin.
STEP_NS, FIRST_OP_NS = 2_000_000_000, 30_000_000
#: What each all-reduce moves: 0.1 ms at the writer's LINK_GB_S, so that the late rank's ends with
#: the others' (synthetic_output.DONE_US) and well before the next is due (each its own round).
BUCKET_BYTES = 2_000_000
#: HCCL's name of the world group (``{ip}%{interface}_{port}_0_{time}``), the same on every rank.
GROUP = "10.0.0.1%enp189s0f0_60000_0_1764936000000000"
#: Ranks per host: the device a rank runs on.
DEVICES = 8


sys.path.insert(0, os.path.join(ROOT, "tests"))
from npu_layout import output_files as writer  # noqa: E402  # the stand-in's writer, loaded once, by path, there


def recorded_steps(first: int, last: int, start_ns: int) -> list:
    """The window's ``ProfilerStep#first`` to ``#last``, one after another from ``start_ns``."""
    return [
        writer.Step(number, start_ns + index * STEP_NS, start_ns + (index + 1) * STEP_NS)
        for index, number in enumerate(range(first, last + 1))
    ]


def comms_of(rank: int, world: int, steps: list) -> list:
    """The rank's HCCL all-reduces in ``steps``, as many as a torch window's summary keeps, as figure
    9a's collectives (synthetic_output.collectives_of): each reached at the moment the rank reaches
    it there, each ending when it ends there; the same names (their sequence numbers) on every rank."""
    rng = random.Random(rank)
    per_step = tracecollectives.MOST // len(steps)
    found = []
    for step in steps:
        first_due = step.start_ns + FIRST_OP_NS
        for index in range(per_step):
            start = first_due + round(synthetic_output.arrival_us(rng, rank, index) * 1000)
            end = first_due + (synthetic_output.ROUND_US * index + synthetic_output.DONE_US) * 1000
            found.append(writer.Comm("allReduce", GROUP, len(found) + 1, start, end, BUCKET_BYTES, world, rank))
    return found


def profiler_info(rank: int, config: options.Config, export: tuple[str, ...]) -> dict:
    """``profiler_info_{rank}.json`` as torch_npu writes it when the profiler stops."""
    schedule = {"wait": 0, "active": config.active, "warmup": 0, "repeat": 1, "skip_first": 0, "skip_first_wait": 0}
    return {
        "config": {
            "common_config": {
                "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                "schedule": schedule,
                "record_shapes": False,
                "profile_memory": False,
                "with_stack": False,
                "with_flops": False,
                "with_modules": False,
            },
            "experimental_config": {
                "_profiler_level": "Level0",
                "_aic_metrics": "ACL_AICORE_NONE",
                "_data_simplification": True,
                "_export_type": list(export),
            },
        },
        "start_info": {"syscnt_enable": True, "freq": 100.0, "start_cnt": 1, "start_monotonic": 2},
        "end_info": {"collectionTimeEnd": 1_764_936_000_000_000_000, "MonotonicTimeEnd": 3},
        "torch_npu_version": "2.14.0",
        "cann_version": "8.3.RC1",
        "rank_id": rank,
    }


def write_session(
    session: str, rank: int, world: int, config: options.Config, export: tuple[str, ...], steps: list, shared: dict
) -> int:
    """One rank's session directory, stopped and parsed; returns the bytes of its parse's output.
    ``shared``: the files written once (by name) and hard-linked for every rank."""
    device = rank % DEVICES
    output = os.path.join(session, deliverables.ASCEND_OUTPUT)
    os.makedirs(output)
    os.makedirs(os.path.join(session, "FRAMEWORK"))
    os.makedirs(os.path.join(session, "PROF_000001_20251205120000123_ABCDEFGHIJ", f"device_{device}", "data"))
    files.write_json(os.path.join(session, f"profiler_info_{rank}.json"), profiler_info(rank, config, export))
    comms = comms_of(rank, world, steps)
    found = writer.kernels(steps)
    if "text" in export:
        writer.write_communication(output, comms, steps)
        writer.write_step_trace_time(output, steps, found, device, comms=comms)
        for name in (deliverables.TRACE_VIEW, deliverables.KERNEL_DETAILS):
            if name in shared:
                os.link(shared[name], os.path.join(output, name))
            elif name == deliverables.TRACE_VIEW:
                writer.write_trace_view(output, steps, found, 10_000 + rank, 1, device, comms, spans=steps)
            else:
                writer.write_kernel_details(output, found, device)
            shared.setdefault(name, os.path.join(output, name))
    if "db" in export:
        path = os.path.join(output, writer.db_name(rank))
        writer.make_db(path)
        writer.add_compute_tasks(path, found)
        writer.add_db_tables(path, comms, steps)
        writer.write_analysis_db(output, comms, steps, steps, found, device)
    open(os.path.join(output, deliverables.ANALYSE_DONE), "w").close()
    return sum(os.path.getsize(os.path.join(output, name)) for name in os.listdir(output))


def write_output(directory: str, ranks: int, *, export: tuple[str, ...] = ("text",), step_times: int = 0) -> int:
    """Write ``ranks`` NPU processes' status records and session directories; returns the bytes of
    their parse's output (hard links counted once per rank, as the report reads them).

    ``export``: torch_npu's export type(s); ``step_times``: steps of whole-run step times per rank.
    """
    config, problems = options.resolve({"backend": "npu", "export-type": ",".join(export)}, {})
    if problems:
        raise RuntimeError(f"the options do not resolve: {problems}")
    started = 1_764_936_000_000_000_000
    first = config.skip_first + 1
    last = first + 2  # three recorded steps: with fewer, the report compares no collectives one by one
    steps = recorded_steps(first, last, started + STEP_NS)
    pattern = synthetic_output.step_durations(step_times) if step_times else None
    shared: dict[str, str] = {}
    total = 0
    files.make_dirs(directory)
    for rank in range(ranks):
        pid = 10_000 + rank
        worker = names.worker_name(rank, pid=pid, environ={})
        trace = f"{worker}_{pid}_20251205120000{rank % 1000:03d}{names.ASCEND_DIR_SUFFIX}"
        size = write_session(os.path.join(directory, trace), rank, ranks, config, export, steps, shared)
        total += size
        status = names.status_path(directory, worker, started)
        session = os.path.join(directory, trace)
        readings = {trace: keptreading.read(session)}  # as the window's aftercare keeps it (aftercare.py)
        window = synthetic_output.window_done(
            directory, status, trace, (first, last), pid, started, None, {trace: size}, {}, readings
        )
        fields = synthetic_output.process_fields(
            config, rank=rank, pid=pid, worker=worker, started=started, traces=[trace], backend="npu"
        )
        fields.update(window_steps=[first, last], windows=[window])
        if pattern is not None:
            synthetic_output.add_step_times(fields, directory, status, pattern, rank, config, (first, last))
        record.write(status, record.normalized(fields))
    return total
