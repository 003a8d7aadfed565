"""Further job patterns (tests/scripts/more_patterns.py; the rest were exact when tried,
see INCOMING-patterns.md): activation checkpointing, whose backward runs each checkpointed
block's forward again, must neither move a step boundary nor let the profiler act inside that
backward (safepoints.py); the job's output, stderr included, is unchanged."""

from __future__ import annotations

import sys

from jobs import assert_ok, bare_run, npuprof, script
from outputs import status_records, step_spans, torch_traces

MORE = script("more_patterns.py")


def job_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith(("npuprof", "  "))]


def test_activation_checkpointing_is_counted_exactly_and_unchanged(out):
    bare = bare_run([MORE, "--mode", "ckpt"])
    assert_ok(bare)
    result = npuprof(
        ["--skip-first", "1", "--active", "2", "--output-dir", out, "--", sys.executable, MORE, "--mode", "ckpt"]
    )
    assert_ok(result)
    assert result.stdout == bare.stdout
    assert job_lines(result.stderr) == job_lines(bare.stderr) == [f"iteration {i}" for i in range(1, 7)]
    (trace,) = torch_traces(out)
    assert step_spans(trace) == ["ProfilerStep#2", "iteration#2", "ProfilerStep#3", "iteration#3"]
    (record,) = status_records(out)
    assert record["steps"] == 6 and record["windows_completed"] == 1
