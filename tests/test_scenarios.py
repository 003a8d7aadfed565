"""The three scenarios and the stages of rl; the real launcher on the examples."""

from __future__ import annotations

import os
import sys

import pytest
from answers import check_json, texts
from compare import profiled_against_bare
from jobs import ROOT, clean_env, npuprof
from outputs import status_records, torch_traces

from npuprof_launch.common import deliverables, names, options, scenarios
from npuprof_launch.launcher import readme

EXAMPLES = os.path.join(ROOT, "examples")
RL = os.path.join(EXAMPLES, "rl.py")
ROLLOUT = "rollout=rl_lib:Actor.generate"
UPDATE = "update=rl_lib:Learner.update"


def spans(path: str) -> list[tuple[float, float, str]]:
    """(start, end, name) of every complete event of one trace."""
    events = deliverables.load_trace_events(path)
    return [(e["ts"], e["ts"] + e.get("dur", 0), e["name"]) for e in events if e.get("ph") == "X"]


def stage_traces(out: str, stage: str) -> list[str]:
    return torch_traces(os.path.join(out, stage))


def step_names(paths: list[str], prefix: str) -> list[str]:
    return sorted(name for path in paths for _, _, name in spans(path) if name.startswith(prefix))


def records_by_stage(out: str) -> dict[str, dict]:
    return {record["stage"]: record for record in status_records(out)}


# -- resolution and refusals (no job runs) ---------------------------------------------------------


def test_flag_over_variable_over_scenario_over_table():
    level = options.BY_NAME["level"]
    given = {"scenario": "infer", "target": "m:f"}
    assert options.resolve(given, {})[0].level == "level1", "the scenario's default over the table's"
    assert options.resolve(given, {level.env: "level2"})[0].level == "level2", "a variable over the scenario"
    assert options.resolve({**given, "level": "level0"}, {level.env: "level2"})[0].level == "level0", "flag first"
    config, problems = options.resolve({"target": "m:f"}, {options.BY_NAME["scenario"].env: "infer"})
    assert not problems and config.with_modules is True, "the scenario may come from its variable too"
    assert options.resolve({}, {})[0].level == "level0", "train keeps the table's defaults"


def test_every_scenario_default_is_a_value_its_option_accepts():
    for scenario in scenarios.SCENARIOS.values():
        for name, value in scenario.defaults.items():
            option = options.BY_NAME[name]
            assert option.parse(option.format(value), name) == value, (scenario.name, name)
    assert options.BY_NAME["scenario"].choices == scenarios.NAMES


def test_the_hook_reads_the_variables_the_table_names():
    assert names.TARGET_VAR == options.BY_NAME["target"].env
    assert names.STAGE_VAR == options.BY_NAME["stage"].env
    assert names.SCENARIO_VAR == options.BY_NAME["scenario"].env


def test_docs_scenarios_table_is_current():
    with open(os.path.join(ROOT, readme.SCENARIOS_PAGE)) as handle:
        assert readme.scenarios_table() in handle.read(), "run python -m npuprof_launch.launcher.readme"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--scenario", "infer"], "--scenario infer needs --target"),
        (["--scenario", "rl"], "--scenario rl needs at least one --stage"),
        (["--scenario", "rl", "--stage", ROLLOUT, "--target", "m:f"], "--target is not used with --scenario rl"),
        (["--stage", ROLLOUT], "--stage needs --scenario rl"),
        (["--range"], "--range records calls of --target"),
        (["--scenario", "rl", "--stage", ROLLOUT + ",warmup=1"], "stage rollout: --range with --warmup 1"),
        (["--scenario", "rl", "--stage", ROLLOUT + ",speed=2"], "expected KEY=VALUE with KEY one of"),
        (["--scenario", "rl", "--stage", ROLLOUT + ",active=0"], "stage rollout active='0'"),
        (["--scenario", "rl", "--stage", "roll/out=rl_lib:f"], "NAME made of letters, digits"),
        (["--scenario", "rl", "--stage", "rollout=rl_lib"], "expected MODULE:QUALNAME"),
        (["--scenario", "rl", "--stage", ROLLOUT, "--stage", "rollout=m:g"], "two stages are named rollout"),
        (["--scenario", "rl", "--stage", ROLLOUT, "--stage", "x=rl_lib:Actor.generate"], "both name"),
        (
            ["--scenario", "rl", "--stage", ROLLOUT + ",skip-first=4,active=2", "--total-steps", "5"],
            "stage rollout: --skip-first 4",
        ),
    ],
)
def test_a_scenario_without_its_step_source_or_a_bad_stage_is_refused(tmp_path, args, says):
    result = npuprof([*args, "--output-dir", str(tmp_path / "o"), "--", sys.executable, "-c", "print(1)"])
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines and all(line.startswith("npuprof: ") for line in lines)
    assert any(says in line for line in lines), result.stderr


def test_stages_round_trip_through_the_variable():
    config, problems = options.resolve({"scenario": "rl", "stage": f"{ROLLOUT},active=2; {UPDATE}"}, {})
    assert not problems
    exported = config.to_env()[options.BY_NAME["stage"].env]
    assert exported == f"{ROLLOUT},active=2;{UPDATE}"
    again, problems = options.resolve({}, config.to_env())
    assert not problems and again.stage == config.stage and again.range is True


