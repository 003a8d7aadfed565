"""--target, a function as the step; the real launcher, real torch.profiler, real files."""

from __future__ import annotations

import os
import sys
import sysconfig

import pytest
from answers import check_json, texts
from compare import profiled_against_bare
from jobs import ROOT, assert_ok, clean_env, npuprof, python, script
from outputs import status_records, step_counts, torch_traces

from npuprof_launch.common import deliverables

EXAMPLES = os.path.join(ROOT, "examples")
TARGET_JOB = script("target_job.py")


def lib_env(**extra: str) -> dict[str, str]:
    """The environment of a job whose step functions live in tests/scripts/target_lib.py."""
    return clean_env(PYTHONPATH=os.path.dirname(TARGET_JOB), **extra)


def labels(out: str, prefix: str) -> list[str]:
    """The names of the spans starting with ``prefix`` in every trace under ``out``, in time order."""
    spans = []
    for path in torch_traces(out):
        for event in deliverables.load_trace_events(path):
            if event.get("ph") == "X" and str(event.get("name", "")).startswith(prefix):
                spans.append((event["ts"], event["name"]))
    return [name for _, name in sorted(spans)]


def test_inference_example_five_steps_of_twenty(out):
    """Done when: --target infer_lib:Engine.step --skip-first 2 --active 5 writes one trace of 5 steps."""
    profiled_against_bare(
        [os.path.join(EXAMPLES, "infer.py")],
        ["--target", "infer_lib:Engine.step", "--skip-first", "2", "--active", "5", "--output-dir", out],
    )
    assert step_counts(out) == [5]
    (record,) = status_records(out)
    assert record["steps"] == 20 and record["window_steps"] == [3, 7]
    assert record["clock"] == "target infer_lib:Engine.step"
    assert labels(out, "Engine.step#") == [f"Engine.step#{n}" for n in range(3, 8)]
    code, report = check_json(out)
    assert code == 0, report


def test_main_function_defined_after_torch_three_steps(out):
    """Done when: --target __main__:generate_step --skip-first 1 --active 3 writes one trace of 3 steps."""
    profiled_against_bare(
        [script("generate_loop.py")],
        ["--target", "__main__:generate_step", "--skip-first", "1", "--active", "3", "--output-dir", out],
    )
    assert step_counts(out) == [3]
    (record,) = status_records(out)
    assert record["steps"] == 8 and record["window_steps"] == [2, 4]


def test_main_method_target(out):
    profiled_against_bare(
        [script("generate_loop.py"), "--kind", "method", "--calls", "6"],
        ["--target", "__main__:Decoder.step", "--skip-first", "2", "--active", "2", "--output-dir", out],
    )
    assert step_counts(out) == [2]
    assert status_records(out)[0]["steps"] == 6


def test_main_function_defined_before_torch_is_imported(out):
    profiled_against_bare(
        [script("late_torch.py"), "5"],
        ["--target", "__main__:generate_step", "--skip-first", "0", "--active", "2", "--output-dir", out],
    )
    assert step_counts(out) == [2]
    assert status_records(out)[0]["steps"] == 5


def test_first_call_already_running_is_counted_from_entry_to_return(out):
    """Called right after its def: the hook meets the first call in flight and still records it whole."""
    profiled_against_bare(
        [script("first_call.py")],
        ["--target", "__main__:generate_step", "--skip-first", "0", "--active", "1", "--output-dir", out],
    )
    (record,) = status_records(out)
    assert record["steps"] == 2, "two outer calls, each recursing three times"
    assert record["window_steps"] == [1, 1]
    assert step_counts(out) == [1]
    assert labels(out, "generate_step#") == ["generate_step#1"]


def test_a_first_call_whose_name_was_loaded_before_the_hook_could_wrap_it_is_counted(out):
    """``train_step(k, *make_batch())``: the script loads the name, then calls make_batch (the event
    at which the hook wraps the function), then calls what it loaded: that call is still step 1."""
    result = profiled_against_bare(
        [script("main_calls.py"), "--mode", "args", "--calls", "4"],
        ["--target", "__main__:train_step", "--skip-first", "0", "--active", "4", "--output-dir", out],
    ).profiled
    assert "train_step=4" in result.stdout
    (record,) = status_records(out)
    assert record["steps"] == 4 and record["windows"][0]["complete"], record
    assert labels(out, "train_step#") == [f"train_step#{n}" for n in range(1, 5)]
    code, report = check_json(out)
    assert code == 0 and report["passed"], report["problems"]


