"""Training written with Hugging Face Trainer, Lightning and Accelerate, run unmodified.

Each job is a tiny CPU script under tests/scripts/, written as the framework's docs show and with
no npuprof code; it prints its loss, the framework's own count of optimizer steps and an exact
weight checksum. Run as ``npuprof-run --skip-first 2 --active 2 --output-dir OUT -- python
JOB``, it must exit 0 with those results unchanged to the last bit, add no warning, write nothing
outside OUT, and OUT must hold exactly one trace with exactly 2 ProfilerStep# events and a status
record counting one step per optimizer step. A framework that is not installed is skipped
(``pip install torch==2.13.0 -e '.[frameworks]'`` installs them).

The last tests are about a job that runs a torch profiler of its own (Lightning's
``profiler="pytorch"``, or by hand): two torch profilers at once crash the process, so npuprof's
must give way (npuprof_launch/inprocess/coexist.py).
"""

from __future__ import annotations

import importlib
import os
import sys

import pytest
from answers import check_json, texts
from compare import profiled_against_bare
from jobs import assert_ok, clean_env, npuprof, python, script
from outputs import status_records, step_counts, step_spans, torch_traces

STEPS = 12
SCHEDULE = ["--skip-first", "2", "--active", "2"]
RESULT_KEYS = ("loss", "optimizer_steps", "checksum")

#: (test id, module the job needs, script and its arguments)
JOBS = [
    ("hf_trainer", "transformers", ["hf_trainer_job.py"]),
    ("hf_trainer_compile", "transformers", ["hf_trainer_job.py", "--compile"]),
    ("lightning", "lightning", ["lightning_job.py"]),
    ("accelerate", "accelerate", ["accelerate_job.py"]),
]


