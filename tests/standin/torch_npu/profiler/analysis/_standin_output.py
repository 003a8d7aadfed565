"""STAND-IN ONLY (no such module in torch_npu): the files a parse writes into ASCEND_PROFILER_OUTPUT/.

The one writer of them, for the stand-in's parse and for tests/npu_layout.py, which builds session
directories by hand (it loads this file by path: standard library only, no torch).

Names, headers, table columns and event shapes are torch_npu's: ``trace_view.json`` a JSON array
of Chrome events, timestamps as strings of microseconds with three decimals (TraceEventManager,
convert_ns2us_str; ``ProfilerStep#N`` and operators as ``cpu_op`` X events), ``kernel_details.csv``
(CsvHeaders.OP_SUMMARY_KERNEL_BASE_HEADERS after "Step Id"), ``op_statistic.csv`` (CANN's
op_statistic columns), ``operator_details.csv`` (OperatorViewParser.OPERATOR_HEADERS),
``step_trace_time.csv`` (TraceStepTimeParser.title), ``ascend_pytorch_profiler[_{rank}].db``
(DbParser). CSVs are written as FileManager.create_csv_file writes them: no byte-order mark.

The data is synthetic and small: each window's device time is ``OPERATORS`` (spread over the steps
it recorded, whose times are real), and the db holds the few tables and rows the checks read.
"""

from __future__ import annotations

import csv
import json
import os
import random
import re
import sqlite3
from typing import NamedTuple, Optional

TRACE_VIEW = "trace_view.json"
KERNEL_DETAILS = "kernel_details.csv"
OP_STATISTIC = "op_statistic.csv"
OPERATOR_DETAILS = "operator_details.csv"
STEP_TRACE_TIME = "step_trace_time.csv"
DB_PREFIX = "ascend_pytorch_profiler"

#: kernel_details.csv's columns (CsvHeaders.OP_SUMMARY_KERNEL_BASE_HEADERS), by release imitated.
KERNEL_BASE_HEADERS = {
    "2.14.0": [
        "Device_id",
        "Name",
        "Type",
        "Accelerator Core",
        "Start Time(us)",
        "Duration(us)",
        "Wait Time(us)",
        "Block Num",
    ],
    "2.4.0": ["Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim"],
}
KERNEL_BASE_HEADER = KERNEL_BASE_HEADERS["2.14.0"]
KERNEL_HEADER = ["Step Id", *KERNEL_BASE_HEADER]
OP_STATISTIC_HEADER = [
    "Device_id",
    "OP Type",
    "Core Type",
    "Count",
    "Total Time(us)",
    "Min Time(us)",
    "Avg Time(us)",
    "Max Time(us)",
    "Ratio(%)",
]
OPERATOR_DETAILS_HEADER = [
    "Name",
    "Input Shapes",
    "Call Stack",
    "Host Self Duration(us)",
    "Host Total Duration(us)",
    "Device Self Duration(us)",
    "Device Total Duration(us)",
    "Device Self Duration With AICore(us)",
    "Device Total Duration With AICore(us)",
]
#: step_trace_time.csv's columns (TraceStepTimeParser.title), by release imitated.
STEP_TRACE_TIME_HEADERS = {
    "2.14.0": [
        "Device_id",
        "Step",
        "Computing",
        "Communication(Not Overlapped)",
        "Overlapped",
        "Communication",
        "Free",
        "Stage",
        "Bubble",
        "Communication(Not Overlapped and Exclude Receive)",
        "Preparing",
    ],
}
STEP_TRACE_TIME_HEADERS["2.4.0"] = STEP_TRACE_TIME_HEADERS["2.14.0"][1:]  # the same, without Device_id
STEP_TRACE_TIME_HEADER = STEP_TRACE_TIME_HEADERS["2.14.0"]
#: OP Type -> (count, total us): a window's kernels, what op_statistic.csv says and the top operators.
OPERATORS = {"MatMulV2": (4, 812.5), "Add": (8, 96.25), "Cast": (2, 12.0)}
#: The torch operator that launches each kernel.
LAUNCHED_BY = {"MatMulV2": "aten::mm", "Add": "aten::add", "Cast": "aten::to", "BatchMatMulV2": "aten::bmm"}
#: The kernel of a step's own work ($TORCH_NPU_STANDIN_DEVICE_WORK): its FLOPs at DEVICE_FLOPS_PER_NS.
WORK_KERNEL = "BatchMatMulV2"
#: The stand-in device's rate: 100 GFLOP/s, a CPU core's order, so that its time a step is near the
#: job's own compute on the CPU (tests/scripts/uneven_ddp.py: 1.6 GFLOP, 16 ms, where its thread ran
#: 16-17 ms a step unprofiled).
DEVICE_FLOPS_PER_NS = 100
#: CANN's timeline process of a device: its pid offset and the stream its kernels run on.
DEVICE_PID_BASE = 2_000_000
STREAM = 2


class Step(NamedTuple):
    """A span the kernels run in: a recorded ``ProfilerStep#number``, or the window (number None)."""

    number: Optional[int]
    start_ns: int
    end_ns: int


