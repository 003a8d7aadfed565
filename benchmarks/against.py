"""Figure 2a of run.py for several checkouts at once, on this machine: ``python benchmarks/against.py A B ...``.

A figure measured on another machine is no baseline (the same one-scalar step took 20 us on one
VM and 43 us on another), so a change to the step clock is judged against the code before it,
here and now: each path is a checkout (``git worktree add /tmp/before <commit>``), and each round
runs every checkout's own ``benchmarks/job.py --workload tiny`` once, in an order that rotates,
with that checkout's hook. Each run gives the median of its attached - detached pairs; the
figure is the median of those over the rounds, with its control beside it. The checkouts share
this environment's Python and torch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ENV_OF = (
    "import json, sys; sys.path.insert(0, 'benchmarks'); import run; "
    "print(json.dumps(run.tool_env('{out}', skip_first=run.NEVER)))"
)


def tool_env(checkout: str, out: str) -> dict[str, str]:
    """The environment that checkout's own launcher gives a job, its package first on the path."""
    code = ENV_OF.format(out=out)
    env = {**os.environ, "PYTHONPATH": checkout}
    printed = subprocess.run([sys.executable, "-c", code], cwd=checkout, env=env, capture_output=True, text=True)
    printed.check_returncode()
    job_env = json.loads(printed.stdout)
    job_env["PYTHONPATH"] = job_env["PYTHONPATH"] + os.pathsep + checkout
    return job_env


#: run.py's two step-clock workloads: the one-scalar SGD step, and the small MLP's training step.
BLOCKS = {"tiny": 1000, "train": 40}


def one_run(checkout: str, env: dict[str, str], rounds: int, workload: str) -> tuple[float, float]:
    job = os.path.join(checkout, "benchmarks", "job.py")
    block = str(BLOCKS[workload])
    argv = [sys.executable, job, "--workload", workload, "--steps", "10", "--block", block, "--rounds", str(rounds)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    done.check_returncode()
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result.get("clock_state") != "waiting":
        raise SystemExit(f"{checkout}: the clock is {result.get('clock_state')!r}, not waiting outside a window")
    cost = statistics.median(a - d for a, d in zip(result["attached_us"], result["detached_us"]))
    control = statistics.median(c - d for c, d in zip(result["control_us"], result["detached_us"]))
    return cost, control


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="+", help="paths of checkouts of this project")
    parser.add_argument("--rounds", type=int, default=6, help="runs of each checkout (default 6)")
    parser.add_argument("--blocks", type=int, default=100, help="rounds of three blocks in each run (default 100)")
    parser.add_argument("--workload", choices=sorted(BLOCKS), default="tiny", help="the step timed (default tiny)")
    args = parser.parse_args(argv)
    checkouts = [os.path.abspath(path) for path in args.checkouts]
    if len(set(checkouts)) != len(checkouts):
        parser.error("name each checkout once")
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), "npuprof_against")
    envs = {path: tool_env(path, out) for path in checkouts}
    costs: dict[str, list[tuple[float, float]]] = {path: [] for path in checkouts}
    for index in range(args.rounds):
        for path in checkouts[index % len(checkouts) :] + checkouts[: index % len(checkouts)]:
            costs[path].append(one_run(path, envs[path], args.blocks, args.workload))
    for path in checkouts:
        figure = statistics.median(cost for cost, _ in costs[path])
        control = statistics.median(control for _, control in costs[path])
        runs = ", ".join(f"{cost:+.2f}" for cost, _ in costs[path])
        print(f"{path}: {figure:+.2f} us per optimizer.step (control {control:+.2f}); runs {runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
