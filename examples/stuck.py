"""A job that stops stepping, for the hang watch (README: Hangs and slowdowns; tests/test_hangs.py):
gloo ranks under torchrun, or one process.

--stuck-rank R --after N   rank R blocks in time.sleep after step N (the others wait in all_reduce)
--pause S                  with --after N: sleep S seconds once, then go on (a pause, not a hang)
--steps N                  how many steps in all (default 12)
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--stuck-rank", type=int, default=None)
    parser.add_argument("--after", type=int, default=4)
    parser.add_argument("--pause", type=float, default=None)
    args = parser.parse_args()
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 16)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(1, args.steps + 1):
        model(torch.randn(8, 16)).sum().backward()
        if distributed:
            for parameter in model.parameters():
                dist.all_reduce(parameter.grad)  # the others wait here
        optimizer.step()
        optimizer.zero_grad()
        if step == args.after and args.pause is not None:
            print(f"rank {rank} pausing after step {step}", flush=True)
            time.sleep(args.pause)  # the pause
        if step == args.after and rank == args.stuck_rank:
            print(f"rank {rank} stuck after step {step}", flush=True)
            time.sleep(3600)  # the hang
    print(f"rank {rank} done", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
