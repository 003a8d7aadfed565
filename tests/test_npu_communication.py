"""A 4-rank DDP job under npuprof-run --backend npu: its real collectives as the NPU data tells them.

The torch_npu stand-in (tests/standin/README.md) captures the job's gloo collectives while each
window records and writes them as torch_npu writes HCCL operations: communication.json,
communication_matrix.json, trace_view.json, step_trace_time.csv (text), COMMUNICATION_OP and
STEP_TIME in ascend_pytorch_profiler_{rank}.db and analysis.db's CommAnalyzerTime (db). Rank 2
computes several times more than the others (tests/scripts/slow_rank_ddp.py): the others wait for
it in every all-reduce, so its ops hold the shortest waits, in the text and in the db.
"""

from __future__ import annotations

import csv
import glob
import json
import os
import sqlite3
import sys

import pytest
from jobs import npuprof, script
from npu_standin import standin_env

RANKS = 4
SLOW = 2
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
UNEVEN = script("slow_rank_ddp.py")
OUTPUT = "ASCEND_PROFILER_OUTPUT"


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    base = tmp_path_factory.mktemp("npucomm")
    out = str(base / "out")
    flags = ["--backend", "npu", "--export-type", "text,db"]
    flags += ["--skip-first", "1", "--wait", "1", "--active", "2", "--repeat", "2"]
    job = [*TORCHRUN, "--nproc_per_node", str(RANKS), UNEVEN, "--steps", "8", "--slow-rank", str(SLOW)]
    job += ["--factor", "8"]
    result = npuprof(["--output-dir", out, *flags, "--", *job], env=standin_env(str(base / "calls.jsonl")))
    assert result.returncode == 0, result.stderr[-3000:]
    found: dict[int, list[str]] = {}
    for session in sorted(glob.glob(os.path.join(out, "*_ascend_pt"))):
        rank = int(os.path.basename(session).split("_rank")[1].split("_")[0])
        found.setdefault(rank, []).append(session)
    return found


def _communication(session: str) -> dict:
    with open(os.path.join(session, OUTPUT, "communication.json")) as handle:
        return json.load(handle)


def _ops(split: dict) -> dict:
    return {name: info for name, info in split["collective"].items() if name != "Total Op Info"}


def _steps(session: str) -> list[tuple[int, int, int]]:
    with sqlite3.connect(os.path.join(session, OUTPUT, f"ascend_pytorch_profiler_{_rank(session)}.db")) as db:
        return db.execute("SELECT id, startNs, endNs FROM STEP_TIME ORDER BY id").fetchall()


def _rank(session: str) -> int:
    return int(os.path.basename(session).split("_rank")[1].split("_")[0])


@pytest.mark.xdist_group("npu_sessions")
def test_every_window_holds_its_collectives_alike_on_every_rank(uneven):
    assert sorted(uneven) == list(range(RANKS)) and all(len(s) == 2 for s in uneven.values()), uneven
    for window in range(2):
        keys = {}
        for rank in range(RANKS):
            session = uneven[rank][window]
            comm = _communication(session)
            steps = _steps(session)
            assert [f"step{n}" for n, _, _ in steps] == list(comm), "one entry per recorded step"
            for (_, start_ns, end_ns), split in zip(steps, comm.values()):
                ops = _ops(split)
                assert ops, "DDP all-reduces its gradients in every step"
                for name, info in ops.items():
                    assert name.startswith("hcom_allReduce__") or name.startswith("hcom_broadcast__"), name
                    times = info["Communication Time Info"]
                    start_us = times["Start Timestamp(us)"]
                    assert start_ns / 1000 <= start_us <= end_ns / 1000, "the op's real time, inside its step"
                    assert times["Elapse Time(ms)"] > 0 and times["Wait Time(ms)"] >= 0
                    assert times["Elapse Time(ms)"] <= (end_ns - start_ns) / 1e6
            keys[rank] = {step: sorted(_ops(split)) for step, split in comm.items()}
            # the db holds the same ops: COMMUNICATION_OP in the rank's db, CommAnalyzerTime in analysis.db
            with sqlite3.connect(os.path.join(session, OUTPUT, f"ascend_pytorch_profiler_{rank}.db")) as db:
                names = db.execute(
                    "SELECT (SELECT value FROM STRING_IDS WHERE id = c.opName) FROM COMMUNICATION_OP c"
                ).fetchall()
            with sqlite3.connect(os.path.join(session, OUTPUT, "analysis.db")) as db:
                analysed = db.execute("SELECT hccl_op_name, group_name, step FROM CommAnalyzerTime").fetchall()
            in_steps = {f"{name}@{group}" for name, group, _ in analysed}
            assert in_steps == {name for ops in keys[rank].values() for name in ops}
            assert {name for name, _, _ in analysed} <= {row[0] for row in names}
            with open(os.path.join(session, OUTPUT, "trace_view.json")) as handle:
                trace = json.load(handle)
            processes = {e["pid"]: e["args"]["name"] for e in trace if e["name"] == "process_name"}
            hccl = {e["name"] for e in trace if e["ph"] == "X" and e["name"].startswith("hcom_")}
            assert {name.split("@")[0] for ops in keys[rank].values() for name in ops} <= hccl
            assert {e["pid"] for e in trace if e["name"] in hccl} == {
                pid for pid, name in processes.items() if name == "Communication"
            }
            with open(os.path.join(session, OUTPUT, "step_trace_time.csv")) as handle:
                rows = list(csv.DictReader(handle))
            assert [int(r["Step"]) for r in rows] == [n for n, _, _ in steps]
            assert all(float(r["Communication"]) > 0 for r in rows), "the step's real communication"
            for name in os.listdir(os.path.join(session, OUTPUT)):
                assert name != "communication_matrix.json" or os.path.getsize(os.path.join(session, OUTPUT, name))
        assert all(keys[rank] == keys[0] for rank in range(RANKS)), "the same ops, by name, on every rank"


@pytest.mark.xdist_group("npu_sessions")
def test_the_rank_that_computes_more_waits_least(uneven):
    text_waits, db_waits = {}, {}
    for rank in range(RANKS):
        text_waits[rank] = db_waits[rank] = 0.0
        for session in uneven[rank]:
            for split in _communication(session).values():
                text_waits[rank] += split["collective"]["Total Op Info"]["Communication Time Info"]["Wait Time(ms)"]
            with sqlite3.connect(os.path.join(session, OUTPUT, "analysis.db")) as db:
                db_waits[rank] += db.execute("SELECT SUM(wait_time) FROM CommAnalyzerTime").fetchone()[0]
    assert min(text_waits, key=text_waits.get) == SLOW, text_waits
    assert min(db_waits, key=db_waits.get) == SLOW, db_waits
    assert db_waits[SLOW] == pytest.approx(text_waits[SLOW]), "the db's waits are the text's"
    # op by op (the same op has the same name on every rank): the slow rank, the last to arrive,
    # waits least in most of them
    per_op: dict[str, dict[int, float]] = {}
    for rank in range(RANKS):
        for session in uneven[rank]:
            for split in _communication(session).values():
                for name, info in _ops(split).items():
                    per_op.setdefault(name, {})[rank] = info["Communication Time Info"]["Wait Time(ms)"]
    assert all(len(waits) == RANKS for waits in per_op.values())
    least = [min(waits, key=waits.get) for waits in per_op.values()]
    assert least.count(SLOW) > len(least) / 2, least