class Kernel(NamedTuple):
    step: Optional[int]
    name: str
    start_ns: int
    dur_ns: int


def us(ns: int) -> str:
    """A time as torch_npu writes it (convert_ns2us_str): microseconds with three decimals, a string."""
    text = str(ns)
    return "0." + text.rjust(3, "0") if len(text) <= 3 else f"{text[:-3]}.{text[-3:]}"


def kernels(steps: list[Step]) -> list[Kernel]:
    """``OPERATORS``' kernels in these spans, dealt round-robin, one after another from a tenth in
    (each type's durations, whole nanoseconds, add up to its total exactly)."""
    cursor = {step: step.start_ns + (step.end_ns - step.start_ns) // 10 for step in steps}
    found = []
    for name, (count, total) in OPERATORS.items():
        whole, extra = divmod(round(total * 1000), count)
        for index in range(count):
            step = steps[index % len(steps)]
            dur_ns = whole + (index < extra)
            found.append(Kernel(step.number, name, cursor[step], dur_ns))
            cursor[step] += dur_ns + 1000
    return sorted(found, key=lambda kernel: kernel.start_ns)


def work_ns(flops: int, cpu_ns: int) -> int:
    """How long the device computes a step's work: its FLOPs at DEVICE_FLOPS_PER_NS, as an NPU's
    computing follows its kernels' work whoever shares the host's cores. Where torch counted none
    (no matmul or convolution), the time the stepping thread ran on a CPU, which also holds the host
    profile's own cost: under a window the stand-in's CPU profile made alike ranks' threads run
    21-95 ms a step for 16-22 ms of work (2x apart), where their FLOPs were equal. A device's time
    for the same kernels varies a little from step to step: here by up to 1 % either way."""
    return round(flops / DEVICE_FLOPS_PER_NS * random.uniform(0.99, 1.01)) if flops > 0 else cpu_ns


def work_kernels(steps: list[Step], work: dict[int, int]) -> list[Kernel]:
    """One WORK_KERNEL in each step, from a tenth in, for the step's work (``work`` by step number, ns:
    work_ns), within the step: the device's share of the step's work."""
    found = []
    for step in steps:
        start = step.start_ns + (step.end_ns - step.start_ns) // 10
        dur_ns = min(work.get(step.number, 0), step.end_ns - start)
        if step.number is not None and dur_ns > 0:
            found.append(Kernel(step.number, WORK_KERNEL, start, dur_ns))
    return found


def write_csv(path: str, header: list[str], rows: list[list]) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def write_json(path: str, data) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640), "w") as handle:
        handle.write(json.dumps(data, ensure_ascii=False))


def write_trace_view(
    output: str,
    steps: list[Step],
    found: list[Kernel],
    pid: Optional[int],
    tid: int,
    device: int,
    comms: tuple = (),
    spans: Optional[list[Step]] = None,
) -> None:
    """The timeline: the process's steps and operators (none when ``pid`` is None: no FRAMEWORK
    data), the device's kernels, and the flows from each operator to its kernel; with CANN data
    (``spans``), the HCCL operations and the overlap analysis (``trace_events``)."""
    device_pid = DEVICE_PID_BASE + device
    events: list[dict] = []
    if pid is not None:
        events += [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "Python"}},
            {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "CPU"}},
            {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": 0}},
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"Thread {tid}"}},
            {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}},
        ]
        events += [_x(f"ProfilerStep#{s.number}", pid, tid, s.start_ns, s.end_ns - s.start_ns) for s in steps]
    if found:
        events += [
            {"ph": "M", "name": "process_name", "pid": device_pid, "tid": 0, "args": {"name": "Ascend Hardware"}},
            {"ph": "M", "name": "process_labels", "pid": device_pid, "tid": 0, "args": {"labels": f"NPU {device}"}},
            {"ph": "M", "name": "thread_name", "pid": device_pid, "tid": STREAM, "args": {"name": f"Stream {STREAM}"}},
        ]
    for index, kernel in enumerate(found):
        args = {"Task Type": "AI_CORE", "Stream Id": STREAM, "Task Id": index, "Batch Id": 0, "Subtask Id": 4294967295}
        events.append({**_x(kernel.name, device_pid, STREAM, kernel.start_ns, kernel.dur_ns, None), "args": args})
        if pid is None:
            continue
        launch = _x(LAUNCHED_BY[kernel.name], pid, tid, kernel.start_ns - 5000, 3000)
        flow = {"bp": "e", "name": "torch_to_npu", "id": us(kernel.start_ns), "cat": "async_npu"}
        events += [
            launch,
            {"ph": "s", **flow, "pid": pid, "tid": tid, "ts": launch["ts"]},
            {"ph": "f", **flow, "pid": device_pid, "tid": STREAM, "ts": us(kernel.start_ns)},
        ]
    if spans is not None:
        events += trace_events(found, list(comms), spans, device)
    write_json(os.path.join(output, TRACE_VIEW), events)


