"""Processes that imported torch and never stepped, counted true: the children of Python's
multiprocessing (mp.spawn's RPC agents, a spawned DataLoader's workers) apart from the processes
meant to step, and none invented. Each job's stdout is the bare run's."""

from __future__ import annotations

import socket

from answers import check_json
from jobs import PYTHON, bare_run, clean_env, npuprof, script


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_rpc_agents_under_mp_spawn_are_counted_apart(tmp_path):
    """mp.spawn of 3 RPC processes: rank 0 steps; the spawning process imported torch and never
    stepped (told); ranks 1 and 2 only serve (counted apart: "1 other process ... (besides 2
    multiprocessing workers, not meant to)"). Before, the workers went uncounted: "1 other"."""
    out = str(tmp_path / "out")
    env = clean_env(MASTER_PORT=str(free_port()))
    job = [PYTHON, script("rpc_spawn.py")]
    result = npuprof(["--output-dir", out, "--skip-first", "2", "--active", "2", "--", *job], env=env)
    assert result.returncode == 0, result.stderr
    env["MASTER_PORT"] = str(free_port())
    assert result.stdout == bare_run(job[1:], env=env).stdout
    code, report = check_json(out)
    assert code == 0 and report["idle_processes"] == 1 and report["idle_workers"] == {"multiprocessing": 2}
    assert "1 other process imported torch but never stepped (besides 2 multiprocessing workers" in result.stderr


def test_a_spawned_data_loader_s_workers_are_no_news_in_a_healthy_answer(tmp_path):
    out = str(tmp_path / "out")
    job = [PYTHON, script("spawn_loader.py")]
    result = npuprof(["--output-dir", out, "--skip-first", "2", "--active", "2", "--", *job])
    assert result.returncode == 0, result.stderr
    assert result.stdout == bare_run(job[1:]).stdout
    code, report = check_json(out)
    assert code == 0 and report["idle_processes"] == 0 and report["idle_workers"] == {"data_loader": 2}
    assert "never stepped" not in result.stderr and "worker" not in result.stderr
