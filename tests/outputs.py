"""Reading what a run wrote under its output directory: the torch traces (and writing one as the tool
would), their steps, and the status records with their windows."""

from __future__ import annotations

import glob
import json
import os

from npuprof_launch.common import deliverables, names


def torch_traces(out: str) -> list[str]:
    """Every Chrome trace the torch backend wrote under ``out``, at any depth, plain or compressed."""
    found = []
    for suffix in names.TORCH_TRACE_SUFFIXES:
        found += glob.glob(os.path.join(out, "**", "*" + suffix), recursive=True)
    return sorted(found)


def windows(record: dict) -> list[dict]:
    """A record's (or a report row's) windows, the documented fields only (docs/answer.md's report JSON)."""
    keys = ("first_step", "last_step", "complete", "traces")
    return [{key: window.get(key) for key in keys} for window in record["windows"]]


def read_trace(path: str) -> dict:
    with deliverables.open_trace(path) as handle:
        return json.load(handle)


def write_trace(path: str, data) -> None:
    """Write a trace as the tool would have left it: gzip when its name says so."""
    import gzip

    text = data if isinstance(data, str) else json.dumps(data)
    with gzip.open(path, "wt") if path.endswith(".gz") else open(path, "w") as handle:
        handle.write(text)


def step_counts(out: str) -> list[int]:
    return [deliverables.count_profiler_steps(path) for path in torch_traces(out)]


def step_spans(path: str, prefixes: tuple[str, ...] = ("ProfilerStep#", "iteration#")) -> list[str]:
    """The names of a torch trace's step spans on the CPU's timeline, in order (``ProfilerStep#3``,
    ``iteration#3``, ...): what msprof-analyze, HTA and Perfetto take for its steps."""
    events = read_trace(path)["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith(prefixes)]
    return [e["name"] for e in sorted(spans, key=lambda e: (e["ts"], e["name"])) if "gpu" not in e.get("cat", "")]


def status_records(out: str) -> list[dict]:
    records = []
    for path in sorted(glob.glob(os.path.join(out, "**", names.STATUS_DIR, "*.json"), recursive=True)):
        with open(path) as handle:
            records.append(json.load(handle))
    return records
