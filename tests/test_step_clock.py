"""One iteration is one step in the patterns real jobs use, and the boundaries fall where
the job's iterations end: no crash inside backward, no range straddling a ProfilerStep#, no
Kineto warning on the job's stderr, the job's step numbers on the timeline."""

from __future__ import annotations

import pytest
from answers import check_json
from compare import Kept, profiled_against_bare, warning_lines, without_launcher_lines
from jobs import script
from outputs import status_records, torch_traces, windows

from npuprof_launch.common import deliverables

PATTERNS = script("patterns.py")


def timeline(path: str) -> list[dict]:
    """Each ProfilerStep# span of a trace with the labels inside it, and the ranges that straddle it."""
    events = [e for e in deliverables.load_trace_events(path) if e.get("ph") == "X"]
    steps = [e for e in events if e["name"].startswith("ProfilerStep#") and not e.get("cat", "").startswith("gpu")]
    found = []
    for step in sorted(steps, key=lambda e: e["ts"]):
        start, end = step["ts"], step["ts"] + step["dur"]
        same_thread = [e for e in events if e is not step and (e["pid"], e["tid"]) == (step["pid"], step["tid"])]
        inside = [e["name"] for e in same_thread if start <= e["ts"] and e["ts"] + e["dur"] <= end]
        straddling = [
            e["name"]
            for e in same_thread
            if (e["ts"] < start < e["ts"] + e["dur"] < end) or (start < e["ts"] < end < e["ts"] + e["dur"])
        ]
        found.append({"labels": sorted(n for n in inside if "iteration" in n), "straddling": straddling})
    return found


def run_pattern(out: str, pattern: str, *args: str, schedule=("--skip-first", "4", "--active", "2")):
    """The pattern's job, profiled: its results bit-identical, nothing added to its stderr."""
    job = [PATTERNS, "--pattern", pattern, "--label", *args]
    return profiled_against_bare(
        job, schedule, out=out, compare=("stdout", ("stderr", without_launcher_lines))
    ).profiled


@pytest.mark.parametrize(
    ("pattern", "args"),
    [
        ("plain", []),
        ("backward", []),  # one optimizer per parameter, stepped inside loss.backward()
        ("phases", ["--change", "3"]),  # the probe's optimizer stays referenced
        ("subclass", ["--change", "3"]),  # then an SGD subclass calling super().step(), while the clock is lean
        ("holder", ["--change", "3"]),  # then an Optimizer that holds the warm-up's SGD and steps it
        ("epochs", ["--change", "3"]),  # a new optimizer each epoch
        ("every4", []),  # a discriminator every 4th iteration
        ("lbfgs", []),  # the closure runs forward and backward inside the step
        ("scaler", ["--skip-at", "1,2,6"]),  # GradScaler skips those iterations' optimizer step
        ("megatron", ["--skip-at", "3,6"]),  # a non-Optimizer wrapper skips them
    ],
)
def test_each_iteration_is_one_step_and_the_window_holds_the_asked_for_ones(out, pattern, args):
    run_pattern(out, pattern, *args)
    (record,) = status_records(out)
    assert record["steps"] == 10, f"{pattern}: 10 iterations, counted {record['steps']}"
    assert windows(record) == [{"first_step": 5, "last_step": 6, "complete": True, "traces": record["traces"]}]
    (trace,) = torch_traces(out)
    steps = timeline(trace)
    assert [s["labels"] for s in steps] == [
        ["iteration#5", "job_iteration_5"],
        ["iteration#6", "job_iteration_6"],
    ], f"{pattern}: each recorded step is the job's iteration of that number"
    assert all(not s["straddling"] for s in steps), steps
    assert check_json(out)[0] == 0


def test_an_optimizer_stepped_inside_backward_no_longer_crashes_the_job(out):
    """It died of SIGSEGV: the profiler was started from a post hook running inside backward."""
    result = run_pattern(out, "backward", schedule=("--skip-first", "1", "--active", "3"))
    assert "Segmentation" not in result.stderr
    (record,) = status_records(out)
    assert record["windows"][0]["first_step"] == 2 and record["windows"][0]["complete"]


def test_skips_before_a_wrappers_first_real_step_are_the_documented_limit(out):
    """A wrapper that is no Optimizer is found at the first step that reaches an optimizer: the
    iterations it skipped before that are not seen (docs/internals.md, 'The step clock')."""
    run_pattern(out, "megatron", "--skip-at", "1,2", schedule=("--skip-first", "6", "--active", "1"))
    (record,) = status_records(out)
    assert record["steps"] == 8


def test_a_window_over_several_repeats_labels_every_step(out):
    run_pattern(out, "plain", schedule=("--skip-first", "1", "--wait", "1", "--active", "2", "--repeat", "2"))
    labels = [s["labels"] for trace in torch_traces(out) for s in timeline(trace)]
    assert labels == [
        ["iteration#3", "job_iteration_3"],
        ["iteration#4", "job_iteration_4"],
        ["iteration#6", "job_iteration_6"],
        ["iteration#7", "job_iteration_7"],
    ]


SCALER_WARNS = """
import torch
class Scaler(torch.amp.GradScaler):  # a job's own subclass, defined after the hook armed the clock
    def step(self, optimizer, *args, **kwargs):
        return super().step(optimizer, *args, **kwargs)
scaler = Scaler("cuda", enabled=True)  # on a CPU: torch warns that CUDA is not available
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    scaler.scale(model(torch.randn(2, 4)).sum()).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
print("done")
"""


def test_a_warning_torch_raises_while_a_scaler_is_built_names_torchs_file_as_bare(out):
    """The scalers' steps are counted without a frame of ours in their construction: nanoGPT's
    scaler on a CPU warned from npuprof_launch/inprocess/optimizerclock.py, bare from torch's."""
    # Each warning of the bare job's is on the profiled one's stderr as it was.
    runs = profiled_against_bare(
        ["-c", SCALER_WARNS], ["--skip-first", "1", "--active", "2"], out=out, compare=[Kept("stderr", warning_lines)]
    )
    assert warning_lines(runs.bare.stderr), runs.bare.stderr
    assert "npuprof_launch" not in "".join(warning_lines(runs.profiled.stderr))
    (record,) = status_records(out)
    assert record["steps"] == 5, "each scaler.step of the job's own subclass counts one step"