def test_two_stages_in_main_are_both_counted(out):
    """npuprof's own watch of __main__ for the first stage is no 'other profiler' to the second."""
    result = profiled_against_bare(
        [script("main_calls.py"), "--mode", "stages", "--calls", "5"],
        ["--scenario", "rl", "--stage", "rollout=__main__:rollout", "--stage", "update=__main__:update"]
        + ["--output-dir", out],
    ).profiled
    assert "rollout=5 update=5" in result.stdout
    records = {record["stage"]: record for record in status_records(out)}
    assert {stage: r["steps"] for stage, r in records.items()} == {"rollout": 5, "update": 5}
    assert not any("another profiler" in w for r in records.values() for w in r["warnings"])


@pytest.mark.parametrize(
    ("kind", "target"),
    [
        ("function", "target_lib:step"),
        ("method", "target_lib:Engine.step"),
        ("classmethod", "target_lib:Engine.class_step"),
        ("staticmethod", "target_lib:Engine.static_step"),
        ("nested", "target_lib:Engine.Inner.step"),
        ("recursive", "target_lib:recursive_step"),
        ("threaded", "target_lib:threaded_step"),
    ],
)
def test_every_kind_of_function_counts_one_step_per_outermost_call(out, kind, target):
    """Methods of each kind, nested classes, recursion and threads: 6 calls are 6 steps, the
    function looks the same to the job (name, qualname, docstring, signature), results unchanged."""
    profiled_against_bare(
        [TARGET_JOB, kind, "--calls", "6"],
        ["--target", target, "--skip-first", "1", "--active", "3", "--output-dir", out],
        env=lib_env(),
    )
    (record,) = status_records(out)
    assert record["steps"] == 6, f"{kind}: {record['steps']} steps for 6 outermost calls"
    assert step_counts(out) == [3]


@pytest.mark.parametrize("mode", ["--no-range", "--range"])
def test_calls_on_other_threads_than_the_first_callers_run_unprofiled(out, mode):
    """Each call on a new thread: only the first thread's calls are steps, and the job is not harmed.

    A profiler started on a thread that ends while it runs crashes the process at exit, so a
    window over several calls starts only on the main thread; a range window (one call) starts
    and stops on its own thread."""
    profiled_against_bare(
        [TARGET_JOB, "worker-threads", "--calls", "6"],
        ["--target", "target_lib:step", mode, "--skip-first", "0", "--active", "2", "--output-dir", out],
        env=lib_env(),
    )
    (record,) = status_records(out)
    assert record["steps"] == 1
    assert any("other threads" in warning for warning in record["warnings"]), record["warnings"]
    if mode == "--range":
        assert step_counts(out) == [1] and labels(out, "step#") == ["step#1"]
    else:
        assert step_counts(out) == []
        assert any("not on the main thread" in warning for warning in record["warnings"]), record["warnings"]


ASYNC_SERVE = script("async_serve.py")


def spans(out: str, prefix: str) -> list[tuple[float, float, str]]:
    """(start, end, name) of the spans whose names start with ``prefix``, in every trace, in time order."""
    found = []
    for path in torch_traces(out):
        for event in deliverables.load_trace_events(path):
            if event.get("ph") == "X" and str(event.get("name", "")).startswith(prefix):
                found.append((float(event["ts"]), float(event["ts"]) + float(event.get("dur", 0)), event["name"]))
    return sorted(found)