def _x(name: str, pid: int, tid: int, start_ns: int, dur_ns: int, cat: Optional[str] = "cpu_op") -> dict:
    """A complete event as TraceEventManager.create_x_event writes it (device events have no cat)."""
    event = {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": us(start_ns), "dur": dur_ns / 1000}
    if cat is not None:
        event["cat"] = cat
    event["args"] = {"Sequence number": -1, "Fwd thread id": 0}
    return event


def write_kernel_details(output: str, found: list[Kernel], device: int, base: list[str] = KERNEL_BASE_HEADER) -> None:
    """One row per kernel in the columns ``base``; "Step Id" first when the window recorded steps
    (KernelViewParser). The start times end in a tab, as in CANN's op_summary."""
    stepped = any(kernel.step is not None for kernel in found)
    header = ["Step Id", *base] if stepped else list(base)
    rows = []
    for kernel in found:
        values = {
            "Step Id": kernel.step,
            "Device_id": device,
            "Name": kernel.name,
            "Type": kernel.name,
            "Accelerator Core": "AI_CORE",
            "Start Time(us)": us(kernel.start_ns) + "\t",
            "Duration(us)": kernel.dur_ns / 1000,
            "Wait Time(us)": 1.0,
            "Block Num": 20,
            "Block Dim": 20,
        }
        rows.append([values[column] for column in header])
    write_csv(os.path.join(output, KERNEL_DETAILS), header, rows)


def write_op_statistic(output: str, found: list[Kernel], device: int) -> None:
    """One row per kernel type, the costliest first (CANN's op_statistic, which IntegrateParser copies)."""
    times: dict[str, list[float]] = {}
    for kernel in found:
        times.setdefault(kernel.name, []).append(kernel.dur_ns / 1000)
    whole = sum(sum(values) for values in times.values()) or 1.0
    rows = [
        [device, name, "AI_CORE", len(values), round(sum(values), 3), min(values)]
        + [round(sum(values) / len(values), 3), max(values), round(100 * sum(values) / whole, 3)]
        for name, values in times.items()
    ]
    rows.sort(key=lambda row: -row[4])
    write_csv(os.path.join(output, OP_STATISTIC), OP_STATISTIC_HEADER, rows)


def write_operator_details(output: str, found: list[Kernel]) -> None:
    """One row per torch operator that launched a kernel (OperatorViewParser)."""
    rows = []
    for kernel in found:
        device_us = kernel.dur_ns / 1000
        rows.append([LAUNCHED_BY[kernel.name], "", "", 3.0, 3.0, device_us, device_us, device_us, device_us])
    write_csv(os.path.join(output, OPERATOR_DETAILS), OPERATOR_DETAILS_HEADER, rows)


def write_step_trace_time(
    output: str,
    steps: list[Step],
    found: list[Kernel],
    device: int,
    header: list[str] = STEP_TRACE_TIME_HEADER,
    comms: tuple = (),
) -> None:
    """Per step, in the columns ``header``: the overlap analysis of its kernels and its HCCL
    operations (``step_times``; TraceStepTimeParser)."""
    rows = []
    for values in step_times(steps, found, list(comms)):
        values["Device_id"] = device
        rows.append([values.get(column, 0.0) for column in header])
    write_csv(os.path.join(output, STEP_TRACE_TIME), header, rows)


def db_name(rank_id) -> str:
    """DbParser's name for the db: with the rank profiler_info.json recorded (-1: none recorded)."""
    return f"{DB_PREFIX}.db" if rank_id == -1 else f"{DB_PREFIX}_{rank_id}.db"


def make_db(path: str, npu_info: bool = True, rows: bool = True) -> None:
    """An ascend_pytorch_profiler db with the tables its checks read (columns as torch_npu's DbConstant)."""
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT)")
        connection.execute("CREATE TABLE NPU_INFO (id INTEGER, name TEXT)")
        connection.execute("CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, globalTaskId INTEGER)")
        connection.execute("CREATE TABLE PYTORCH_API (startNs INTEGER, endNs INTEGER, name INTEGER)")
        if npu_info:
            connection.execute("INSERT INTO NPU_INFO VALUES (0, 'Ascend910B')")
        if rows:
            connection.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", [(1, "aten::mm"), (2, "MatMulV2")])
            connection.executemany(
                "INSERT INTO TASK VALUES (?, ?, 0, ?)", [(i * 10, i * 10 + 5, i) for i in range(500)]
            )
            connection.execute("INSERT INTO PYTORCH_API VALUES (0, 100, 1)")
    connection.close()
    os.chmod(path, 0o640)


# --- Communication: the job's real collectives as HCCL operations ---------------------------------
#
# Sources (torch_npu 2.14.0 wheel): prof_view/_communication_parser.py (communication.json,
# communication_matrix.json: keys, the split by step, "Total Op Info", the matrix's top1/middle/
# bottom/total integration), prof_view/_trace_step_time_parser.py (step_trace_time.csv from the
# timeline's "Computing", "Communication", "Communication(Not Overlapped)", "Free" events of a
# process labelled "NPU {id}"), prof_view/prof_db_parse/_communication_db_parser.py and
# _trace_step_time_db_parser.py (analysis.db's CommAnalyzer* and StepTraceTime tables, and the
# COMMUNICATION_OP columns it reads), prof_view/prof_db_parse/_step_info_db_parser.py (STEP_TIME),
# prof_view/prof_db_parse/_db_parser.py (analysis.db only with CANN data and a level above
# Level_none), prof_common_func/_constant.py (DbConstant's names, TableColumnsManager's columns).

