"""A job whose one step is long because its thread got no CPU, and another because it slept.

The process pins itself (and its one intra-op thread) to one core, and starts --burners processes
on the same core that wait on their stdin. In step --contended-step it tells them to spin (one
byte each) and kills them after the step (they are reaped after the last step): its thread is
runnable but runs about one time in burners + 1, so the step's fixed work takes several times the
median, and the kernel counts the rest as a wait on the run queue (their start-up, the job's own
work, falls before the first step). In step --sleep-step it sleeps --sleep-s: a spike of the
job's own, with no wait for a CPU. Prints ``loss L checksum C``.
"""

import argparse
import os
import subprocess
import sys
import time

import torch
from jobkit import checksum

SPIN = "import sys\nsys.stdin.buffer.read(1)\nwhile True:\n    pass\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--contended-step", type=int, default=12)
    parser.add_argument("--burners", type=int, default=16)
    parser.add_argument("--sleep-step", type=int, default=20)
    parser.add_argument("--sleep-s", type=float, default=0.5)
    parser.add_argument("--work", type=int, default=60, help="matrix products a step (about 20 ms on one core)")
    args = parser.parse_args()
    core = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(256, 256)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(256, 256)
    # -S: no site, so no sitecustomize of a profiler in them; they inherit the one core.
    burners = [subprocess.Popen([sys.executable, "-S", "-c", SPIN], stdin=subprocess.PIPE) for _ in range(args.burners)]
    loss = None
    for step in range(1, args.steps + 1):
        if step == args.contended_step:
            for burner in burners:
                burner.stdin.write(b"x")
                burner.stdin.flush()
        if step == args.sleep_step:
            time.sleep(args.sleep_s)
        y = x
        for _ in range(args.work):
            y = torch.tanh(y @ x) / 16
        loss = model(y).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step == args.contended_step:
            for burner in burners:  # no wait here: reaping them all would block the next step
                burner.kill()
    for burner in burners:
        burner.kill()
        burner.wait()
    sys.stdout.write(f"loss {loss.item():.10f} checksum {checksum(model)}\n")


if __name__ == "__main__":
    main()