def test_an_async_def_target_s_step_is_its_await_not_the_call(out):
    """An ``async def``'s call returns a coroutine at once: its step is the await, so each recorded
    step's label holds that request's own work and the window holds requests 3-5, not the work of
    2-4 labelled by empty spans (what the plain wrapper gave)."""
    profiled_against_bare(
        [ASYNC_SERVE, "sequential"],
        ["--target", "__main__:handle", "--skip-first", "2", "--active", "3", "--output-dir", out],
    )
    (record,) = status_records(out)
    assert record["steps"] == 12 and record["window_steps"] == [3, 5]
    assert step_counts(out) == [3]
    steps = spans(out, "handle#")
    assert [name for *_, name in steps] == ["handle#3", "handle#4", "handle#5"]
    work = [start for start, _, _ in spans(out, "aten::tanh")]
    assert len(work) == 3, work
    for (begin, end, name), tanh in zip(steps, work):
        assert begin <= tanh <= end, f"{name} ({begin}-{end}) does not hold its request's work at {tanh}"
    code, report = check_json(out)
    assert code == 0, report


def test_async_def_calls_awaited_together_are_one_step(out):
    """asyncio.gather of 3 requests at a time on one loop: their awaits overlap, so each batch is one step."""
    profiled_against_bare(
        [ASYNC_SERVE, "gather", "--requests", "12"],
        ["--target", "__main__:handle", "--skip-first", "1", "--active", "2", "--output-dir", out],
    )
    (record,) = status_records(out)
    assert record["steps"] == 4 and step_counts(out) == [2]
    assert [name for *_, name in spans(out, "handle#")] == ["handle#2", "handle#3"]
    assert len(spans(out, "aten::tanh")) == 6  # the window's two batches of three


def test_a_generator_function_target_is_told_that_its_work_falls_after_the_call(out):
    """A generator function's body runs as it is iterated, after the call returns: said, not hidden."""
    result = profiled_against_bare(
        [ASYNC_SERVE, "stream"],
        ["--target", "__main__:stream", "--skip-first", "0", "--active", "1", "--output-dir", out],
    ).profiled
    (record,) = status_records(out)
    assert any("is a generator function" in warning for warning in record["warnings"]), record["warnings"]
    assert "npuprof: target __main__:stream is a generator function" in result.stderr


def test_module_imported_long_after_the_hook(out):
    """The target's module is first imported in the middle of the run, after torch and 3 other steps."""
    profiled_against_bare(
        [TARGET_JOB, "function", "--calls", "6", "--late"],
        ["--target", "target_lib:step", "--skip-first", "0", "--active", "2", "--output-dir", out],
        env=lib_env(),
    )
    (record,) = status_records(out)
    assert record["steps"] == 3 and step_counts(out) == [2]


def test_module_imported_before_the_hook(out):
    """Under ``python -S`` the job imports the module first and loads the hook itself afterwards."""
    job = (
        "import sys; sys.path += sys.argv[1:]; "
        "import target_lib, torch, site; site.main(); "
        "x = torch.ones(4, 16)\nfor _ in range(5): x = target_lib.step(x)\nprint(x.sum().item())"
    )
    profiled_against_bare(
        ["-S", "-c", job, os.path.dirname(TARGET_JOB), sysconfig.get_paths()["purelib"]],
        ["--target", "target_lib:step", "--skip-first", "1", "--active", "2", "--output-dir", out],
    )
    (record,) = status_records(out)
    assert record["steps"] == 5 and step_counts(out) == [2]


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("target_lib:nosuch", "not found: target_lib has no attribute 'nosuch'"),
        ("target_lib:Engine", "not found: target_lib.Engine is a class"),
        ("target_lib:unused", "never called"),
        ("no_such_module:step", "never imported"),
        ("__main__:nosuch", "not found: the code run as __main__ never assigns nosuch"),
    ],
)
def test_a_target_that_makes_no_step_is_named_with_the_reason(out, target, reason):
    """The job runs on unaffected; the report and --check name the target and why it made no step."""
    result = profiled_against_bare(
        [TARGET_JOB, "function", "--calls", "3"], ["--target", target, "--output-dir", out], env=lib_env()
    ).profiled
    assert f"--target {target} made no step" in result.stderr and reason in result.stderr
    assert "imported torch but never stepped" not in result.stderr, "the one process is the problem's, not an idle one"
    assert step_counts(out) == []
    code, report = check_json(out)
    assert code == 1
    assert any(target in problem and reason in problem for problem in texts(report["problems"])), report["problems"]
    (told,) = [problem for problem in report["problems"] if problem["kind"] == "target_no_step"]
    (why,) = told["evidence"]["reasons"]
    assert told["evidence"]["target"] == target and reason.startswith(why["why"]) and why["processes"] == 1, told