COMMUNICATION = "communication.json"
COMMUNICATION_MATRIX = "communication_matrix.json"
DB_ANALYSIS = "analysis.db"
TIME_INFO = "Communication Time Info"
BANDWIDTH_INFO = "Communication Bandwidth Info"
TOTAL_OP_INFO = "Total Op Info"
#: The regex CommunicationParser.get_comm_type takes an op's type with (for the matrix's names).
HCCL_PATTERN = (
    r"send|reduce|invalid|broadcast|allreduce|"
    "receive|allgather|reducescatter|scatter|alltoall|alltoallv|alltoallvc|batchsendrecv"
)
#: CANN's transport types in an op's bandwidth info; the stand-in's ops move over HCCS (one node).
TRANSPORT_TYPES = ("HCCS", "PCIE", "RDMA", "SDMA")
LINK = "HCCS"
#: The link's bandwidth the stand-in assumes, GB/s (= MB/ms): an op's transit time is its bytes at
#: this speed (at most its elapse time); the rest of its elapse time is waiting for the others.
LINK_GB_S = 20.0
#: The timeline's "Overlap Analysis" process of a device (CANN's msprof timeline), its pid offset.
OVERLAP_PID_BASE = 3_000_000
COMM_PID_BASE = 4_000_000
OVERLAP_THREADS = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")
#: COMMUNICATION_OP's columns (msprof's table; _trace_step_time_db_parser.py reads opName, startNs,
#: endNs, connectionId, opName through STRING_IDS).
COMMUNICATION_OP_COLUMNS = [
    ("opName", "INTEGER"),
    ("startNs", "INTEGER"),
    ("endNs", "INTEGER"),
    ("connectionId", "INTEGER"),
    ("groupName", "INTEGER"),
    ("opId", "INTEGER"),
    ("relay", "INTEGER"),
    ("retry", "INTEGER"),
    ("dataType", "INTEGER"),
    ("algType", "INTEGER"),
    ("count", "NUMERIC"),
    ("opType", "INTEGER"),
]
#: TableColumnsManager.TableColumns (prof_common_func/_constant.py) of the tables written here.
STEP_TIME_COLUMNS = [("id", "INTEGER"), ("startNs", "INTEGER"), ("endNs", "INTEGER")]
STEP_TRACE_TIME_COLUMNS = [
    ("deviceId", "INTEGER"),
    ("step", "TEXT"),
    ("computing", "NUMERIC"),
    ("communication_not_overlapped", "NUMERIC"),
    ("overlapped", "NUMERIC"),
    ("communication", "NUMERIC"),
    ("free", "NUMERIC"),
    ("stage", "NUMERIC"),
    ("bubble", "NUMERIC"),
    ("communication_not_overlapped_and_exclude_receive", "NUMERIC"),
    ("preparing", "NUMERIC"),
]
#: StepTraceTime's columns by release imitated (2.4.0's have no deviceId, as its csv no Device_id).
STEP_TRACE_TIME_COLUMNS_BY_RELEASE = {"2.14.0": STEP_TRACE_TIME_COLUMNS, "2.4.0": STEP_TRACE_TIME_COLUMNS[1:]}
ANALYZER_TIME_COLUMNS = [
    ("hccl_op_name", "TEXT"),
    ("group_name", "TEXT"),
    ("start_timestamp", "NUMERIC"),
    ("elapse_time", "NUMERIC"),
    ("transit_time", "NUMERIC"),
    ("wait_time", "NUMERIC"),
    ("synchronization_time", "NUMERIC"),
    ("idle_time", "NUMERIC"),
    ("step", "TEXT"),
    ("type", "TEXT"),
]
ANALYZER_BANDWIDTH_COLUMNS = [
    ("hccl_op_name", "TEXT"),
    ("group_name", "TEXT"),
    ("transport_type", "TEXT"),
    ("transit_size", "NUMERIC"),
    ("transit_time", "NUMERIC"),
    ("bandwidth", "NUMERIC"),
    ("large_packet_ratio", "NUMERIC"),
    ("package_size", "NUMERIC"),
    ("count", "NUMERIC"),
    ("total_duration", "NUMERIC"),
    ("step", "TEXT"),
    ("type", "TEXT"),
]
ANALYZER_MATRIX_COLUMNS = [
    ("hccl_op_name", "TEXT"),
    ("group_name", "TEXT"),
    ("src_rank", "TEXT"),
    ("dst_rank", "TEXT"),
    ("transport_type", "TEXT"),
    ("transit_size", "NUMERIC"),
    ("transit_time", "NUMERIC"),
    ("bandwidth", "NUMERIC"),
    ("step", "TEXT"),
    ("type", "TEXT"),
    ("op_name", "TEXT"),
]


