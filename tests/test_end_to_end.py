"""The whole path, real launcher, real torch.profiler, real files."""

from __future__ import annotations

import os
import sys

import pytest
from answers import check_json
from compare import profiled_against_bare, warning_lines
from jobs import assert_ok, clean_env, npuprof, python, script
from outputs import status_records, step_counts, step_spans, torch_traces

TRAIN = script("train_loop.py")


def test_two_active_steps_one_trace_results_unchanged(out):
    # The job's stdout (loss and weight checksum) must be bit-identical.
    result = profiled_against_bare([TRAIN, "--steps", "12"], ["--active", "2", "--skip-first", "2"], out=out).profiled
    assert step_counts(out) == [2]
    (trace,) = torch_traces(out)
    # ProfilerStep# holds the job's step numbers, as the iteration# labels do.
    assert step_spans(trace) == ["ProfilerStep#3", "iteration#3", "ProfilerStep#4", "iteration#4"]
    (record,) = status_records(out)
    assert record["steps"] == 12
    assert record["window_steps"] == [3, 4]
    assert record["windows"][0]["profiler_steps_from"] == 3
    assert record["windows_completed"] == 1
    assert "1 process profiled" in result.stderr


@pytest.mark.parametrize(
    ("mode", "extra"),
    [("gan", []), ("nested", []), ("accum", ["--accum", "3"])],
)
def test_iterations_are_counted_not_optimizer_calls(out, mode, extra):
    result = npuprof(
        [
            "--skip-first",
            "3",
            "--active",
            "4",
            "--output-dir",
            out,
            "--",
            sys.executable,
            TRAIN,
            "--mode",
            mode,
            "--steps",
            "10",
            *extra,
        ]
    )
    assert_ok(result)
    (record,) = status_records(out)
    assert record["steps"] == 10, f"{mode}: one step per iteration (optimizer step), got {record['steps']}"
    assert step_counts(out) == [4]


@pytest.mark.parametrize("mode", ["late", "swap"])
def test_a_new_optimizer_after_the_clock_turned_lean_is_counted_right(out, mode):
    """After two iterations of one optimizer the clock keeps one lean hook; a second optimizer joining
    at iteration 4 (one step per iteration still) or a new optimizer replacing the first must not
    change the count, and the window after the change still opens at its step."""
    args = ["--skip-first", "6", "--active", "2", "--output-dir", out, "--", sys.executable, TRAIN]
    result = npuprof([*args, "--mode", mode, "--change", "4", "--steps", "10"])
    assert_ok(result)
    (record,) = status_records(out)
    assert record["steps"] == 10, f"{mode}: one step per iteration, got {record['steps']}"
    assert record["window_steps"] == [7, 8]
    assert step_counts(out) == [2]


@pytest.mark.parametrize(
    ("options", "extra_env", "state"),
    [(["--skip-first", "3", "--active", "2"], {}, "done"), (["--ranks", "1"], {"RANK": "0"}, "off")],
    ids=["profiled", "not-this-rank"],
)
def test_the_jobs_own_step_hooks_run_once_per_step(out, options, extra_env, state):
    """The clock turns lean, or steps aside in a process that does not profile, from inside torch's
    iteration over the post hooks: a hook the job registered after ours must still run every step."""
    own = script("own_step_hooks.py")
    runs = profiled_against_bare([own], options, out=out, env=clean_env(**extra_env), bare_env=clean_env())
    assert "own hooks: pre 10 post 10" in runs.bare.stdout
    (record,) = status_records(out)
    assert record["state"] == state


@pytest.mark.parametrize("schedule", [[], ["--repeat", "2", "--wait", "1"]], ids=["one-window", "two-windows"])
def test_lr_scheduler_shows_no_new_warning(out, schedule):
    """No warning of ours in the job's stderr, torch's included: torch.profiler warns that it "clears
    events at the end of each cycle" from the second cycle on (and on torch <= 2.11, seen on 2.11,
    even for a single window), which would tell the job about a profiler it never started."""
    job = ["-W", "default", TRAIN, "--steps", "8"]
    runs = profiled_against_bare(job, schedule, out=out, compare=[("stderr", warning_lines)])
    assert not any("lr_scheduler" in line for line in warning_lines(runs.profiled.stderr))
    assert step_counts(out) == [1] * (2 if schedule else 1)


def test_torch_compile_model_trains_and_profiles(out):
    profiled_against_bare([TRAIN, "--compile", "--steps", "6"], ["--skip-first", "2", "--active", "2"], out=out)
    assert step_counts(out) == [2]


