"""Training inside a Ray actor is profiled in the actor process, and only there.

Marked ``ray`` and deselected by default (pyproject.toml): Ray is a large install and a local
cluster takes seconds to start. Run with ``python -m pytest -q -m ray`` after
``pip install torch==2.13.0 -e '.[ray]'``.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
from compare import profiled_against_bare
from jobs import assert_ok, clean_env, npuprof, python, script
from outputs import status_records, torch_traces

pytestmark = pytest.mark.ray
RAY_JOB = script("ray_train.py")


def test_ray_actor_that_trains_writes_the_one_trace_into_the_users_relative_dir(tmp_path):
    pytest.importorskip("ray", reason="install the ray extra: pip install torch==2.13.0 -e '.[ray]'")
    working_dir = tmp_path / "job_files"
    working_dir.mkdir()
    (working_dir / "README").write_text("shipped to the actor by runtime_env working_dir\n")
    env = clean_env(RAY_USAGE_STATS_ENABLED="0")
    result = npuprof(
        ["--output-dir", "prof", "--", sys.executable, RAY_JOB, "--working-dir", str(working_dir)],
        cwd=str(tmp_path),
        env=env,
        timeout=600,
    )
    assert_ok(result)
    actor_pid, actor_cwd = re.search(r"^actor pid (\d+) cwd (.+)$", result.stderr, re.MULTILINE).groups()
    assert os.path.realpath(actor_cwd) != os.path.realpath(tmp_path), "Ray ran the actor in its own directory"

    out = str(tmp_path / "prof")
    assert len(torch_traces(out)) == 1
    (record,) = status_records(out)
    assert record["pid"] == int(actor_pid) and record["state"] == "done"
    if record["ended"] is None:
        # ray.shutdown stops the raylet, and an actor that sees it gone leaves by _exit: its exit
        # handlers run or not as that race goes (seen in CI). Its record then holds its last
        # checkpoint's count (steps 1, 2, 4, ...), and the summary the count of its step mark.
        assert record["steps"] == 4
        assert "ended without exit handlers; last known step 6" in result.stderr
    else:
        assert record["steps"] == 6
    assert torch_traces(str(tmp_path)) == torch_traces(out)
    assert not os.path.exists(os.path.join(actor_cwd, "prof")), "not resolved against the actor's directory"

    alone = python([script("ddp_train.py")])
    assert_ok(alone)
    loss, checksum = re.fullmatch(r"rank 0 loss (\S+) checksum (\S+)\n", alone.stdout).groups()
    assert result.stdout.splitlines() == [f"loss {loss}", f"checksum {checksum}"], "results unchanged"


def test_ray_train_workers_killed_by_ray_leave_true_records(tmp_path):
    """Ray Train ends its workers with ray.kill: no exit handler runs there, yet the records hold
    every step (written at steps 1, 2, 4, 8, ...) and the report says how they ended."""
    pytest.importorskip("ray.train", reason="install the ray extra: pip install torch==2.13.0 -e '.[ray]'")
    job = [script("ray_train_torchtrainer.py"), "--steps", "8"]
    env = clean_env(RAY_USAGE_STATS_ENABLED="0")
    out = str(tmp_path / "prof")
    result = profiled_against_bare(job, ["--skip-first", "2", "--active", "2"], out=out, env=env, timeout=600).profiled
    records = sorted(status_records(out), key=lambda r: r["rank"])
    assert [(r["rank"], r["rank_source"], r["steps"]) for r in records] == [
        (0, "torch.distributed", 8),
        (1, "torch.distributed", 8),
    ]
    assert all(r["windows"][0]["complete"] for r in records)
    assert "ended without exit handlers; last known step 8" in result.stderr