class Comm(NamedTuple):
    """One HCCL operation of the window: a real collective of the job (its gloo work range)."""

    op_type: str
    group: str
    seq: int
    start_ns: int
    end_ns: int
    bytes: int
    world: int
    rank: int

    @property
    def name(self) -> str:
        """HCCL's op name, ``hcom_{type}__{group tag}_{seq}_1``: the same op has the same name on every rank."""
        tag = sum(self.group.encode()) % 1000
        return f"hcom_{self.op_type}__{tag}_{self.seq}_1"

    @property
    def key(self) -> str:
        return f"{self.name}@{self.group}"

    def times_ms(self) -> dict:
        """Elapse, transit, wait, synchronization, idle (ms): transit at LINK_GB_S, the rest waiting."""
        elapse = (self.end_ns - self.start_ns) / 1e6
        transit = min(elapse, self.bytes / 1e6 / LINK_GB_S)
        wait = elapse - transit
        return {"elapse": elapse, "transit": transit, "wait": wait, "sync": wait, "idle": 0.0}

    def links(self) -> list[str]:
        """The links this rank sends on: a ring (all-reduce & co.), or the root's sends (broadcast...)."""
        if self.world < 2:
            return []
        if self.op_type in ("broadcast", "scatter"):
            return [f"{self.rank}-{dst}" for dst in range(self.world) if dst != self.rank] if self.rank == 0 else []
        return [f"{self.rank}-{(self.rank + 1) % self.world}"]


def step_of(comm: Comm, steps: list[Step]) -> Optional[Step]:
    """The step an op fell in, by its start (CommunicationParser.split_comm_op_by_step: a window of
    one step takes all of them)."""
    if len(steps) == 1:
        return steps[0]
    for step in steps:
        if step.start_ns <= comm.start_ns <= step.end_ns:
            return step
    return None


def step_key(step: Optional[Step]) -> str:
    return "step" if step is None or step.number is None else f"step{step.number}"


def _ratio(dividend: float, divisor: float) -> float:
    return 0 if abs(divisor) < 1e-15 else round(dividend / divisor, 4)


def time_info(comm: Comm) -> dict:
    t = comm.times_ms()
    return {
        "Start Timestamp(us)": comm.start_ns / 1000,
        "Elapse Time(ms)": t["elapse"],
        "Transit Time(ms)": t["transit"],
        "Wait Time(ms)": t["wait"],
        "Synchronization Time(ms)": t["sync"],
        "Idle Time(ms)": t["idle"],
        "Wait Time Ratio": _ratio(t["wait"], t["wait"] + t["transit"]),
        "Synchronization Time Ratio": _ratio(t["sync"], t["sync"] + t["transit"]),
    }


def bandwidth_info(comm: Comm) -> dict:
    t = comm.times_ms()
    found = {}
    for transport in TRANSPORT_TYPES:
        size = comm.bytes / 1e6 if transport == LINK else 0.0
        used = t["transit"] if transport == LINK else 0.0
        found[transport] = {
            "Transit Time(ms)": used,
            "Transit Size(MB)": size,
            "Bandwidth(GB/s)": _ratio(size, used),
            "Large Packet Ratio": 0.0,
            "Size Distribution": {str(size): [1, used]} if used else {},
        }
    return found


def _total(ops: dict) -> None:
    """CommunicationParser.compute_total_info: the sums, and the ratios of the sums (its bandwidth
    ratio is computed and dropped, so a total has no Bandwidth(GB/s))."""
    if not ops:
        return
    times: dict = {}
    bands: dict = {}
    for info in ops.values():
        for name, value in info[TIME_INFO].items():
            if name not in ("Wait Time Ratio", "Synchronization Time Ratio", "Start Timestamp(us)"):
                times[name] = times.get(name, 0.0) + value
        for transport, part in info[BANDWIDTH_INFO].items():
            total = bands.setdefault(transport, {"Transit Time(ms)": 0, "Transit Size(MB)": 0, "Size Distribution": {}})
            total["Transit Time(ms)"] += part["Transit Time(ms)"]
            total["Transit Size(MB)"] += part["Transit Size(MB)"]
            for size, (count, used) in part["Size Distribution"].items():
                was = total["Size Distribution"].setdefault(size, [0, 0])
                was[0] += count
                was[1] += used
    times["Wait Time Ratio"] = _ratio(
        times.get("Wait Time(ms)", 0), times.get("Wait Time(ms)", 0) + times.get("Transit Time(ms)", 0)
    )
    times["Synchronization Time Ratio"] = _ratio(
        times.get("Synchronization Time(ms)", 0),
        times.get("Transit Time(ms)", 0) + times.get("Synchronization Time(ms)", 0),
    )
    ops[TOTAL_OP_INFO] = {TIME_INFO: times, BANDWIDTH_INFO: bands}


def _p2p(comm: Comm) -> bool:
    return comm.name.lower().startswith(("hcom_send", "hcom_receive", "hcom_batchsendrecv"))


