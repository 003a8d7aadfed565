"""Small torch_npu session directories, built from the documented output layout.

torch_npu's documented layout: ``{worker}_{pid}_{timestamp}_ascend_pt/`` with
``profiler_info_{rank}.json`` (written at stop), raw ``FRAMEWORK/`` and ``PROF_*/`` data, and after
parsing ``ASCEND_PROFILER_OUTPUT/`` with ``trace_view.json`` (a JSON array of Chrome events,
timestamps as strings), ``kernel_details.csv``, ``op_statistic.csv`` (columns as torch_npu and
CANN write them) and, for db export, ``ascend_pytorch_profiler_{rank}.db``. The tests break these
trees one way at a time; nothing here comes from, or stands in for, a real profiler run.
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3

KERNEL_HEADER = [
    "Step Id",
    "Device_id",
    "Name",
    "Type",
    "Accelerator Core",
    "Start Time(us)",
    "Duration(us)",
    "Wait Time(us)",
    "Block Num",
]
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
#: OP Type -> (count, total us): what op_statistic.csv says, and the report's top operators.
OPERATORS = {"MatMulV2": (4, 812.5), "Add": (8, 96.25), "Cast": (2, 12.0)}


def session(
    root: str,
    worker: str = "node1_rank0_pid4242",
    *,
    export: tuple[str, ...] = ("text",),
    stopped: bool = True,
    parsed: bool = True,
    activities: tuple[str, ...] = ("CPU", "NPU"),
    rank: int | None = 0,
) -> str:
    """A complete session directory (or one that was never stopped / never parsed); returns its path."""
    path = os.path.join(root, f"{worker}_4242_20260101120000123_ascend_pt")
    os.makedirs(os.path.join(path, "FRAMEWORK"))
    os.makedirs(os.path.join(path, "PROF_000001_20260101120000123_ABCDEFGHIJ", "device_0", "data"))
    if stopped:
        name = "profiler_info.json" if rank is None else f"profiler_info_{rank}.json"
        info = {
            "config": {
                "common_config": {
                    "activities": [f"ProfilerActivity.{a}" for a in activities],
                    "schedule": {"wait": 0, "warmup": 0, "active": 2, "repeat": 1, "skip_first": 0},
                    "record_shapes": False,
                    "profile_memory": False,
                    "with_stack": False,
                    "with_flops": False,
                    "with_modules": False,
                },
                "experimental_config": {"_profiler_level": "Level0", "_export_type": list(export)},
            },
            "start_info": {"syscnt_enable": True, "freq": 100000000, "start_cnt": 1, "start_monotonic": 2},
            "end_info": {"collectionTimeEnd": 1767268800123000000, "MonotonicTimeEnd": 3},
            "torch_npu_version": "2.14.0",
            "cann_version": "8.3.RC1",
        }
        if rank is not None:
            info["rank_id"] = rank
        write_json(os.path.join(path, name), info)
    if parsed:
        output = os.path.join(path, "ASCEND_PROFILER_OUTPUT")
        os.makedirs(output)
        if "text" in export:
            _text(output)
        if "db" in export:
            make_db(os.path.join(output, f"ascend_pytorch_profiler_{rank or 0}.db"))
    return path


def write_json(path: str, data) -> None:
    with open(path, "w") as handle:
        json.dump(data, handle)


def write_csv(path: str, header: list[str], rows: list[list]) -> None:
    with open(path, "w", newline="", encoding="utf-8-sig") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def _text(output: str) -> None:
    events = [
        {"ph": "M", "name": "process_name", "pid": 4242, "tid": 0, "args": {"name": "Python"}},
        {"ph": "X", "name": "ProfilerStep#2", "pid": 4242, "tid": 1, "ts": "1767268800000000.000", "dur": 900.0},
        {"ph": "X", "name": "MatMulV2", "pid": 7, "tid": 2, "ts": "1767268800000100.000", "dur": 203.1},
    ]
    write_json(os.path.join(output, "trace_view.json"), events)
    kernels = [
        [2, 0, name, name, "AI_CORE", "1767268800000100.000", total / count, 1.0, 20]
        for name, (count, total) in OPERATORS.items()
    ]
    write_csv(os.path.join(output, "kernel_details.csv"), KERNEL_HEADER, kernels)
    stats = [
        [0, name, "AI_CORE", count, total, total / count, total / count, total / count, 0.0]
        for name, (count, total) in OPERATORS.items()
    ]
    write_csv(os.path.join(output, "op_statistic.csv"), OP_STATISTIC_HEADER, stats)


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
