"""Every run apart, every suggested command works as printed, true counts.

Real launchers in subprocesses, on small real jobs, into shared output directories as the
README's examples leave them (each writes to ./npuprof_output by default).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from answers import check_json, texts
from jobs import ROOT, assert_ok, clean_env, npuprof, once, script
from outputs import status_records, torch_traces
from suggestions import accepted

from npuprof_launch.common import names

TRAIN = script("train_loop.py")
STRAGGLERS = os.path.join(ROOT, "examples", "stragglers.py")
#: One process, no process group: a 0.4 s stall in step 7, the only spike (the suggestion's target).
STALL = [STRAGGLERS, "--slow-rank", "99", "--stall-rank", "0", "--stall-step", "7", "--stall-s", "0.4"]
RL_STAGES = [
    "--scenario",
    "rl",
    "--stage",
    "rollout=rl_lib:Actor.generate,skip-first=1,active=1",
    "--stage",
    "update=rl_lib:Learner.update,skip-first=2,active=1",
]


def _two_runs(base: str) -> tuple[str, subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """A training loop, then an RL job with two stages in one process, into one directory."""
    out = os.path.join(base, "npuprof_output")
    first = npuprof(
        ["--skip-first", "2", "--active", "2", "--output-dir", out, "--", sys.executable, TRAIN, "--steps", "6"]
    )
    assert_ok(first)
    second = npuprof(
        [*RL_STAGES, "--output-dir", out, "--", sys.executable, "rl.py", "--iterations", "4"],
        cwd=os.path.join(ROOT, "examples"),
    )
    assert_ok(second)
    return out, first, second


@pytest.fixture
def two_runs(tmp_path_factory):
    return once("two_runs", lambda: _two_runs(str(tmp_path_factory.mktemp("two_runs"))))


def test_check_reports_the_latest_run_and_names_the_other(two_runs):
    out, first, second = two_runs
    code, report = check_json(out)
    assert code == 0, report["problems"]
    older, latest = report["runs"]
    assert [older["reported"], latest["reported"]] == [False, True]
    assert report["run_id"] == latest["run_id"] and older["run_id"] != latest["run_id"]
    assert {p["run_id"] for p in report["processes"]} == {latest["run_id"]}
    assert {p["stage"] for p in report["processes"]} == {"rollout", "update"}
    assert older["command"][1] == TRAIN and older["processes"] == 1
    # Nothing of the training loop is compared with the RL job's stages.
    assert not any(note["kind"] == "windows_differ" for note in report["notes"]), report["notes"]
    summary = npuprof(["--check", out])
    assert (
        f"npuprof: 1 other run in this directory: npuprof-run --check {out} --run {older['run_id']}\n" in summary.stdout
    )
    explained = npuprof(["--check", out, "--explain"])
    assert f"1 other run in this directory, not in this report: {older['run_id']}" in explained.stdout
    assert f"npuprof-run --check {out} --run {older['run_id']} reports one" in explained.stdout
    with open(os.path.join(out, "npuprof_report.html")) as handle:
        page = handle.read()
    assert "other runs" in page and older["run_id"] in page
    # The launcher's own summary is of its own run, and names the one before it.
    assert f"1 other run in this directory: npuprof-run --check {out} --run {older['run_id']}" in second.stderr
    assert "other run" not in first.stderr


def test_run_chooses_another_run_and_an_unknown_one_is_refused(two_runs):
    out, _, _ = two_runs
    _, report = check_json(out)
    older = report["runs"][0]["run_id"]
    code, chosen = check_json(out, "--run", older)
    assert code == 0, chosen["problems"]
    assert chosen["run_id"] == older and [p["run_id"] for p in chosen["processes"]] == [older]
    assert chosen["run"]["command"][1] == TRAIN
    assert [item["reported"] for item in chosen["runs"]] == [True, False]
    refused = npuprof(["--check", out, "--run", "no-such-run"])
    assert refused.returncode == 2
    assert refused.stderr.startswith("npuprof: --run 'no-such-run': no such run") and older in refused.stderr
    misplaced = npuprof(["--run", older, "--", sys.executable, TRAIN])
    assert misplaced.returncode == 2 and "--run goes with --check DIR" in misplaced.stderr


def test_stages_of_one_process_count_it_once(two_runs):
    out, _, second = two_runs
    _, report = check_json(out)
    assert len(report["processes"]) == 2 and len({p["pid"] for p in report["processes"]}) == 1
    assert report["job"]["processes"] == 1
    assert "npuprof: 1 process profiled (1 host)" in second.stderr


def test_a_trace_no_record_accounts_for_is_named(tmp_path):
    out = str(tmp_path / "out")
    assert_ok(
        npuprof(
            ["--skip-first", "1", "--active", "1", "--output-dir", out, "--", sys.executable, TRAIN, "--steps", "3"]
        )
    )
    (trace,) = torch_traces(out)
    stray = os.path.join(out, "copied_in" + names.TORCH_TRACE_SUFFIX + ".gz")
    shutil.copyfile(trace, stray)
    code, report = check_json(out)
    assert code == 1
    (problem,) = texts(report["problems"])
    assert problem.startswith("1 trace on disk that no status record accounts for") and problem.endswith(
        os.path.basename(stray)
    ), problem


def test_a_suggestion_after_the_print_env_route_runs_as_printed(tmp_path):
    """The variables' route: the suggestion is the eval line with the run's --output-dir; pasted
    into the launch script in place of the first, it profiles the step it was aimed at."""
    out = str(tmp_path / "prof_env")
    env = clean_env(PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))

    # A stall far beyond what the window's aftercare (compression beside the job) can cost a step on
    # a busy machine: 0.4 s was sometimes within 5x of that cost, and rightly undecidable, not a spike.
    job = [*STALL[:-1], "1.5"]

    def launch(eval_line: str) -> None:
        body = f"set -e\n{eval_line}\n{sys.executable} {' '.join(job)}\n"
        result = subprocess.run(
            ["sh", "-c", body], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300
        )
        assert_ok(result)

    launch('eval "$(npuprof-run --print-env --skip-first 2 --active 1 --output-dir prof_env)"')
    code, report = check_json(out)
    assert code == 0, report["problems"]
    assert report["run"] is None and report["run_id"].startswith("env-")
    assert report["job"]["spikes"][0]["step"] == 7, report["job"]["spikes"]
    # The run on step 7's spike comes first (it is the job's worst); its window holds the spike of the step
    # before or after it too where a busy machine stalled that one over the bar (CI: a 2-step window).
    assert report["job"]["suggestions"], {key: report["job"][key] for key in ("spikes", "spike_period", "window_steps")}
    suggestion = report["job"]["suggestions"][0]
    namespace, _, mode, config = accepted(suggestion)
    assert mode == "--print-env" and config.output_dir == out, suggestion
    first, last = config.skip_first + 1, config.skip_first + config.active
    near = {s["step"] for s in report["job"]["spikes"] if abs(s["step"] - 7) <= 1}
    assert (first, last) == (min(near), max(near)) and first <= 7 <= last, (suggestion, report["job"]["spikes"])
    launch(suggestion)
    code, again = check_json(out)
    assert code == 0, again["problems"]
    assert len(again["runs"]) == 2 and again["run_id"] != report["run_id"]
    (process,) = again["processes"]
    assert [(w["first_step"], w["last_step"], w["complete"]) for w in process["windows"]] == [(first, last, True)]


def test_a_suggestion_keeps_the_scenario_and_stages_of_its_run(tmp_path):
    """A stage's spike: the suggestion declares the stage again with its own steps, beside
    --scenario rl and the run's --output-dir, and the tool accepts it."""
    out = str(tmp_path / "out")
    result = npuprof(
        [*RL_STAGES, "--output-dir", out, "--", sys.executable, "rl.py", "--iterations", "6"],
        cwd=os.path.join(ROOT, "examples"),
    )
    assert_ok(result)
    _, report = check_json(out)
    for suggestion in report["job"]["suggestions"]:
        namespace, command, _, config = accepted(suggestion)
        assert config.scenario == "rl" and config.output_dir == out and command[-3:] == ["rl.py", "--iterations", "6"]
        assert {text.split("=")[0] for text in config.stage} == {"rollout", "update"}, suggestion


def test_analyse_on_a_torch_run_says_its_traces_are_complete(tmp_path):
    out = str(tmp_path / "out")
    assert_ok(
        npuprof(
            ["--skip-first", "1", "--active", "1", "--output-dir", out, "--", sys.executable, TRAIN, "--steps", "3"]
        )
    )
    result = npuprof(["--analyse", out])
    assert result.returncode == 0, result.stderr
    assert "a run of the torch backend: its traces are already complete" in result.stderr
    assert len(status_records(out)) == 1