def by_step(comms: list[Comm], steps: list[Step]) -> dict:
    """step key -> the ops in it, in order (the ops outside every step are left out, as the real one)."""
    found: dict = {}
    if not steps:
        return {"step": list(comms)} if comms else {}
    for comm in comms:
        step = step_of(comm, steps)
        if step is not None:
            found.setdefault(step_key(step), []).append(comm)
    return found


def communication(comms: list[Comm], steps: list[Step]) -> dict:
    """communication.json: per step, {"p2p": {...}, "collective": {...}}, each op by ``name@group``
    with its time and bandwidth info, and a "Total Op Info" where there are ops."""
    output = {}
    for key, ops in by_step(comms, steps).items():
        split = {"p2p": {}, "collective": {}}
        for comm in ops:
            split["p2p" if _p2p(comm) else "collective"][comm.key] = {
                TIME_INFO: time_info(comm),
                BANDWIDTH_INFO: bandwidth_info(comm),
            }
        _total(split["p2p"])
        _total(split["collective"])
        output[key] = split
    return output


def _integrate(ops: list[Comm]) -> dict:
    """CommunicationParser.get_comm_type and integrate_matrix_data: the ops of a type and group, per
    link, as "{type}-top1@group", "-middle", "-bottom1..3", "-total"."""
    grouped: dict = {}
    for comm in ops:
        found = re.search(HCCL_PATTERN, comm.name.lower())
        kind = found.group() if found else comm.name.split("__")[0]
        t = comm.times_ms()
        for link in comm.links():
            data = {
                "Transport Type": LINK,
                "Transit Size(MB)": comm.bytes / 1e6,
                "Transit Time(ms)": t["transit"],
                "Bandwidth(GB/s)": _ratio(comm.bytes / 1e6, t["transit"]),
                "Op Name": comm.name,
            }
            grouped.setdefault((kind, comm.group, link), []).append(data)
    output: dict = {}
    for (kind, group, link), data in grouped.items():
        data.sort(key=lambda x: x["Bandwidth(GB/s)"], reverse=True)
        size = sum(x["Transit Size(MB)"] for x in data)
        used = sum(x["Transit Time(ms)"] for x in data)
        output.setdefault(f"{kind}-top1@{group}", {})[link] = data[0]
        output.setdefault(f"{kind}-middle@{group}", {})[link] = data[len(data) // 2]
        output.setdefault(f"{kind}-bottom1@{group}", {})[link] = data[-1]
        output.setdefault(f"{kind}-total@{group}", {})[link] = {
            "Transport Type": data[0]["Transport Type"],
            "Transit Size(MB)": size,
            "Transit Time(ms)": used,
            "Bandwidth(GB/s)": _ratio(size, used),
        }
        if len(data) >= 2:
            output.setdefault(f"{kind}-bottom2@{group}", {})[link] = data[-2]
        if len(data) >= 3:
            output.setdefault(f"{kind}-bottom3@{group}", {})[link] = data[-3]
    return output


def communication_matrix(comms: list[Comm], steps: list[Step]) -> dict:
    output = {}
    for key, ops in by_step([c for c in comms if c.links()], steps).items():
        output[key] = {
            "p2p": _integrate([c for c in ops if _p2p(c)]),
            "collective": _integrate([c for c in ops if not _p2p(c)]),
        }
    return output


def write_communication(output: str, comms: list[Comm], steps: list[Step]) -> None:
    """CommunicationParser: both files, only when the window made collectives (CANN's analysis of
    a window without any has no communication data, and the real one then writes neither)."""
    if not comms:
        return
    write_json(os.path.join(output, COMMUNICATION), communication(comms, steps))
    matrix = communication_matrix(comms, steps)
    if matrix:
        write_json(os.path.join(output, COMMUNICATION_MATRIX), matrix)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def _minus(spans: list[tuple[int, int]], taken: list[tuple[int, int]]) -> list[tuple[int, int]]:
    left = []
    for start, end in spans:
        pieces = [(start, end)]
        for t0, t1 in taken:
            pieces = [p for a, b in pieces for p in ((a, min(b, t0)), (max(a, t1), b)) if p[1] > p[0]]
        left += pieces
    return left


def overlap(span: Step, found: list[Kernel], comms: list[Comm]) -> dict:
    """CANN's overlap analysis of one span: the intervals computing (kernels), communicating (the
    HCCL ops), communicating while not computing, and free (neither), clipped to the span."""

    def clip(spans):
        return [
            (max(a, span.start_ns), min(b, span.end_ns))
            for a, b in spans
            if min(b, span.end_ns) > max(a, span.start_ns)
        ]

    computing = _merge(clip([(k.start_ns, k.start_ns + k.dur_ns) for k in found]))
    comm = _merge(clip([(c.start_ns, c.end_ns) for c in comms]))
    alone = _merge(_minus(comm, computing))
    busy = _merge(computing + comm)
    free = _minus([(span.start_ns, span.end_ns)], busy)
    return {"Computing": computing, "Communication": comm, "Communication(Not Overlapped)": alone, "Free": free}


def _us_sum(spans) -> float:
    return sum(b - a for a, b in spans) / 1000


def step_times(spans: list[Step], found: list[Kernel], comms: list[Comm]) -> list[dict]:
    """TraceStepTimeParser's numbers per span (us): from the overlap analysis; Overlapped is
    Communication less Not Overlapped, Stage the span's first to last task less Bubble (no
    hcom_receive here), Preparing its first task's start less the step's."""
    rows = []
    for span in spans:
        parts = overlap(span, found, comms)
        tasks = parts["Computing"] + parts["Communication"]
        stage = (max(b for _, b in tasks) - min(a for a, _ in tasks)) / 1000 if tasks else 0.0
        prepare = (min(a for a, _ in tasks) - span.start_ns) / 1000 if tasks else 0.0
        communication_us = _us_sum(parts["Communication"])
        alone = _us_sum(parts["Communication(Not Overlapped)"])
        rows.append(
            {
                "Step": "" if span.number is None else span.number,
                "Computing": round(_us_sum(parts["Computing"]), 3),
                "Communication(Not Overlapped)": round(alone, 3),
                "Overlapped": round(communication_us - alone, 3),
                "Communication": round(communication_us, 3),
                "Free": round(_us_sum(parts["Free"]), 3),
                "Stage": round(stage, 3),
                "Bubble": 0.0,
                "Communication(Not Overlapped and Exclude Receive)": round(alone, 3),
                "Preparing": round(prepare, 3),
            }
        )
    return rows


def trace_events(found: list[Kernel], comms: list[Comm], spans: list[Step], device: int) -> list[dict]:
    """The device's HCCL operations (a "Communication" process, one thread per group, as CANN's
    timeline) and its "Overlap Analysis" process (the events TraceStepTimeParser counts)."""
    events: list[dict] = []
    if comms:
        pid = COMM_PID_BASE + device
        events += [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "Communication"}},
            {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": f"NPU {device}"}},
        ]
        groups = sorted({c.group for c in comms})
        for tid, group in enumerate(groups):
            events.append(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": pid,
                    "tid": tid,
                    "args": {"name": f"Group {group} Communication"},
                }
            )
        for index, comm in enumerate(comms):
            args = {"connection_id": index, "model id": 4294967295, "data_type": "FP32", "alg_type": "RING"}
            args.update(count=comm.bytes // 4, relay="no", retry="no")
            event = _x(comm.name, pid, groups.index(comm.group), comm.start_ns, comm.end_ns - comm.start_ns, None)
            events.append({**event, "args": args})
    pid = OVERLAP_PID_BASE + device
    body = []
    for span in spans:
        for name, intervals in overlap(span, found, comms).items():
            tid = OVERLAP_THREADS.index(name)
            body += [{**_x(name, pid, tid, a, b - a, None), "args": {}} for a, b in intervals]
    if body:
        events += [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "Overlap Analysis"}},
            {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": f"NPU {device}"}},
        ]
        events += [
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
            for tid, name in enumerate(OVERLAP_THREADS)
        ]
        events += body
    return events


