"""Many processes. torchrun workers and ranks, data-loader workers, helper children,
restarts, and the env-only launch script. Real torchrun (gloo on CPU), real DataLoader workers."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from answers import check_json
from compare import profiled_against_bare, rank_lines
from jobs import assert_ok, clean_env, npuprof, script
from outputs import status_records, step_counts, torch_traces

from npuprof_launch.common import names, options, processlog

DDP = script("ddp_train.py")
LOADER = script("loader_train.py")
#: torchrun itself; --standalone picks a free port, so parallel runs on one machine never collide.
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]


def env_without_ranks(**extra: str) -> dict[str, str]:
    """A clean environment that no launcher has given a rank (the tests may run under one)."""
    env = clean_env(**extra)
    for var in names.RANK_VARS:
        if var not in extra:
            env.pop(var, None)
    return env


def idle_tally(out: str) -> list[dict]:
    return [line for line in processlog.read(out) if line.get("event") == processlog.IDLE]


def trace_names(out: str) -> list[str]:
    return [os.path.basename(path) for path in torch_traces(out)]


def torchrun_against_bare(out: str, *options: str):
    """2 DDP ranks under torchrun, bare and profiled with ``options``; each test compares the two."""
    runs = profiled_against_bare([*TORCHRUN[1:], "--nproc_per_node", "2", DDP], options, out=out, compare=())
    assert len(rank_lines(runs.bare.stdout)) == 2
    return runs


@pytest.fixture(scope="module")
def torchrun_all(tmp_path_factory):
    return torchrun_against_bare(str(tmp_path_factory.mktemp("all") / "out"))


@pytest.fixture(scope="module")
def torchrun_rank1(tmp_path_factory):
    return torchrun_against_bare(str(tmp_path_factory.mktemp("rank1") / "out"), "--ranks", "1")


@pytest.mark.xdist_group("multiprocess")
def test_torchrun_each_rank_profiles_itself_and_the_agent_never(torchrun_all):
    out, result = torchrun_all.out, torchrun_all.profiled
    torchrun_all.assert_same(("stdout", rank_lines))  # the results bit-identical per rank
    host = names.host()
    traces = trace_names(out)
    assert len(traces) == 2
    assert [n.startswith(f"{host}_rank0_pid") for n in traces].count(True) == 1, traces
    assert [n.startswith(f"{host}_rank1_pid") for n in traces].count(True) == 1, traces
    records = status_records(out)
    assert sorted(r["rank"] for r in records) == [0, 1]
    for record in records:
        assert record["state"] == "done" and record["steps"] == 6 and record["windows_completed"] == 1
        assert record["argv"][0] == DDP, "only the workers have a status record"
    assert step_counts(out) == [1, 1]
    (agent,) = idle_tally(out)  # the agent loaded the hook, imported torch and never stepped
    assert agent["argv"][0].endswith(os.path.join("torch", "distributed", "run.py")) and agent["rank"] is None
    assert "2 processes profiled" in result.stderr


@pytest.mark.xdist_group("multiprocess")
def test_torchrun_ranks_filter_leaves_other_ranks_without_a_profiler(torchrun_rank1):
    out, result = torchrun_rank1.out, torchrun_rank1.profiled
    torchrun_rank1.assert_same(("stdout", rank_lines))
    (name,) = trace_names(out)
    assert name.startswith(f"{names.host()}_rank1_pid")
    by_rank = {r["rank"]: r for r in status_records(out)}
    assert sorted(by_rank) == [0, 1]
    assert by_rank[1]["state"] == "done" and by_rank[1]["windows_completed"] == 1
    # Rank 0 stepped, found itself outside --ranks and never built a profiler.
    assert by_rank[0]["state"] == "off" and by_rank[0]["backend"] is None and by_rank[0]["traces"] == []
    code, report = check_json(out)
    assert [p["rank"] for p in report["processes"]] == [1]
    # The rank left out is named as such, not lost.
    assert report["left_out"] == {"ranks": [0], "processes": 1, "option": "--ranks 1"}
    assert "  rank 0 (1 process): left out by --ranks 1, stepped without a profiler" in result.stderr


@pytest.mark.xdist_group("multiprocess")
def test_env_only_script_profiles_exactly_as_the_prefix(torchrun_rank1, tmp_path):
    """The README's one line, pasted before the torchrun line of an existing launch script."""
    prefix_out, prefix = torchrun_rank1.out, torchrun_rank1.profiled
    launch = tmp_path / "launch.sh"
    launch.write_text(
        "#!/bin/sh\n"
        "set -e\n"
        'eval "$(npuprof-run --print-env --ranks 1 --output-dir envout)"\n'
        f"torchrun --standalone --nproc_per_node 2 {DDP}\n"
    )
    env = clean_env(PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    result = subprocess.run(
        ["sh", str(launch)], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300
    )
    assert_ok(result)
    out = str(tmp_path / "envout")
    assert rank_lines(result.stdout) == rank_lines(prefix.stdout)
    assert [re.sub(r"_pid\d+\.\d+", "", n) for n in trace_names(out)] == [
        re.sub(r"_pid\d+\.\d+", "", n) for n in trace_names(prefix_out)
    ]
    assert step_counts(out) == step_counts(prefix_out)

    def comparable(record: dict) -> tuple:
        opts = dict(record["options"])
        opts.pop("output-dir")
        return (
            record["rank"],
            record["state"],
            record["steps"],
            record["window_steps"],
            record["windows_completed"],
            opts,
        )

    assert sorted(map(comparable, status_records(out))) == sorted(map(comparable, status_records(prefix_out)))
    code, report = check_json(out)
    assert code == 0 and [p["rank"] for p in report["processes"]] == [1], report


def test_print_env_exports_a_flag_that_overrides_the_environment():
    """The prefix exports the resolved value; so must the lines, or the script keeps the old one."""
    result = npuprof(["--print-env", "--active", "1"], env=clean_env(NPU_PROF_ACTIVE="3"))
    assert_ok(result)
    assert f"export {options.BY_NAME['active'].env}=1" in result.stdout.splitlines()


@pytest.mark.xdist_group("multiprocess")
@pytest.mark.parametrize(
    ("method", "extra"),
    [("fork", ["--new-loader-at", "3"]), ("spawn", []), ("forkserver", [])],
)
def test_dataloader_workers_never_profile(out, method, extra):
    # Window at steps 3-5; with fork, new workers are forked after step 3, while it records. The job's
    # results are those it makes with no worker at all.
    job = [LOADER, "--workers", "2", "--start-method", method, *extra]
    options = ["--skip-first", "2", "--active", "3"]
    result = profiled_against_bare(job, options, out=out, bare_job=[LOADER, "--workers", "0"]).profiled
    workers = dict(re.findall(r"^worker (\d+) records: (\S+)$", result.stderr, re.MULTILINE))
    assert len(workers) >= 2, result.stderr
    assert "yes" not in workers.values(), f"a worker recorded into an inherited profiler: {workers}"
    if method == "fork":
        assert "no" in workers.values(), f"no worker was forked while the window recorded: {workers}"
    (record,) = status_records(out)
    assert str(record["pid"]) not in workers and record["argv"][0] == LOADER
    assert record["window_steps"] == [3, 5] and record["windows_completed"] == 1
    assert step_counts(out) == [3]
    # A spawned worker that imported torch is counted apart, as a data-loader worker, never as a
    # process meant to step (a forked one leaves through os._exit and writes nothing).
    assert all(line.get("worker") == "data_loader" for line in idle_tally(out) if str(line["pid"]) in workers)


def test_a_child_that_never_steps_writes_no_trace_and_no_record(out):
    result = npuprof(["--output-dir", out, "--", sys.executable, DDP, "--child"])
    assert_ok(result)
    (record,) = status_records(out)
    assert record["argv"][0] == DDP
    assert len(torch_traces(out)) == 1
    # The `python -c` child loaded the hook and imported torch (it is in the idle tally), nothing more.
    (child,) = idle_tally(out)
    assert child["argv"][0] == "-c" and child["pid"] != record["pid"]


def test_torchelastic_restart_keeps_the_first_attempts_output(out):
    command = [*TORCHRUN, "--nproc_per_node", "1", "--max-restarts", "1", DDP, "--fail-once"]
    result = npuprof(["--output-dir", out, "--", *command])
    assert_ok(result)
    assert len(rank_lines(result.stdout)) == 2, "the worker ran twice: failed once, then restarted"
    names = trace_names(out)
    assert len(names) == 2
    assert [n for n in names if "_restart1." in n] and [n for n in names if "_restart" not in n], names
    assert step_counts(out) == [1, 1]
    assert sorted(r["worker"].endswith("_restart1") for r in status_records(out)) == [False, True]
    # The two attempts are one run, shown apart (in order) and never compared: their rank 0s are no slow rank.
    assert sorted(r["attempt"] for r in status_records(out)) == [0, 1]
    code, report = check_json(out)
    assert [(p["attempt"], p["rank"]) for p in report["processes"]] == [(0, 0), (1, 0)]
    (run,) = report["runs"]
    assert run["attempts"] == [0, 1] and run["processes"] == 2
    assert report["job"]["slow_ranks"] == [] and report["job"]["processes"] == 2
    assert "2 attempts (torchelastic restarts" in result.stderr


@pytest.mark.xdist_group("multiprocess")
def test_a_rank_that_raises_is_named_first_and_the_others_told_after_it(out):
    """Rank 1 raises after step 6; rank 0 then loses its peer in a collective (or torchrun stops it):
    the answer names rank 1, its step and its exception, and tells rank 0's end as following it."""
    command = [*TORCHRUN, "--nproc_per_node", "2", DDP, "--steps", "10", "--raise-on", "1:6"]
    result = npuprof(["--skip-first", "1", "--active", "2", "--output-dir", out, "--", *command])
    assert result.returncode == 1, result.stderr[-2000:]
    assert "rank 1 " in result.stderr.split("npuprof: findings:", 1)[1].splitlines()[1]
    code, report = check_json(out)
    assert code == 0, report["problems"]  # the job failed after its windows: the profile is whole
    (raised,) = [one for one in report["findings"] if one["kind"] == "failed"]
    first = raised["evidence"]["first"]
    assert (first["rank"], first["step"], first["type"]) == (1, 6, "RuntimeError"), raised
    assert first["message"] == "bad batch on rank 1 at step 6" and raised["steps"] == [6]
    # Rank 0 raised after it (gloo: "Connection closed by peer"), or torchrun's SIGTERM ended it
    # without its handlers: either way it is told in the item, after rank 1, and nowhere else.
    later = [one for one in raised["evidence"]["processes"] if one["rank"] == 0]
    unhandled = raised["evidence"].get("ended_without_handlers") or []
    assert [one["after_s"] >= 0 for one in later] == [True] or [one["rank"] for one in unhandled] == [0], raised
    assert not [one for one in report["notes"] if one["kind"] == "ended_without_handlers"], report["notes"]


@pytest.mark.xdist_group("multiprocess")
def test_a_rank_killed_by_a_signal_is_named_from_torchrun_s_account(out):
    """Rank 1 dies of SIGKILL after step 6, inside its window (an out-of-memory kill writes nothing as
    it dies): torchrun's agent saw it, and the answer names it first, before rank 0's exception or
    stop, and as the reason its window was cut."""
    command = [*TORCHRUN, "--nproc_per_node", "2", DDP, "--steps", "10", "--kill-on", "1:6"]
    result = npuprof(["--skip-first", "4", "--active", "4", "--output-dir", out, "--", *command])
    assert result.returncode == 1, result.stderr[-2000:]
    code, report = check_json(out)
    (failed,) = [one for one in report["findings"] if one["kind"] == "failed"]
    (died,) = failed["evidence"]["died"]
    assert (died["rank"], died["signal"], died["exitcode"]) == (1, "SIGKILL", -9), failed
    assert failed["text"].startswith("rank 1 died of SIGKILL after step "), failed["text"]
    # Its window was cut: the reason is its own end, not torchrun's "exited with status 1".
    (cut,) = [one for one in report["problems"] if one["kind"] == "window_incomplete" and 1 in one["ranks"]]
    assert code == 1 and "it died of SIGKILL (its launcher's account)" in cut["text"], cut["text"]


def test_a_second_run_into_the_same_output_dir_overwrites_nothing(out):
    first = npuprof(["--output-dir", out, "--", sys.executable, DDP])
    assert_ok(first)
    (kept,) = torch_traces(out)
    with open(kept, "rb") as handle:
        before = handle.read()
    second = npuprof(["--output-dir", out, "--", sys.executable, DDP])
    assert_ok(second)
    assert len(torch_traces(out)) == 2 and len(status_records(out)) == 2
    with open(kept, "rb") as handle:
        assert handle.read() == before
    assert "1 process profiled" in second.stderr, "the launcher reports its own run only"
    # --check reports the latest run and names the first, which --run chooses (never the two merged).
    code, report = check_json(out)
    first_run, second_run = report["runs"]
    assert len(report["processes"]) == 1 and report["run_id"] == second_run["run_id"]
    code, report = check_json(out, "--run", first_run["run_id"])
    assert [p["run_id"] for p in report["processes"]] == [first_run["run_id"]]


@pytest.mark.parametrize(
    ("rank_env", "ranks", "rank"),
    [
        ({"SLURM_PROCID": "3"}, "3", 3),  # srun
        ({"PMI_RANK": "5", "SLURM_PROCID": "4"}, "5", 5),  # Intel MPI / MPICH under Slurm
        ({"OMPI_COMM_WORLD_RANK": "2", "PMI_RANK": "5"}, "2", 2),  # Open MPI
        ({"RANK": "1", "OMPI_COMM_WORLD_RANK": "2"}, "1", 1),  # torchrun, DeepSpeed
        ({}, "0", None),  # no launcher: rank 0 for --ranks, named without a rank
    ],
)
def test_rank_comes_from_the_first_launcher_variable(out, rank_env, ranks, rank):
    env = env_without_ranks(**rank_env)
    result = npuprof(["--ranks", ranks, "--output-dir", out, "--", sys.executable, DDP, "--steps", "3"], env=env)
    assert_ok(result)
    (record,) = status_records(out)
    assert record["rank"] == rank and record["state"] == "done"
    (name,) = trace_names(out)
    assert name.startswith(f"{names.host()}_pid" if rank is None else f"{names.host()}_rank{rank}_pid")


def test_a_rankless_process_is_rank_0_for_the_filter(out):
    env = env_without_ranks()
    result = npuprof(["--ranks", "1", "--output-dir", out, "--", sys.executable, DDP, "--steps", "3"], env=env)
    assert_ok(result)
    assert torch_traces(out) == []
    (record,) = status_records(out)
    assert record["state"] == "off" and record["rank"] is None


def test_rank_variable_order_is_the_documented_one():
    assert names.RANK_VARS == ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
    everything = {"RANK": "1", "OMPI_COMM_WORLD_RANK": "2", "PMI_RANK": "3", "SLURM_PROCID": "4"}
    for expected, var in enumerate(names.RANK_VARS, start=1):
        assert names.rank_from_env(everything) == (expected, var)
        del everything[var]
    assert names.rank_from_env(everything) == (None, None)


def test_sigterm_in_a_forked_child_spares_the_parents_record_and_is_default_after_the_window(out):
    job = script("fork_in_window.py")
    result = npuprof(["--skip-first", "2", "--active", "3", "--output-dir", out, "--", sys.executable, job])
    assert_ok(result)
    assert result.stdout.splitlines() == [
        "child ended by signal 15",
        "parent record: running",
        "SIGTERM after the window: default",
    ]
    (record,) = status_records(out)
    assert record["state"] == "done" and record["windows_completed"] == 1