def needs(module: str) -> None:
    """Skip, saying why, when the framework is not importable (not installed, or broken)."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        pytest.skip(f"{module} is not importable ({exc}); pip install torch==2.13.0 -e '.[frameworks]'")


def job_env(tmp_path) -> dict[str, str]:
    """No network, and the Hugging Face cache in the test's own directory."""
    return clean_env(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf_home"))


def results(stdout: str) -> dict[str, str]:
    """The job's results: the lines naming its loss, optimizer steps and checksum (others carry timings)."""
    found = {}
    for line in stdout.splitlines():
        key, _, value = line.partition(" ")
        if key in RESULT_KEYS:
            found[key] = value
    return found


def warnings_in(stderr: str) -> list[str]:
    return [
        line
        for line in stderr.splitlines()
        if not line.startswith("npuprof:") and any(word in line.lower() for word in ("warn", "deprecat"))
    ]


def run_bare_and_profiled(tmp_path, job: list[str], *npuprof_args: str, compare=()):
    """The job without and with the launcher (``profiled_against_bare``, comparing ``compare``), each
    from an empty working directory it must leave empty."""
    cwds = {name: tmp_path / f"cwd_{name}" for name in ("bare", "profiled")}
    for cwd in cwds.values():
        cwd.mkdir()
    runs = profiled_against_bare(
        ["-W", "default", script(job[0]), *job[1:]],
        npuprof_args,
        out=str(tmp_path / "out"),
        env=job_env(tmp_path),
        cwd=str(cwds["profiled"]),
        bare_cwd=str(cwds["bare"]),
        compare=compare,
    )
    for name, cwd in cwds.items():
        assert os.listdir(cwd) == [], f"{name} run left files in its working directory"
    return runs


@pytest.mark.parametrize(("module", "job"), [pytest.param(m, j, id=i) for i, m, j in JOBS])
def test_framework_job_profiles_unchanged(tmp_path, module, job):
    needs(module)
    runs = run_bare_and_profiled(tmp_path, job, *SCHEDULE)
    out, expected = runs.out, results(runs.bare.stdout)
    assert set(expected) == set(RESULT_KEYS), runs.bare.stdout
    assert expected["optimizer_steps"] == str(STEPS)
    # Loss, steps and weights bit-identical; no warning added.
    runs.assert_same(("stdout", results), ("stderr", warnings_in))
    assert step_counts(out) == [2]
    (record,) = status_records(out)
    assert record["steps"] == STEPS, f"one step per optimizer step, got {record['steps']}"
    assert record["window_steps"] == [3, 4]
    assert record["windows_completed"] == 1
    assert record["errors"] == []
    code, report = check_json(out)
    assert code == 0 and report["passed"], report


#: (test id, module, script, its arguments to save after step 4, and to resume to step 10; the record's numbered_by)
RESUMED = [
    (
        "hf_trainer",
        "transformers",
        "hf_trainer_job.py",
        ["--checkpoints", "{ckpt}"],
        ["--checkpoints", "{ckpt}", "--resume"],
        "hf_trainer",
    ),
    (
        "lightning",
        "lightning",
        "lightning_job.py",
        ["--save", "{ckpt}/last.ckpt"],
        ["--resume", "{ckpt}/last.ckpt"],
        "lightning",
    ),
]


@pytest.mark.parametrize(
    ("module", "job", "save", "resume", "source"), [pytest.param(*r[1:], id=r[0]) for r in RESUMED]
)
def test_a_resumed_framework_job_is_numbered_by_its_own_counter(tmp_path, module, job, save, resume, source):
    """A Trainer resumed from its checkpoint after step 4 makes steps 5-10; the window after
    --skip-first 2 holds its 3rd and 4th, the job's steps 7 and 8 by the framework's own counter
    (Hugging Face's state.global_step, Lightning's global_step), and is labelled so."""
    needs(module)
    env, checkpoints, out = job_env(tmp_path), tmp_path / "checkpoints", str(tmp_path / "out")
    checkpoints.mkdir()
    save, resume = ([arg.format(ckpt=checkpoints) for arg in args] for args in (save, resume))
    assert_ok(python([script(job), *save, "--steps", "4"], env=env))
    command = [sys.executable, script(job), *resume, "--steps", "10"]
    resumed = npuprof([*SCHEDULE, "--output-dir", out, "--", *command], env=env)
    assert_ok(resumed)
    assert "optimizer_steps 10" in resumed.stdout
    (trace,) = torch_traces(out)
    assert step_spans(trace) == ["ProfilerStep#7", "iteration#7", "ProfilerStep#8", "iteration#8"]
    (record,) = status_records(out)
    assert (record["steps"], record["step_offset"], record["numbered_by"]) == (6, 4, source)
    assert record["window_steps"] == [7, 8]
    code, report = check_json(out)
    assert code == 0 and report["passed"], report


def test_lightning_own_pytorch_profiler_keeps_the_job_alive(tmp_path):
    """Lightning's Trainer(profiler="pytorch") runs a torch profiler: ours gives way instead of crashing the job."""
    needs("lightning")
    job = ["lightning_job.py", "--profiler", "pytorch"]
    runs = run_bare_and_profiled(tmp_path, job, *SCHEDULE, compare=[("stdout", results)])
    out, profiled = runs.out, runs.profiled
    assert "optimizer_steps 12" in runs.bare.stdout
    (record,) = status_records(out)
    assert record["steps"] == STEPS
    # Lightning 2.6's profiler is warming up or recording at step 3, so ours declines; were it idle
    # through steps 3-4, ours would record them undisturbed.
    if record["declined"] is None:
        assert step_counts(out) == [2] and record["windows_completed"] == 1, record
    else:
        assert "torch profiler of its own" in record["declined"]
        assert "torch profiler of its own" in profiled.stderr


#: The job's own torch.profiler (tests/scripts/own_profiler.py) against ours, which records steps 3-4.
OWN_PROFILER = [
    pytest.param(["--start", "1", "--stop", "10"], "declined", id="recording-before-ours"),
    pytest.param(["--start", "1", "--stop", "10", "--warmup", "5"], "declined", id="warming-up-before-ours"),
    pytest.param(["--start", "4", "--stop", "6"], "cut-short", id="starting-during-ours"),
    pytest.param(["--start", "6", "--stop", "8"], "profiled", id="after-ours"),
]


@pytest.mark.parametrize(("args", "outcome"), OWN_PROFILER)
def test_job_own_torch_profiler_never_overlaps_ours(tmp_path, args, outcome):
    runs = run_bare_and_profiled(tmp_path, ["own_profiler.py", *args], *SCHEDULE)
    assert "own profiler exported True" in runs.bare.stdout
    runs.assert_same("stdout")  # the job's results and its own profile unchanged
    out = runs.out
    (record,) = status_records(out)
    assert record["steps"] == 10
    if outcome == "profiled":
        assert record["declined"] is None
        assert step_counts(out) == [2] and record["windows_completed"] == 1
        return
    assert "torch profiler of its own" in (record["declined"] or "")
    assert record["windows_completed"] == 0
    assert record["partial_traces"] == (1 if outcome == "cut-short" else 0)
    assert len(step_counts(out)) == record["partial_traces"]


def test_a_keras_job_is_told_the_target_that_runs_its_steps_and_that_target_works(tmp_path, monkeypatch):
    """Keras 3 on torch has an optimizer, not a torch.optim one: the reason names keras and the
    --target of one of its steps, and that target, given as printed, profiles the steps."""
    monkeypatch.setenv("KERAS_BACKEND", "torch")  # else keras imports tensorflow
    needs("keras")
    env = clean_env(KERAS_BACKEND="torch")
    out = str(tmp_path / "out")
    first = npuprof(["--output-dir", out, "--", sys.executable, script("keras_job.py")], env=env)
    code, report = check_json(out)
    assert code == 1 and not report["passed"]
    (reason,) = texts(report["problems"])
    target = "keras.src.backend.torch.trainer:TorchTrainer.train_step"
    assert f"it imported keras, whose steps are not torch.optim's: pass --target {target}" in reason, reason
    assert target in first.stderr
    again = str(tmp_path / "again")
    result = npuprof(
        ["--target", target, *SCHEDULE, "--output-dir", again, "--", sys.executable, script("keras_job.py")], env=env
    )
    assert_ok(result)
    assert step_counts(again) == [2]
    (record,) = status_records(again)
    assert record["steps"] == 8, "64 samples in batches of 8"
