"""Issue 3: training inside a Ray actor is profiled in the actor process, and only there.

Marked ``ray`` and deselected by default (pyproject.toml): Ray is a large install and a local
cluster takes seconds to start. Run with ``python -m pytest -q -m ray`` after
``pip install torch==2.13.0 -e '.[ray]'``.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
from conftest import assert_ok, clean_env, npuprof, python, script, status_records, torch_traces

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
    assert record["pid"] == int(actor_pid) and record["state"] == "done" and record["steps"] == 6
    assert torch_traces(str(tmp_path)) == torch_traces(out)
    assert not os.path.exists(os.path.join(actor_cwd, "prof")), "not resolved against the actor's directory"

    alone = python([script("ddp_train.py")])
    assert_ok(alone)
    loss, checksum = re.fullmatch(r"rank 0 loss (\S+) checksum (\S+)\n", alone.stdout).groups()
    assert result.stdout.splitlines() == [f"loss {loss}", f"checksum {checksum}"], "results unchanged"
