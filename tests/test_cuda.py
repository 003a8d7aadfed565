"""The torch backend on a CUDA GPU: skipped where torch sees none (CI), run on a GPU machine.

The same command that profiles a CPU job must give a trace with the GPU's kernels in it, leave
the job's results unchanged to the last bit, and count the steps of a training step compiled
whole with inductor, whose graph meets the step clock's hooks.
"""

from __future__ import annotations

import pytest
from answers import check_json
from compare import profiled_against_bare
from jobs import script
from outputs import status_records, step_counts, torch_traces

from npuprof_launch.common import deliverables

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

CUDA_TRAIN = script("cuda_train.py")


def kernel_events(path: str) -> list[dict]:
    events = deliverables.load_trace_events(path)
    return [event for event in events if event.get("cat") == "kernel"]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled-inductor"])
def test_cuda_job_is_profiled_with_its_kernels_and_unchanged(out, compiled):
    extra = ["--compile"] if compiled else []
    profiled_against_bare([CUDA_TRAIN, *extra], ["--skip-first", "3", "--active", "2"], out=out)
    assert step_counts(out) == [2]
    [trace] = torch_traces(out)
    assert kernel_events(trace), "the trace holds no CUDA kernel"
    [record] = status_records(out)
    assert record["steps"] == 12 and record["window_steps"] == [4, 5]
    code, report = check_json(out)
    assert code == 0 and report["passed"], report
