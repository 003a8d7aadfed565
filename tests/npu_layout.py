"""Small torch_npu session directories, built by hand, for tests that break them one way at a time.

A session as torch_npu leaves it: ``{worker}_{pid}_{timestamp}_ascend_pt/`` with
``profiler_info_{rank}.json`` (written at stop), raw ``FRAMEWORK/`` and ``PROF_*/`` data, and after
parsing ``ASCEND_PROFILER_OUTPUT/``. The files in ASCEND_PROFILER_OUTPUT/ are written by the
torch_npu stand-in's own writer (tests/standin/.../analysis/_standin_output.py, loaded here by
path: importing the stand-in package would import torch), so the layout facts live in one place:
names, CSV headers, db tables and trace events as torch_npu writes them, with small synthetic data
(one recorded step, ``ProfilerStep#2``, and ``OPERATORS``' kernels).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

_WRITER = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "standin", "torch_npu", "profiler", "analysis", "_standin_output.py"
)


def _load_writer():
    spec = importlib.util.spec_from_file_location("npu_standin_output", _WRITER)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


output_files = _load_writer()
KERNEL_HEADER = output_files.KERNEL_HEADER
OP_STATISTIC_HEADER = output_files.OP_STATISTIC_HEADER
#: OP Type -> (count, total us): what op_statistic.csv says, and the report's top operators.
OPERATORS = output_files.OPERATORS
make_db = output_files.make_db
write_csv = output_files.write_csv
#: The one step each hand-built session recorded: ProfilerStep#2, 2 ms from 2026-01-01 12:00 UTC.
STEP = output_files.Step(2, 1767268800000000000, 1767268800002000000)


def session(
    root: str,
    worker: str = "node1_rank0_pid4242",
    *,
    export: tuple[str, ...] = ("text",),
    stopped: bool = True,
    parsed: bool = True,
    activities: tuple[str, ...] = ("CPU", "NPU"),
    rank: int | None = 0,
    level: str = "Level1",
) -> str:
    """A complete session directory (or one that was never stopped / never parsed); returns its path.
    Its text CSVs are those torch_npu's parse writes at ``level`` for its ``activities``: at Level0 no
    op_statistic.csv (IntegrateParser copies CANN's at Level1 and Level2 only), at Level_none and
    for the CPU alone neither CSV."""
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
                "experimental_config": {"_profiler_level": level, "_export_type": list(export)},
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
            _text(output, level if "NPU" in activities else "cpu only")
        if "db" in export:
            make_db(os.path.join(output, output_files.db_name(-1 if rank is None else rank)))
    return path


def write_json(path: str, data) -> None:
    with open(path, "w") as handle:
        json.dump(data, handle)


def _text(output: str, level: str) -> None:
    found = output_files.kernels([STEP])
    output_files.write_trace_view(output, [STEP], found, pid=4242, tid=1, device=0)
    if level in ("Level0", "Level1", "Level2"):
        output_files.write_kernel_details(output, found, 0)
    if level in ("Level1", "Level2"):
        output_files.write_op_statistic(output, found, 0)
