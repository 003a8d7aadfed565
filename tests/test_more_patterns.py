"""Further job patterns (tests/scripts/more_patterns.py; the rest were exact when tried,
see INCOMING-patterns.md): activation checkpointing, whose backward runs each checkpointed
block's forward again, must neither move a step boundary nor let the profiler act inside that
backward (safepoints.py); the job's output, stderr included, is unchanged."""

from __future__ import annotations

from compare import profiled_against_bare
from jobs import script
from outputs import status_records, step_spans, torch_traces

MORE = script("more_patterns.py")


def job_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith(("npuprof", "  "))]


def test_activation_checkpointing_is_counted_exactly_and_unchanged(out):
    runs = profiled_against_bare(
        [MORE, "--mode", "ckpt"],
        ["--skip-first", "1", "--active", "2"],
        out=out,
        compare=("stdout", ("stderr", job_lines)),
    )
    assert job_lines(runs.bare.stderr) == [f"iteration {i}" for i in range(1, 7)]
    (trace,) = torch_traces(out)
    assert step_spans(trace) == ["ProfilerStep#2", "iteration#2", "ProfilerStep#3", "iteration#3"]
    (record,) = status_records(out)
    assert record["steps"] == 6 and record["windows_completed"] == 1
