"""The job's answer from NPU data: HCCL's operations, as the torch_npu stand-in writes them from the
job's real collectives (tests/standin/README.md), feed the same per-collective judge as gloo's and
NCCL's (launcher/collectives.py), and the recorded steps, window labels and time in communication
come from the session's step times (step_trace_time.csv, or analysis.db's StepTraceTime for the db
export), as a torch trace gives them on CPU. The db export here (COMMUNICATION_OP, STEP_TIME); the
text export's reader has unit tests (tests/unit/test_hccl_reading.py).

Not held yet: that the judge names the slower rank from these operations. The stand-in's ops are
gloo's work ranges, whose start for a step's later DDP buckets is the end of the bucket before on
every rank alike (common/tracecollectives.py): with tests/scripts/slow_rank_ddp.py's rank 2 on 4
times the batch, no rank was the last in more rounds than chance allows. (Starting each op at the
rank's call instead, as a device stream would, did not name it either, and made the stand-in's
own per-op test weaker: rank 2 waited least in 8 of 16 ops where it had in 14-15.)"""

from __future__ import annotations

import sys

import pytest
from answers import check_json
from jobs import assert_ok, npuprof, script
from npu_standin import standin_env

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "4"]


@pytest.mark.xdist_group("npu_findings")
def test_hccl_operations_feed_the_judge_and_the_steps_are_counted_from_npu_data(tmp_path):
    out = str(tmp_path / "out")
    env = standin_env(str(tmp_path / "calls.jsonl"), OMP_NUM_THREADS="1")
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(var, None)
    job = [*TORCHRUN, script("uneven_ddp.py"), "--extra", "1.0", "--steps", "20"]
    flags = ["--backend", "npu", "--export-type", "db", "--skip-first", "3", "--active", "14"]
    assert_ok(npuprof([*flags, "--output-dir", out, "--", *job], env=env))
    code, report = check_json(out)
    assert code == 0, report["problems"]
    verdict = report["job"]["slow_rank_verdict"]
    assert verdict["rule"] == "per_collective" and verdict["rounds"] >= 13, verdict  # HCCL's ops, matched
    assert verdict["collectives"] == 8 * 14, "the DDP job's 8 buckets a step, on every rank alike"
    for process in report["processes"]:  # the NPU's own account of its steps, as a torch trace gives it
        assert process["profiler_steps"] == 14 and process["window_label"] == "steps 4-17", process
        assert 0 < process["collective_s"] < process["window_s"], process
