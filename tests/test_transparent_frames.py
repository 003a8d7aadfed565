"""No frame of the tool's in what the job sees of the callables it counts: a traceback from
inside ``Optimizer.load_state_dict`` reads as it does bare (the load is noted by torch's own load
hook, registered as torch sets each optimizer up), and the loaded state's step count still
numbers the resumed steps; a declared step function and a GradScaler's step (torch's, and a job's
own subclass) are counted inside their own code (inplace.py), and the wrapper of an optimizer's
step that takes the place of torch's is dressed as torch's (stepframe.py), so that a warning they
raise to their caller, a traceback through them and the stack they print read as bare, and a warning
shown once per location is shown once (the tool's windows no longer reset the warnings' marks)."""

from __future__ import annotations

import pytest
from compare import profiled_against_bare, without_launcher_lines
from jobs import script
from outputs import status_records


def test_a_traceback_from_load_state_dict_is_the_bare_one_and_the_resume_is_numbered(tmp_path):
    out = str(tmp_path / "out")
    runs = profiled_against_bare(
        [script("load_state_frames.py")],
        ["--skip-first", "1", "--active", "1"],
        out=out,
        compare=("stdout", ("stderr", without_launcher_lines)),
    )
    assert "in load_state_dict" in runs.bare.stderr and "npuprof_launch" not in runs.profiled.stderr
    (record,) = status_records(out)
    assert (record["step_offset"], record["numbered_by"]) == (5, "optimizer_state")


@pytest.mark.parametrize("clock", [[], ["--target", "__main__:train_step"]], ids=["scaler_steps", "target"])
def test_counted_calls_warn_fail_and_look_at_their_stack_as_bare(tmp_path, clock):
    out = str(tmp_path / "out")
    runs = profiled_against_bare(
        [script("counted_frames.py")],
        [*clock, "--skip-first", "1", "--active", "1"],
        out=out,
        compare=("stdout", ("stderr", without_launcher_lines)),
    )
    seen = runs.bare.stdout + runs.bare.stderr
    assert seen.count("warning at") == 3 and "step 3 fails" in seen and "in step" in runs.bare.stderr, seen
    assert "the optimizer fails" in seen and "optim/optimizer.py" in seen, "through torch's wrapper of the step"
    assert "npuprof_launch" not in runs.profiled.stdout + runs.profiled.stderr
    (record,) = status_records(out)
    # six calls of each: train_step's, and the scaler steps' (five of the job's scaler, one of
    # torch's that raised); each counts, a failed one too
    assert (record["steps"], record["clock"]) == (6, "target __main__:train_step" if clock else "optimizer.step")


def _without_kineto_lines(stderr: str) -> list[str]:
    """The job's stderr without npuprof's lines and kineto's own log lines (timestamped, C++)."""
    return [line for line in without_launcher_lines(stderr) if not line.startswith(("USDT:", "[W", "[I"))]


def test_the_jobs_own_profiler_starts_fails_and_warns_as_bare(tmp_path):
    """The watch on the job's own profiler (coexist.py) runs inside torch's ``_prepare_trace``,
    ``_start_trace`` and ``__exit__``: a traceback through them, and a warning to their caller,
    read as bare."""
    runs = profiled_against_bare(
        [script("profiler_frames.py")],
        out=str(tmp_path / "out"),
        compare=("stdout", ("stderr", _without_kineto_lines)),
    )
    seen = runs.bare.stdout + runs.bare.stderr
    assert "in _start_trace" in seen and "in __exit__" in seen and "start's caller" in seen, seen
    assert "npuprof_launch" not in runs.profiled.stdout + runs.profiled.stderr


def test_a_process_group_that_fails_to_be_made_raises_the_bare_traceback(tmp_path):
    """The hook notes each process group as torch registers it (groupthreads.py), not by wrapping
    the function that makes it: a group that fails to be made (here NCCL, not built into torch's CPU
    wheel) raises through torch's frames alone."""
    code = (
        "import torch.distributed as dist\n"
        "dist.init_process_group('nccl', init_method='tcp://127.0.0.1:0', rank=0, world_size=1)\n"
    )
    runs = profiled_against_bare(
        ["-c", code], out=str(tmp_path / "out"), compare=(("stderr", without_launcher_lines),), ok=False
    )
    assert "_new_process_group_helper" in runs.bare.stderr and "npuprof_launch" not in runs.profiled.stderr
