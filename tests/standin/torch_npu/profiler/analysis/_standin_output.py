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
LAUNCHED_BY = {"MatMulV2": "aten::mm", "Add": "aten::add", "Cast": "aten::to"}
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


def write_csv(path: str, header: list[str], rows: list[list]) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def write_json(path: str, data) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640), "w") as handle:
        handle.write(json.dumps(data, ensure_ascii=False))


def write_trace_view(
    output: str, steps: list[Step], found: list[Kernel], pid: Optional[int], tid: int, device: int
) -> None:
    """The timeline: the process's steps and operators (none when ``pid`` is None: no FRAMEWORK
    data), the device's kernels, and the flows from each operator to its kernel."""
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
    output: str, steps: list[Step], found: list[Kernel], device: int, header: list[str] = STEP_TRACE_TIME_HEADER
) -> None:
    """Per step, in the columns ``header``: its time computing (kernels) and free, no communication
    (TraceStepTimeParser)."""
    rows = []
    for step in steps:
        computing = sum(kernel.dur_ns for kernel in found if kernel.step == step.number) / 1000
        free = max((step.end_ns - step.start_ns) / 1000 - computing, 0.0)
        values = {"Device_id": device, "Step": "" if step.number is None else step.number}
        values.update(Computing=computing, Free=round(free, 3))
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
