"""Output on slow storage (an NFS or Lustre mount, an object store under load): the tool's own
record writing is not named a spike of the job.

The status record is written at steps 1, 2, 4, 8, ... and then every few seconds; on slow storage
each write waits, and the step after it holds the wait. The session times each checkpoint and the
report judges that step without it. The storage is benchmarks/slowfs.py, a real FUSE mount whose
every write and file creation waits (root and /dev/fuse; skipped elsewhere).
"""

from __future__ import annotations

import os
import sys

import pytest
from answers import answer_json
from jobs import ROOT, assert_ok, npuprof, script
from outputs import status_records

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import slowfs  # noqa: E402

#: Every write and file creation of the output directory waits this long: a checkpoint (create,
#: write, rename; the step times' append) waits several times it, many times the job's step.
LATENCY_MS = 100
#: Steps of 50 ms: the job's own stalls on a loaded machine stay well under a spike (150 ms).
STEP_S = 0.05


def test_the_steps_that_held_the_record_writing_on_slow_storage_are_no_spikes_of_the_job(tmp_path):
    why = slowfs.unavailable()
    if why:
        pytest.skip(f"no slow filesystem here: {why}")
    backing, mountpoint = tmp_path / "backing", tmp_path / "slow"
    backing.mkdir()
    mountpoint.mkdir()
    out = str(mountpoint / "prof")
    job = [sys.executable, script("train_loop.py"), "--steps", "40", "--sleep", str(STEP_S)]
    with slowfs.mounted(str(backing), str(mountpoint), latency_ms=LATENCY_MS, mbps=50):
        result = npuprof(["--skip-first", "36", "--active", "1", "--output-dir", out, "--", *job], timeout=600)
        assert_ok(result)
        (record,) = status_records(out)
        check = npuprof(["--check", out, "--json"])
    report = answer_json(check.stdout)
    held = {step: seconds for step, seconds in record["checkpoint_s"]}
    # Steps 1, 2, 4, 8, 16 and 32 end with a checkpoint; its writing is in the step after.
    assert {5, 9, 17, 33} <= set(held), record["checkpoint_s"]
    assert all(held[step] >= LATENCY_MS / 1e3 for step in (5, 9, 17, 33)), record["checkpoint_s"]
    job_report = report["job"]
    named = [spike["step"] for spike in job_report["spikes"]]
    assert not {5, 9, 17, 33} & set(named), (named, record["checkpoint_s"])
    told = [spike["step"] for spike in job_report["tool_steps"]["checkpoint_spikes"]]
    assert {5, 9, 17, 33} <= set(told), job_report["tool_steps"]
    (writing,) = [note for note in report["notes"] if note["kind"] == "record_steps"]
    assert {5, 9, 17, 33} <= set(writing["steps"]) and "held the tool's own record writing" in writing["text"]
    assert "record writes" in result.stderr, "told apart in the line of counts"
