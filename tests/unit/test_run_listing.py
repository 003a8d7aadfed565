"""The runs of one output directory (runs.py) and the commands suggested for them (jobview.py), in-process."""

from __future__ import annotations

import os

from suggestions import accepted

from npuprof_launch.common import names
from npuprof_launch.common.record import attempt_of, process_count
from npuprof_launch.launcher import htmlsections, nextruns, runs, wording


def record(run_id: str, pid: int, **fields) -> dict:
    return {"run_id": run_id, "pid": pid, "host": "h", "started_ns": pid, "updated_ns": pid, **fields}


def test_attempts_come_from_the_field_or_an_older_records_worker_name():
    assert attempt_of({"attempt": 2}) == 2
    assert attempt_of({"worker": "h_rank1_pid9_restart3"}) == 3
    assert attempt_of({"worker": "h_rank1_pid9"}) == 0
    assert names.attempt_of_worker("h_pid9_restartx") == 0


def test_runs_are_listed_oldest_first_and_the_latest_is_reported(tmp_path):
    records = [record("b", 20), record("a", 10), record("a", 11, worker="h_pid11_restart1"), record("", 5)]
    accounts = {"a": {"run_id": "a", "command": ["python", "a.py"], "started_ns": 9, "ended_ns": 12, "status": 0}}
    listing = runs.listed(records, accounts, [{"run_id": "b"}], str(tmp_path))
    assert [item["run_id"] for item in listing] == ["", "a", "b"]
    assert listing[1]["processes"] == 2 and listing[1]["attempts"] == [0, 1]
    assert runs.chosen(listing, None) == "b" and runs.chosen(listing, "a") == "a"
    assert runs.chosen(listing, "zz") is None and runs.chosen([], None) is None
    text = runs.others_text(listing, "b", "/out")
    assert text.startswith("2 other runs in this directory, not in this report: a, ")
    assert "(unnamed: records without a run id)" in text
    assert text.endswith("npuprof-run --check /out --run a reports one")
    assert runs.others_text(listing[2:], "b", "/out") is None


def test_stages_of_one_process_count_once_and_attempts_apart():
    rows = [{"host": "h", "pid": 1, "stage": "rollout"}, {"host": "h", "pid": 1, "stage": "update"}]
    assert process_count(rows) == 1
    assert process_count([*rows, {"host": "h", "pid": 1, "attempt": 1}]) == 2
    assert wording.attempts_text(rows) == ""
    assert wording.attempts_text([*rows, {"attempt": 1}]).startswith(", 2 attempts")


def test_the_options_a_run_was_given_include_the_variables_and_its_output(tmp_path):
    """No launcher account (the --print-env route): what the processes resolved away from the defaults."""
    resolved = {"output-dir": "/elsewhere", "scenario": "rl", "stage": ["a=m:f"], "range": True, "active": 1}
    given = runs.given_options(None, [record("", 1, options=resolved)], str(tmp_path))
    # range is rl's default: not repeated; the output directory is the one the report is about.
    assert given == {"scenario": "rl", "stage": "a=m:f", "output-dir": str(tmp_path)}
    flags = runs.given_options({"options": {"backend": "torch"}}, [], "rel")
    assert flags == {"backend": "torch", "output-dir": os.path.abspath("rel")}
    assert runs.given_options({"options": {"output-dir": "strag"}}, [], "/abs/strag") == {"output-dir": "strag"}


def test_traces_no_record_accounts_for(tmp_path):
    out = str(tmp_path)
    os.makedirs(os.path.join(out, names.STATUS_DIR))
    os.makedirs(os.path.join(out, "rollout"))
    os.makedirs(os.path.join(out, "h_pid3_1_ascend_pt", "inner"))
    for rel in ("a.pt.trace.json.gz", "rollout/b.pt.trace.json", "c.pt.trace.json", f"{names.STATUS_DIR}/x.json"):
        with open(os.path.join(out, rel), "w"):
            pass
    known = [{"traces": ["a.pt.trace.json"], "windows": [{"traces": ["rollout/b.pt.trace.json.gz"]}]}]
    assert runs.untracked_traces(out, known) == ["c.pt.trace.json", "h_pid3_1_ascend_pt"]


def _job(**extra) -> dict:
    job = {"ranks": 2, "steps": 12, "spikes": [], "slow_ranks": []}
    job.update(extra)
    return job


SPIKE = {"step": 7, "ranks": [1], "processes": 1, "step_s": 0.4, "vs_median": 20.0}


def test_every_suggestion_is_accepted_by_the_tool_on_each_route():
    given = {"output-dir": "/o", "backend": "torch", "ranks": "0-3", "skip-first": "3"}
    job = _job(spikes=[SPIKE], slow_ranks=[{"rank": 1, "method": "step_times"}])
    prefix = nextruns.of_job(job, ["python", "t.py"], given, "prefix")
    env = nextruns.of_job(job, None, given, "env")
    assert prefix[0] == "npuprof-run --skip-first 6 --active 1 --ranks 1 --output-dir /o --backend torch -- python t.py"
    assert (
        env[1]
        == 'eval "$(npuprof-run --print-env --skip-first 6 --active 2 --ranks 1 --output-dir /o --backend torch)"'
    )
    for suggestion in prefix + env:
        accepted(suggestion)


def test_a_stages_suggestion_keeps_the_scenario():
    """A merged directory once suggested --stage without --scenario rl, which the tool refuses."""
    spike = {**SPIKE, "stage": "rollout", "target": "rl_lib:Actor.generate"}
    given = {"output-dir": "/o", "scenario": "rl", "stage": "rollout=rl_lib:Actor.generate,active=2;update=m:f"}
    (suggestion,) = nextruns.of_job(_job(spikes=[spike]), ["python", "rl.py"], given, "prefix")
    _, _, _, config = accepted(suggestion)
    assert config.scenario == "rl"
    assert config.stage == ("rollout=rl_lib:Actor.generate,skip-first=6,active=1", "update=m:f")


def test_the_next_section_names_only_what_it_aims_at():
    only_spike = htmlsections.next_commands(_job(spikes=[SPIKE], suggestions=["npuprof-run -- x"]))
    assert "a window on the worst spike." in only_spike and "slow rank" not in only_spike
    only_slow = htmlsections.next_commands(_job(slow_ranks=[{"rank": 1}], suggestions=["npuprof-run -- x"]))
    assert "a window on the slow rank." in only_slow and "spike" not in only_slow


def test_the_runs_of_one_job_on_several_nodes_are_reported_together():
    """One launcher a node: same command, same time, hosts of their own, one job; a run before or
    after it, or beside it on the same host, is another."""

    def run(run_id, hosts, started, last, command=("torchrun", "train.py")):
        return {"run_id": run_id, "hosts": hosts, "started_ns": started, "last_ns": last, "command": list(command)}

    listing = [
        run("a", ["nodea"], 10, 50),
        run("b", ["nodeb"], 12, 55),
        run("later", ["nodeb"], 60, 90),
        run("other", ["nodec"], 11, 40, command=("python", "eval.py")),
        run("same-host", ["nodea"], 20, 30),
    ]
    assert runs.joined(listing, "a") == {"a", "b"}
    assert runs.joined(listing, "later") == {"later"}
    assert runs.joined(listing, "other") == {"other"}
    assert runs.joined(listing, None) == set()