def _create(connection, table: str, columns: list[tuple[str, str]]) -> None:
    connection.execute(f"CREATE TABLE IF NOT EXISTS {table} ({', '.join(f'{n} {t}' for n, t in columns)})")


#: COMPUTE_TASK_INFO's columns that msprof-analyze reads (compare_tools' npu_profiling_db_parser.py:
#: name, opType, taskType, inputShapes as STRING_IDS ids; globalTaskId joins TASK), msprof's table.
COMPUTE_TASK_INFO_COLUMNS = [
    ("name", "INTEGER"),
    ("globalTaskId", "INTEGER"),
    ("taskType", "INTEGER"),
    ("opType", "INTEGER"),
    ("inputShapes", "INTEGER"),
]


def add_compute_tasks(path: str, found: list[Kernel]) -> None:
    """The window's kernels as msprof's compute tasks: a TASK row each (its start and end) and a
    COMPUTE_TASK_INFO row joined to it on globalTaskId, its name and type in STRING_IDS."""
    connection = sqlite3.connect(path)
    with connection:
        _create(connection, "COMPUTE_TASK_INFO", COMPUTE_TASK_INFO_COLUMNS)
        next_id = (connection.execute("SELECT MAX(id) FROM STRING_IDS").fetchone()[0] or 0) + 1
        ids: dict = {}
        for text in [*(k.name for k in found), "AI_CORE", ""]:
            if text not in ids:
                ids[text] = next_id
                next_id += 1
        connection.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", [(i, t) for t, i in ids.items()])
        first = (connection.execute("SELECT MAX(globalTaskId) FROM TASK").fetchone()[0] or 0) + 1
        connection.executemany(
            "INSERT INTO TASK VALUES (?, ?, ?, ?)",
            [(k.start_ns, k.start_ns + k.dur_ns, 0, first + i) for i, k in enumerate(found)],
        )
        connection.executemany(
            "INSERT INTO COMPUTE_TASK_INFO VALUES (?, ?, ?, ?, ?)",
            [(ids[k.name], first + i, ids["AI_CORE"], ids[k.name], ids[""]) for i, k in enumerate(found)],
        )
    connection.close()


