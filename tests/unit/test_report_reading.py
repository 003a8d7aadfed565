"""The report reads a trace its aftercare compresses or moves while it reads (in-process, no torch)."""

from __future__ import annotations

import gzip
import json
import os
import time

from npuprof_launch.common import deliverables, windowresults
from npuprof_launch.launcher import windowfiles

TRACE = {
    "traceEvents": [
        {"ph": "X", "name": "ProfilerStep#3", "ts": 0, "dur": 100, "pid": 1, "tid": 1},
        {"ph": "X", "name": "ProfilerStep#4", "ts": 100, "dur": 120, "pid": 1, "tid": 1},
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 10, "dur": 50, "pid": 1, "tid": 1},
    ]
}


def write_trace(folder) -> str:
    path = os.path.join(folder, "worker.1.pt.trace.json")
    with open(path, "w") as handle:
        json.dump(TRACE, handle)
    return path


def test_a_trace_compressed_between_finding_it_and_reading_it_is_read_compressed(tmp_path, monkeypatch):
    path = write_trace(tmp_path)
    rel = os.path.basename(path) + ".gz"
    assert windowfiles.locate(str(tmp_path), rel) == (path, None)  # the .gz is not there yet: the plain one
    read = deliverables.summarize_torch_trace
    calls = []

    def compressed_first(where, threads=None):
        if not calls:  # the aftercare's gzip lands now, between the report's look and its read
            with open(where, "rb") as source, gzip.open(where + ".gz", "wb") as sink:
                sink.write(source.read())
            os.unlink(where)
        calls.append(where)
        return read(where, threads)

    monkeypatch.setattr(deliverables, "summarize_torch_trace", compressed_first)
    where, parsed = windowfiles.summarize_where_it_is(str(tmp_path), rel, None, path)
    assert calls == [path, path + ".gz"]
    assert where == path + ".gz" and parsed.step_names == ["ProfilerStep#3", "ProfilerStep#4"]
    assert not parsed.problems


def test_a_trace_gone_from_everywhere_is_missing_not_an_error(tmp_path):
    path = write_trace(tmp_path)
    os.unlink(path)
    assert windowfiles.summarize_where_it_is(str(tmp_path), os.path.basename(path), None, path)[1] is None


def test_a_killed_process_s_aftercare_is_waited_for_while_it_runs(tmp_path):
    """The record of a SIGKILLed process never ends; its aftercare, an orphan now, still writes."""
    result = tmp_path / "r.window1.json"
    record = {"ended": None, "host": windowresults.names.host(), "pid": 2**22 + 7}  # beyond pid_max: gone
    window = {"aftercare": result.name, "aftercare_pid": os.getpid()}
    record["windows"] = [window]
    assert windowresults.unfinished(str(tmp_path), [record]) == [result.name]
    result.write_text(json.dumps({"status": "done"}))
    assert windowresults.unfinished(str(tmp_path), [record]) == []
    result.unlink()
    window["aftercare_pid"] = 2**22 + 9
    assert windowresults.unfinished(str(tmp_path), [record]) == []  # neither can write it any more


def test_a_zombie_is_not_alive(tmp_path):
    child = os.fork()
    if child == 0:
        os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(f"/proc/{child}/stat") as handle:
                if handle.read().rpartition(")")[2].split()[0] == "Z":
                    break
            time.sleep(0.01)
        assert not windowresults._pid_alive(child)
        assert windowresults._pid_alive(os.getpid())
    finally:
        os.waitpid(child, 0)


def test_the_time_in_collectives_is_their_union_inside_the_recorded_steps(tmp_path):
    """Hugging Face's Trainer under DDP (find_unused_parameters): each step two gloo all-reduces ran at
    once on gloo's two worker threads, summed per thread they made 190 % of the window; and a
    collective before the first step (the profiler's start) is not the window's."""
    gloo = [
        {"ph": "X", "name": "gloo:all_reduce", "ts": 20, "dur": 60, "pid": 1, "tid": 7},  # in step 3
        {"ph": "X", "name": "gloo:all_reduce", "ts": 30, "dur": 60, "pid": 1, "tid": 8},  # beside it
        {"ph": "X", "name": "nccl:all_reduce", "ts": 200, "dur": 40, "pid": 1, "tid": 1},  # 20 in step 4
        {"ph": "X", "name": "gloo:broadcast", "ts": -50, "dur": 40, "pid": 1, "tid": 7},  # before the steps
    ]
    path = tmp_path / "worker.1.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": TRACE["traceEvents"] + gloo}))
    summary = deliverables.summarize_torch_trace(str(path))
    assert summary.step_durations_us == [100.0, 120.0]
    assert summary.collective_us == 70.0 + 20.0, "20-90 once, and 200-220 (the step ends at 220)"
