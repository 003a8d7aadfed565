"""How far the job's answer can be trusted, from real runs: ``python benchmarks/findings.py``.

Every run is real: npuprof-run around torchrun (gloo on the CPU) around findings_job.py, and the
verdict is the one a user reads, ``npuprof-run --check DIR --json``. Two rates come out:

* false findings: healthy runs (2, 4 and 8 alike ranks; in lockstep (DDP) and alone; steps of
  0.5, 5 and 50 ms; with and without a busy process beside the job), the window early, so that
  the tool's own steps and its aftercare fall among the job's. Goal: no slow rank and no spike.
  Slowdowns found are counted apart.
* detection: injected faults on 50 ms steps (one rank sleeping 10 %, 30 % and 100 % of a step
  in every step; one 10x step on one rank; every rank 1.5x slower from step 20 on), found with
  the right rank or step (a slowdown within 2 steps). Goal: 95 % at least. The window comes after the faults'
  steps here, so that a fault is not beside the tool's aftercare (that case is told undecidable
  by design: findings.spike_beside_aftercare).
* one-step windows, as a spike's suggested run records: healthy DDP runs (no rank may be named) and
  a 10x step 10 on rank 1 (its run must say the others waited for rank 1: job.waited_for).

``--quick`` runs a small subset (a few runs), for the tests; ``--only NAME,...`` the runs named.
On a busy 2-core machine a run takes 20-60 s (8 ranks import torch on 2 cores).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "findings_job.py")
PYTHON = sys.executable
HOG = "while True: pass"

#: Healthy runs: the window early (steps 3-5), as a user's first run has it.
HEALTHY_SCHEDULE = ["--skip-first", "2", "--active", "3"]
#: Faulty runs: 40 steps, the window late (steps 35-37), the faults before it.
FAULT_SCHEDULE = ["--skip-first", "34", "--active", "3"]
FAULT_STEPS = 40
#: A spike's suggested run: one recorded step, on the spike (rank 1's 10x step 10) or on a healthy
#: job's step; the answer is whom that step waited for (job.waited_for), or nothing.
ONE_STEP_SCHEDULE = ["--skip-first", "9", "--active", "1"]
#: Faults on steps of 50 ms: at 20 ms a 10 % sleep (2 ms) was within what a busy 2-core machine
#: does to a step, and the per-step test rightly found no rank standing out.
FAULT_STEP_MS = 50.0


def healthy_cases() -> list[dict]:
    cases = []
    for ranks in (2, 4, 8):
        for ddp in (False, True):
            for step_ms in (0.5, 5.0, 50.0):
                for hog in (False, True):
                    name = f"healthy-{ranks}r-{'ddp' if ddp else 'alone'}-{step_ms:g}ms{'-hog' if hog else ''}"
                    steps = 20 if step_ms >= 50 else 30
                    cases.append(
                        {"name": name, "ranks": ranks, "ddp": ddp, "hog": hog, "steps": steps, "step_ms": step_ms}
                    )
    return cases


def fault_cases() -> list[dict]:
    cases = []
    for hog in (False, True):
        tail = "-hog" if hog else ""
        for frac in (0.1, 0.3, 1.0):
            for ranks in (2, 4):
                cases.append(
                    {
                        "name": f"slow-{ranks}r-alone-{frac:g}{tail}",
                        "ranks": ranks,
                        "ddp": False,
                        "hog": hog,
                        "job": ["--slow-rank", "1", "--slow-frac", str(frac)],
                        "expect": ("slow_rank", 1),
                    }
                )
            cases.append(
                {
                    "name": f"slow-4r-ddp-{frac:g}{tail}",
                    "ranks": 4,
                    "ddp": True,
                    "hog": hog,
                    "job": ["--slow-rank", "2", "--slow-frac", str(frac)],
                    "expect": ("slow_rank", 2),
                }
            )
        for ddp in (False, True):
            mode = "ddp" if ddp else "alone"
            cases.append(
                {
                    "name": f"spike-4r-{mode}{tail}",
                    "ranks": 4,
                    "ddp": ddp,
                    "hog": hog,
                    "job": ["--spike-rank", "1", "--spike-step", "20"],
                    "expect": ("spike", 20),
                }
            )
            cases.append(
                {
                    "name": f"slowdown-4r-{mode}{tail}",
                    "ranks": 4,
                    "ddp": ddp,
                    "hog": hog,
                    "job": ["--slowdown-step", "20", "--slowdown-factor", "1.5"],
                    "expect": ("slowdown", 20),
                }
            )
    for case in cases:
        case.update(steps=FAULT_STEPS, step_ms=FAULT_STEP_MS)
    return cases


def one_step_cases() -> list[dict]:
    cases = []
    for ranks in (2, 4):
        for step_ms in (5.0, 50.0):
            for hog in (False, True):
                name = f"{ranks}r-ddp-{step_ms:g}ms-one-step{'-hog' if hog else ''}"
                common = {"ranks": ranks, "ddp": True, "hog": hog, "steps": 16, "step_ms": step_ms}
                cases.append({"name": f"healthy-{name}", **common, "schedule": ONE_STEP_SCHEDULE})
                spike = ["--spike-rank", "1", "--spike-step", "10"]
                cases.append({"name": f"spike-{name}", **common, "schedule": ONE_STEP_SCHEDULE, "job": spike})
                cases[-1]["expect"] = ("waited_for", 1)
    return cases


#: The quick subset: a fault clear of a loaded machine's jitter on 50 ms steps (a rank sleeping a
#: whole step more), so that the test that runs it holds on a busy 2-core machine.
QUICK = ("healthy-2r-alone-5ms", "slow-2r-alone-1")


@contextlib.contextmanager
def hog(on: bool):
    """A process that keeps one core busy beside the job, when ``on``."""
    if not on:
        yield
        return
    busy = subprocess.Popen([PYTHON, "-c", HOG])
    try:
        yield
    finally:
        busy.kill()
        busy.wait()


def run_case(case: dict, scratch: str) -> dict:
    """One real run and its verdict: the job object of ``--check --json``."""
    out = os.path.join(scratch, case["name"])
    torchrun = [PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(case["ranks"])]
    job = [JOB, "--steps", str(case["steps"]), "--step-ms", str(case["step_ms"]), *case.get("job", [])]
    if case["ddp"]:
        job.append("--ddp")
    schedule = case.get("schedule") or (FAULT_SCHEDULE if "expect" in case else HEALTHY_SCHEDULE)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT")}
    env["OMP_NUM_THREADS"] = "1"
    started = time.monotonic()
    with hog(case["hog"]):
        ran = subprocess.run(
            [PYTHON, "-m", "npuprof_launch", *schedule, "--output-dir", out, "--", *torchrun, *job],
            env=env,
            capture_output=True,
            text=True,
        )
    seconds = time.monotonic() - started
    check = subprocess.run(
        [PYTHON, "-m", "npuprof_launch", "--check", out, "--json"], env=env, capture_output=True, text=True
    )
    try:
        report = json.loads(check.stdout)
    except json.JSONDecodeError:
        report = {"job": {}, "problems": [f"--check printed no JSON: {check.stderr[-300:]}"]}
    # The answer's problems are items (schema version 2): their sentences, for this table's last column.
    problems = [p["text"] if isinstance(p, dict) else p for p in report.get("problems") or ()]
    if ran.returncode != 0:
        problems.append(f"the run exited {ran.returncode}: {ran.stderr[-300:]}")
    return {"case": case, "job": report.get("job") or {}, "problems": problems, "s": seconds}


def judge(result: dict) -> tuple[str, str]:
    """("ok" | "FALSE" | "found" | "MISSED" | "ERROR", what the answer said)."""
    case, job = result["case"], result["job"]
    slow = [s.get("rank") for s in job.get("slow_ranks") or ()]
    spikes = [s.get("step") for s in job.get("spikes") or ()]
    slowdowns = [s.get("step") for s in job.get("slowdowns") or ()]
    waited = [s.get("rank") for s in job.get("waited_for") or ()]
    said = f"slow {slow or '-'}, spikes {spikes or '-'}, slowdowns {slowdowns or '-'}, waited for {waited or '-'}"
    if not job:
        return "ERROR", "; ".join(result["problems"])[:200]
    if "expect" not in case:
        return ("FALSE" if slow or spikes or waited else "ok"), said
    kind, value = case["expect"]
    if kind == "slow_rank":
        hit = slow[:1] == [value]
    elif kind == "waited_for":
        hit = waited == [value]
    elif kind == "spike":
        hit = value in spikes
    else:
        hit = any(abs(step - value) <= 2 for step in slowdowns)
    return ("found" if hit else "MISSED"), said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small subset: " + ", ".join(QUICK))
    parser.add_argument("--only", default="", help="comma-separated run names")
    parser.add_argument("--json", help="write every run's verdict to this file")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the busy process beside a run is ended
    cases = healthy_cases() + fault_cases() + one_step_cases()
    chosen = set(QUICK) if args.quick else {name for name in args.only.split(",") if name}
    if chosen:
        cases = [case for case in cases if case["name"] in chosen]
    results = []
    with tempfile.TemporaryDirectory(prefix="npuprof-findings-") as scratch:
        for case in cases:
            result = run_case(case, scratch)
            result["verdict"], result["said"] = judge(result)
            results.append(result)
            print(f"{case['name']:32} {result['verdict']:7} {result['s']:5.1f} s  {result['said']}", flush=True)
    healthy = [r for r in results if "expect" not in r["case"]]
    faults = [r for r in results if "expect" in r["case"]]
    false_slow = sum(1 for r in healthy if r["job"].get("slow_ranks"))
    false_spikes = sum(1 for r in healthy if r["job"].get("spikes"))
    false_waits = sum(1 for r in healthy if r["job"].get("waited_for"))
    slowdowns = sum(1 for r in healthy if r["job"].get("slowdowns"))  # main's slowdowns.py, counted apart
    errors = sum(1 for r in results if r["verdict"] == "ERROR")
    found = sum(1 for r in faults if r["verdict"] == "found")
    if healthy:
        print(
            f"false findings: {false_slow} slow-rank, {false_spikes} spike and {false_waits} waited-for findings in "
            f"{len(healthy)} healthy runs ({slowdowns} with a slowdown)  "
            f"[goal 0: {'met' if not false_slow + false_spikes + false_waits else 'MISSED'}]"
        )
    if faults:
        rate = found / len(faults)
        print(
            f"detection: {found} of {len(faults)} injected faults found with the right rank or step ({rate:.0%})  "
            f"[goal >= 95 %: {'met' if rate >= 0.95 else 'MISSED'}]"
        )
    if errors:
        print(f"{errors} runs gave no verdict (see ERROR above)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump([{k: r[k] for k in ("case", "job", "verdict", "said", "s")} for r in results], handle, indent=1)


if __name__ == "__main__":
    main()
