"""Processes that imported torch and never stepped, counted true: the children of Python's
multiprocessing (mp.spawn's RPC agents, a spawned DataLoader's workers) apart from the processes
meant to step, and none invented. Each job's stdout is the bare run's."""

from __future__ import annotations

import socket

from answers import check_json
from compare import profiled_against_bare
from jobs import clean_env, script


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_rpc_agents_under_mp_spawn_are_counted_apart(tmp_path):
    """mp.spawn of 3 RPC processes: rank 0 steps; the spawning process imported torch and never
    stepped (told); ranks 1 and 2 only serve (counted apart: "1 other process ... (besides 2
    multiprocessing workers, not meant to)"). Before, the workers went uncounted: "1 other"."""
    out = str(tmp_path / "out")
    options = ["--output-dir", out, "--skip-first", "2", "--active", "2"]
    env, bare_env = (clean_env(MASTER_PORT=str(free_port())) for _ in range(2))  # a port each
    result = profiled_against_bare([script("rpc_spawn.py")], options, env=env, bare_env=bare_env).profiled
    code, report = check_json(out)
    assert code == 0 and report["idle_processes"] == 1 and report["idle_workers"] == {"multiprocessing": 2}
    assert "1 other process imported torch but never stepped (besides 2 multiprocessing workers" in result.stderr
    # torch's own line about RPC under a profiler, told in the answer (rank 0's window began at step 3)
    (rpc,) = [note for note in report["notes"] if note["kind"] == "rpc_caller_only"]
    assert rpc["steps"] == [3] and "caller's side only" in rpc["text"]


def test_a_spawned_data_loader_s_workers_are_no_news_in_a_healthy_answer(tmp_path):
    out = str(tmp_path / "out")
    options = ["--output-dir", out, "--skip-first", "2", "--active", "2"]
    result = profiled_against_bare([script("spawn_loader.py")], options).profiled
    code, report = check_json(out)
    assert code == 0 and report["idle_processes"] == 0 and report["idle_workers"] == {"data_loader": 2}
    assert all(note["kind"] != "rpc_caller_only" for note in report["notes"])  # no RPC agent, no word of it
    assert "never stepped" not in result.stderr and "worker" not in result.stderr
