"""The README's test command, timed, and where its time went: ``python benchmarks/suite.py [-- PYTEST ARGS]``.

The suite's target (12 minutes on this 2-core machine) is a figure like the others, measured here
and not asserted by a test. Beside the wall time it prints the CPU's use over the run (from
/proc/stat: the suite spends most of its time in subprocesses, so the CPU time of pytest itself
says little), each worker's busy time, the longest tests and the longest xdist groups (a group runs
on one worker: the longest one bounds the suite from below), and the tests still running when
the first worker ran out of work (the tail).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all CPUs since boot."""
    with open("/proc/stat") as handle:
        fields = [int(value) for value in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25, help="how many of the longest tests and groups to list")
    parser.add_argument("--keep", metavar="FILE", help="copy the timeline (a JSON line a test) to FILE")
    parser.add_argument("pytest_args", nargs="*", help="after --: more arguments for pytest (e.g. -n 4)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        timeline = os.path.join(tmp, "timeline.jsonl")
        env = {**os.environ, "NPUPROF_SUITE_TIMELINE": timeline}
        busy0, total0 = cpu_ticks()
        started = time.time()
        status = subprocess.call([sys.executable, "-m", "pytest", "-q", *args.pytest_args], cwd=ROOT, env=env)
        wall = time.time() - started
        busy1, total1 = cpu_ticks()
        with open(timeline) as handle:
            tests = [json.loads(line) for line in handle]
        if args.keep:
            shutil.copyfile(timeline, args.keep)
    print(f"\nsuite: {wall / 60:.1f} min wall (exit {status}), {len(tests)} tests, on {os.cpu_count()} cores")
    print(f"CPU busy {100 * (busy1 - busy0) / max(1, total1 - total0):.0f}% of the run (all processes of the machine)")
    cpu = sum(t["cpu"] for t in tests)
    floor = cpu / 60 / (os.cpu_count() or 1)
    print(f"CPU of the tests and the processes they waited for: {cpu / 60:.1f} min, {floor:.1f} min of wall at best")
    workers: dict[str, list[dict]] = defaultdict(list)
    for test in tests:
        workers[test["worker"]].append(test)
    first_done = min(max(t["end"] for t in ran) for ran in workers.values())
    for worker, ran in sorted(workers.items()):
        busy = sum(t["end"] - t["start"] for t in ran)
        done = max(t["end"] for t in ran) - started
        print(f"  {worker}: {len(ran)} tests, busy {busy / 60:.1f} min, done at {done / 60:.1f} min")
    print(f"longest {args.top} tests:")
    for test in sorted(tests, key=lambda t: t["start"] - t["end"])[: args.top]:
        print(f"  {test['end'] - test['start']:6.1f} s  (CPU {test['cpu']:5.1f} s)  {test['test']}")
    print(f"most CPU, {args.top} tests:")
    for test in sorted(tests, key=lambda t: -t["cpu"])[: args.top]:
        print(f"  {test['cpu']:6.1f} s CPU  {test['test']}")
    groups: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for test in tests:
        if test["group"]:
            groups[test["group"]][0] += test["end"] - test["start"]
            groups[test["group"]][1] += test["cpu"]
    print("xdist groups (each on one worker):")
    for group, (seconds, cpu_s) in sorted(groups.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"  {seconds:6.1f} s  (CPU {cpu_s:6.1f} s)  {group}")
    tail = [t for t in tests if t["end"] > first_done]
    tail_s = max(t["end"] for t in tests) - first_done
    print(f"the tail: {tail_s / 60:.1f} min after the first worker ran out of work:")
    for test in sorted(tail, key=lambda t: t["start"]):
        print(f"  {test['end'] - test['start']:6.1f} s  {test['test']} ({test['worker']})")
    return status


if __name__ == "__main__":
    sys.exit(main())
