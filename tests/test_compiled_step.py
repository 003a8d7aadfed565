"""The step clock under torch.compile of the whole training step, optimizer.step included.

The clock counts in the wrapper it puts in the place of torch's own ``step`` wrapper, not in
global hooks (those sit in the dict a compiled step traces), and that wrapper is, for dynamo,
torch's: traced into a graph it is torch's own, and as a frame it is skipped but calls torch's,
whose frame dynamo compiles as it would bare (stepwrapper.py). The job's stderr had
lost torch's warning "Profiler record function ... will be ignored", because dynamo never traced
torch's wrapper under the tool: the job compiled differently (another graph break, 182 frames for
13). Here one bare run and one profiled run of the same job are compared: counted exactly, the
same losses bit for bit, the same graphs, frames and graph breaks, and the same stderr.
"""

from __future__ import annotations

import re

import pytest
from compare import profiled_against_bare
from jobs import once, script
from outputs import status_records, step_counts, step_spans, torch_traces

COMPILED = script("compiled_step.py")

pytestmark = pytest.mark.xdist_group("compiled_step")

#: glog's prefix on torch's own log lines (level, date, time, thread id, file:line): it differs from run to run.
GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]]+\] ")


def job_stderr(text: str) -> list[str]:
    """The job's own stderr lines, glog's prefix dropped: without our ``npuprof:`` lines and the
    indented lines of our summary that follow one."""
    lines, ours = [], False
    for line in text.splitlines():
        if line.startswith("npuprof"):
            ours = True
            continue
        if ours and line.startswith(" "):
            continue
        ours = False
        lines.append(GLOG.sub("", line))
    return lines


@pytest.fixture
def runs(tmp_path_factory):
    def make():
        out = str(tmp_path_factory.mktemp("compiled") / "out")
        return profiled_against_bare([COMPILED], ["--skip-first", "2", "--active", "2"], out=out, compare=())

    return once("compiled_step", make)


def test_compiled_optimizer_step_is_counted_exactly(runs):
    out = runs.out
    assert step_counts(out) == [2]
    (trace,) = torch_traces(out)
    assert step_spans(trace) == ["ProfilerStep#3", "iteration#3", "ProfilerStep#4", "iteration#4"]
    [record] = status_records(out)
    assert record["steps"] == 12 and record["windows_completed"] == 1


def test_the_job_compiles_and_trains_as_it_does_bare(runs):
    """stdout holds the losses, the graphs, the frames and each graph break's reason and count."""
    assert "graph break x2: Call to `torch._dynamo.graph_break()`" in runs.bare.stdout  # torch's optimizer's own
    runs.assert_same("stdout")
    assert "recompil" not in runs.profiled.stderr.lower()


def test_a_compiled_step_under_a_grad_scaler_compiles_as_bare_and_counts_each_step(tmp_path):
    """torch.amp is on dynamo's skip list: GradScaler.step runs eagerly, and the clock's lines in
    it (inplace.py) run outside dynamo, so that no frame of ours is compiled (before: 16 frames
    for 15, and a graph break told as a call of our skipped wrapper)."""
    out = str(tmp_path / "out")
    runs = profiled_against_bare([COMPILED, "--scaler"], ["--skip-first", "2", "--active", "2"], out=out)
    assert "GradScaler.step" in runs.bare.stdout  # the break dynamo makes at it, bare, in the compared stdout
    [record] = status_records(out)
    assert record["steps"] == 12 and record["windows_completed"] == 1


def test_the_jobs_stderr_is_unchanged_warnings_included(runs):
    warning = "Profiler record function <class 'torch.autograd.profiler.record_function'> will be ignored"
    assert any(warning in line for line in job_stderr(runs.bare.stderr)), runs.bare.stderr
    runs.assert_same(("stderr", job_stderr))