def test_repeat_gives_one_trace_per_window(out):
    result = npuprof(
        [
            "--skip-first",
            "1",
            "--wait",
            "1",
            "--warmup",
            "1",
            "--active",
            "2",
            "--repeat",
            "2",
            "--output-dir",
            out,
            "--",
            sys.executable,
            TRAIN,
            "--steps",
            "12",
        ]
    )
    assert_ok(result)
    assert step_counts(out) == [2, 2]
    # Each window's profiler counts from its own first step (warm-up step 3, then 7), as the job does.
    assert [step_spans(trace, ("ProfilerStep#",)) for trace in torch_traces(out)] == [
        ["ProfilerStep#4", "ProfilerStep#5"],
        ["ProfilerStep#8", "ProfilerStep#9"],
    ]
    (record,) = status_records(out)
    assert record["windows_completed"] == 2


@pytest.mark.parametrize("code", [0, 3, 77])
def test_exit_code_passes_through(out, code):
    result = npuprof(["--output-dir", out, "--", sys.executable, "-c", f"import sys; sys.exit({code})"])
    assert result.returncode == code


def test_death_by_signal_is_128_plus_n(out):
    result = npuprof(
        ["--output-dir", out, "--", sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    )
    assert result.returncode == 128 + 9


def test_relative_output_dir_is_resolved_where_the_launcher_started(tmp_path):
    job = (
        "import os, runpy, sys; os.chdir(sys.argv[1]); sys.argv = [sys.argv[2]]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = npuprof(
        ["--output-dir", "rel_out", "--", sys.executable, "-c", job, str(elsewhere), TRAIN], cwd=str(tmp_path)
    )
    assert_ok(result)
    assert len(torch_traces(str(tmp_path / "rel_out"))) == 1
    assert not (elsewhere / "rel_out").exists()


def test_user_pythonpath_entries_are_kept(out, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "mylib.py").write_text("VALUE = 42\n")
    env_pythonpath = str(lib)
    result = npuprof(
        [
            "--output-dir",
            out,
            "--",
            sys.executable,
            "-c",
            "import mylib, sys; print(mylib.VALUE); print(sys.path[1].endswith('sitecustomize_pkg'))",
        ],
        env=clean_env(PYTHONPATH=env_pythonpath),
    )
    assert_ok(result)
    assert result.stdout.split() == ["42", "True"]


def test_help_names_every_variable():
    result = npuprof(["--help"])
    assert_ok(result)
    from npuprof_launch.common import options

    for option in options.OPTIONS:
        assert option.env in result.stdout
        assert option.flag in result.stdout
    assert "NPU_PROF_ACTIVE" in result.stdout


def test_check_passes_after_a_complete_run(out):
    assert_ok(npuprof(["--output-dir", out, "--", sys.executable, TRAIN, "--steps", "12"]))
    code, report = check_json(out)
    assert code == 0 and report["passed"] is True, report
    (process,) = report["processes"]
    assert process["steps"] == 12 and process["windows_completed"] == 1
    assert process["traces"] and all(not os.path.isabs(t) for t in process["traces"])


def test_no_hook_without_the_switch(tmp_path):
    """With only the hook directory on PYTHONPATH and NPU_PROF_ENABLE unset, nothing happens."""
    from npuprof_launch.launcher import launch

    out = tmp_path / "o"
    env = clean_env(PYTHONPATH=launch.HOOK_DIR, NPU_PROF_OUTPUT_DIR=str(out))
    result = python(["-c", "import sys; print('npuprof_launch' in sys.modules)"], env=env)
    assert_ok(result)
    assert result.stdout.strip() == "False"
    assert not out.exists()


HOOKS_AFTER = (
    "import runpy, sys; from torch.optim import optimizer as o; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__'); "
    "print('hooks', len(o._global_optimizer_pre_hooks), len(o._global_optimizer_post_hooks), file=sys.stderr)"
)


@pytest.mark.parametrize("mode", ["plain", "gan"])
def test_the_clock_holds_no_global_hook_of_torchs(out, mode):
    """The clock counts in the step wrapper, lean (one optimizer) or exact (two): no global
    optimizer-step hook of torch's is ever the tool's (a compiled step would trace it into its graph),
    and every step is counted."""
    hooks = "hooks 0 0"
    result = npuprof(
        ["--output-dir", out, "--", sys.executable, "-c", HOOKS_AFTER, TRAIN, "--mode", mode, "--steps", "9"]
    )
    assert_ok(result)
    assert hooks in result.stderr
    (record,) = status_records(out)
    assert record["steps"] == 9 and record["window_steps"] == [2, 2]
    assert record["mean_step_s"] > 0