def test_range_mode_records_each_chosen_call_as_its_own_window(out):
    """--range: calls 3, 4 and 5, each from its entry to its return, one trace each."""
    profiled_against_bare(
        [os.path.join(EXAMPLES, "infer.py"), "--steps", "8"],
        ["--target", "infer_lib:Engine.step", "--range", "--skip-first", "2", "--active", "3", "--output-dir", out],
    )
    assert step_counts(out) == [1, 1, 1]
    assert labels(out, "Engine.step#") == ["Engine.step#3", "Engine.step#4", "Engine.step#5"]
    (record,) = status_records(out)
    assert record["range"] is True and record["windows_completed"] == record["windows_planned"] == 3
    code, report = check_json(out)
    assert code == 0, report


def test_range_mode_with_wait_and_repeat(out):
    """skip 1, then twice: wait 1, record 1 -> calls 3 and 5."""
    profiled_against_bare(
        [TARGET_JOB, "function", "--calls", "6"],
        ["--target", "target_lib:step", "--range", "--skip-first", "1", "--wait", "1", "--repeat", "2"]
        + ["--output-dir", out],
        env=lib_env(),
    )
    assert labels(out, "step#") == ["step#3", "step#5"]


@pytest.mark.parametrize(
    "declared",
    [
        {"NPU_PROF_TARGET": "target_lib:step"},
        {"NPU_PROF_SCENARIO": "rl", "NPU_PROF_STAGE": "a=target_lib:step,active=2;b=__main__:f"},
    ],
)
def test_at_process_start_the_hook_imports_nothing_the_interpreter_does_not(tmp_path, declared):
    """Declaring targets adds two small modules of ours at start, and no other module (no typing,
    threading, re or wrapt): the hook runs in every Python process of the job."""
    from npuprof_launch.launcher import launch

    probe = ["-c", "import sys; print(' '.join(sorted(sys.modules)))"]
    bare = python(probe, env=clean_env())
    hooked = python(
        probe,
        env=clean_env(
            PYTHONPATH=launch.HOOK_DIR, NPU_PROF_ENABLE="1", NPU_PROF_OUTPUT_DIR=str(tmp_path / "o"), **declared
        ),
    )
    assert_ok(bare)
    assert_ok(hooked)
    added = set(hooked.stdout.split()) - set(bare.stdout.split())
    ours = {
        "sitecustomize",
        "npuprof_launch",
        "npuprof_launch.inprocess",
        "npuprof_launch.inprocess.hook",
        "npuprof_launch.inprocess.importwatch",
        "npuprof_launch.common",
        "npuprof_launch.common.names",
        "npuprof_launch.common.processlog",
    }
    assert added - ours <= {"npuprof_launch.inprocess.declared", "npuprof_launch.common.stages"}, added
    assert "npuprof_launch.inprocess.declared" in added


def test_a_target_with_its_source_is_counted_in_place_and_wrapt_is_never_imported(out):
    """A function whose source is what runs is counted inside its own code (inplace.py): no wrapper,
    so no wrapt (~80 ms) either; a process that never imports the module imports nothing of it."""
    probe = "print('wrapt' in sys.modules)"
    for imports in ("import sys, torch; ", "import sys, torch, target_lib; target_lib.step(torch.ones(16)); "):
        result = npuprof(
            ["--target", "target_lib:step", "--output-dir", out, "--", sys.executable, "-c", imports + probe],
            env=lib_env(),
        )
        assert_ok(result)
        assert result.stdout.strip() == "False"


def test_target_replaces_the_optimizer_clock(out):
    """A training loop with --target counts calls of the target, never optimizer steps."""
    profiled_against_bare(
        [script("train_loop.py"), "--steps", "5"],
        ["--target", "__main__:checksum", "--skip-first", "0", "--output-dir", out],
    )
    (record,) = status_records(out)
    assert record["clock"] == "target __main__:checksum" and record["steps"] == 1