def add_db_tables(path: str, comms: list[Comm], steps: list[Step]) -> None:
    """STEP_TIME (StepInfoDbParser.save_step_time) and COMMUNICATION_OP (msprof's, its names in
    STRING_IDS) into an ascend_pytorch_profiler db."""
    connection = sqlite3.connect(path)
    with connection:
        if steps:
            _create(connection, "STEP_TIME", STEP_TIME_COLUMNS)
            connection.executemany(
                "INSERT INTO STEP_TIME VALUES (?, ?, ?)", [(s.number, s.start_ns, s.end_ns) for s in steps]
            )
        if comms:
            _create(connection, "COMMUNICATION_OP", COMMUNICATION_OP_COLUMNS)
            next_id = (connection.execute("SELECT MAX(id) FROM STRING_IDS").fetchone()[0] or 0) + 1
            ids: dict = {}
            for text in [*(c.name for c in comms), *(c.group for c in comms), *(c.op_type for c in comms)]:
                if text not in ids:
                    ids[text] = next_id
                    next_id += 1
            connection.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", [(i, t) for t, i in ids.items()])
            rows = [
                (
                    ids[c.name],
                    c.start_ns,
                    c.end_ns,
                    index,
                    ids[c.group],
                    c.seq,
                    0,
                    0,
                    0,
                    0,
                    c.bytes // 4,
                    ids[c.op_type],
                )
                for index, c in enumerate(comms)
            ]
            connection.executemany(f"INSERT INTO COMMUNICATION_OP VALUES ({', '.join('?' * 12)})", rows)
    connection.close()


def write_analysis_db(
    output: str,
    comms: list[Comm],
    steps: list[Step],
    spans: list[Step],
    found: list[Kernel],
    device: int,
    step_columns: list[tuple[str, str]] = STEP_TRACE_TIME_COLUMNS,
) -> None:
    """analysis.db (DbParser's ANALYSIS_DB_MAP): StepTraceTime (TraceStepTimeDbParser), and the
    CommAnalyzerTime, CommAnalyzerBandwidth, CommAnalyzerMatrix tables (CommunicationDbParser, when
    CANN's analysis has communication data), rows as the text export's."""
    path = os.path.join(output, DB_ANALYSIS)
    connection = sqlite3.connect(path)
    with connection:
        _create(connection, "StepTraceTime", step_columns)
        names = STEP_TRACE_TIME_HEADER[2:]  # Computing ... Preparing, the columns after step
        rows = [[device, row["Step"], *(row[name] for name in names)] for row in step_times(spans, found, comms)]
        if len(step_columns) < len(STEP_TRACE_TIME_COLUMNS):
            rows = [row[1:] for row in rows]
        marks = ", ".join("?" * len(step_columns))
        connection.executemany(f"INSERT INTO StepTraceTime VALUES ({marks})", rows)
        if comms:
            _create(connection, "CommAnalyzerTime", ANALYZER_TIME_COLUMNS)
            _create(connection, "CommAnalyzerBandwidth", ANALYZER_BANDWIDTH_COLUMNS)
            _create(connection, "CommAnalyzerMatrix", ANALYZER_MATRIX_COLUMNS)
            for key, ops in by_step(comms, steps).items():
                for comm in ops:
                    kind = "p2p" if _p2p(comm) else "collective"
                    t = comm.times_ms()
                    connection.execute(
                        "INSERT INTO CommAnalyzerTime VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            comm.name,
                            comm.group,
                            comm.start_ns / 1000,
                            t["elapse"],
                            t["transit"],
                            t["wait"],
                            t["sync"],
                            t["idle"],
                            key,
                            kind,
                        ),
                    )
                    for transport, part in bandwidth_info(comm).items():
                        connection.execute(
                            "INSERT INTO CommAnalyzerBandwidth VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (comm.name, comm.group, transport, part["Transit Size(MB)"], part["Transit Time(ms)"])
                            + (
                                part["Bandwidth(GB/s)"],
                                0.0,
                                part["Transit Size(MB)"],
                                1 if part["Transit Time(ms)"] else 0,
                            )
                            + (part["Transit Time(ms)"], key, kind),
                        )
            for key, split in communication_matrix(comms, steps).items():
                for kind, ops in split.items():
                    for name, links in ops.items():
                        matrix_name, group = name.split("@", 1)
                        for link, info in links.items():
                            src, dst = link.split("-")
                            connection.execute(
                                "INSERT INTO CommAnalyzerMatrix VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                (matrix_name, group, src, dst, info["Transport Type"], info["Transit Size(MB)"])
                                + (
                                    info["Transit Time(ms)"],
                                    info["Bandwidth(GB/s)"],
                                    key,
                                    kind,
                                    info.get("Op Name", ""),
                                ),
                            )
    connection.close()
    os.chmod(path, 0o640)