# -- inference ---------------------------------------------------------------------------------------


def test_infer_uses_its_defaults_and_only_the_calling_process_profiles(out):
    """An API-server-like process that never calls the target never profiles; its defaults apply
    without a torch-backend warning about npu-only options the user never gave."""
    infer = os.path.join(EXAMPLES, "infer.py")
    server = f"import subprocess, sys, torch; subprocess.run([sys.executable, {infer!r}, '--steps', '6'], check=True)"
    options = ["--scenario", "infer", "--target", "infer_lib:Engine.step"]
    result = profiled_against_bare(["-c", server], options, out=out).profiled
    assert "npu backend only" not in result.stderr
    (record,) = status_records(out)
    assert record["steps"] == 6 and record["argv"][0] == infer
    assert record["options"]["level"] == "level1" and record["options"]["with-modules"] is True
    code, report = check_json(out)
    assert code == 0 and report["idle_processes"] == 1, report


# -- reinforcement learning ------------------------------------------------------------------------


def rl_env(**extra: str) -> dict[str, str]:
    return clean_env(PYTHONPATH=EXAMPLES, **extra)


def test_two_stages_in_one_process_each_with_its_own_output_and_steps(out):
    """Stages given in the variable (';'-separated): rollout calls 2 and 3, update call 3, each
    recorded from entry to return in its own folder; the job's output unchanged."""
    env = rl_env(
        NPU_PROF_SCENARIO="rl", NPU_PROF_STAGE=f"{ROLLOUT},skip-first=1,active=2;{UPDATE},skip-first=2,active=1"
    )
    profiled_against_bare([RL, "--iterations", "6"], out=out, env=env, bare_env=rl_env())
    records = records_by_stage(out)
    assert set(records) == {"rollout", "update"}
    assert records["rollout"]["pid"] == records["update"]["pid"]
    assert records["rollout"]["steps"] == records["update"]["steps"] == 6
    rollout, update = stage_traces(out, "rollout"), stage_traces(out, "update")
    assert [deliverables.count_profiler_steps(p) for p in rollout] == [1, 1]
    assert [deliverables.count_profiler_steps(p) for p in update] == [1]
    assert step_names(rollout, "rollout#") == ["rollout#2", "rollout#3"]
    assert step_names(update, "update#") == ["update#3"]
    assert not step_names(rollout, "update#") and not step_names(update, "rollout#"), "no stage records another's"
    code, report = check_json(out)
    assert code == 0, report


def test_two_stages_in_two_processes(out):
    profiled_against_bare(
        [RL, "--iterations", "5", "--split"],
        ["--scenario", "rl", "--stage", f"{ROLLOUT},skip-first=0,active=3", "--stage", f"{UPDATE},skip-first=3"],
        out=out,
        env=rl_env(),
    )
    records = records_by_stage(out)
    assert records["rollout"]["pid"] != records["update"]["pid"]
    assert records["rollout"]["steps"] == records["update"]["steps"] == 5
    assert step_names(stage_traces(out, "rollout"), "rollout#") == ["rollout#1", "rollout#2", "rollout#3"]
    assert step_names(stage_traces(out, "update"), "update#") == ["update#4"]
    code, report = check_json(out)
    assert code == 0, report


def test_stages_in_one_process_take_turns_with_its_one_profiler(out):
    """Step windows (range=0): rollout records calls 2-3 with update call 2 in between, so update's
    window, due at its call 2, starts at its call 3; the two profilers never overlap in time."""
    profiled_against_bare(
        [RL, "--iterations", "6"],
        ["--scenario", "rl", "--stage", f"{ROLLOUT},skip-first=1,active=2,range=0"]
        + ["--stage", f"{UPDATE},skip-first=1,active=1,range=0"],
        out=out,
        env=rl_env(),
    )
    records = records_by_stage(out)
    assert records["rollout"]["window_steps"] == [2, 3]
    assert records["update"]["window_steps"] == [3, 3]
    assert any("rollout" in warning for warning in records["update"]["warnings"]), records["update"]["warnings"]
    (rollout,), (update,) = stage_traces(out, "rollout"), stage_traces(out, "update")
    assert deliverables.count_profiler_steps(rollout) == 2 and deliverables.count_profiler_steps(update) == 1
    assert max(end for _, end, _ in spans(rollout)) <= min(start for start, _, _ in spans(update))
    code, report = check_json(out)
    assert code == 0, report


def test_a_stage_that_never_runs_is_named_and_the_others_are_profiled(out):
    profiled_against_bare(
        [RL, "--iterations", "3"],
        ["--scenario", "rl", "--stage", ROLLOUT, "--stage", "update=rl_lib:Learner.updat"],
        out=out,
        env=rl_env(),
    )
    assert [record["stage"] for record in status_records(out)] == ["rollout"]
    assert len(stage_traces(out, "rollout")) == 1
    code, report = check_json(out)
    assert code == 1
    (problem,) = texts(report["problems"])
    assert "stage update (rl_lib:Learner.updat)" in problem
    assert "not found: rl_lib.Learner has no attribute 'updat' (did you mean 'update'?)" in problem
