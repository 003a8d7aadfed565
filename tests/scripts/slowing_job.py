"""A job whose steps slow down from a step on, for the slowdown tests: one process, or gloo ranks
under torchrun.

--steps N          steps in all (default 60)
--step-ms MS       the sleep each step adds (default 10)
--from-step S      from this step on the sleep is FACTOR times longer
--factor F         (default 2.0)
--rank R           only rank R slows (default: every rank)
"""

import argparse
import os
import time

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--step-ms", type=float, default=10.0)
    parser.add_argument("--from-step", type=int, default=None)
    parser.add_argument("--factor", type=float, default=2.0)
    parser.add_argument("--rank", type=int, default=None)
    args = parser.parse_args()
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(1, args.steps + 1):
        model(torch.randn(4, 8)).sum().backward()
        slow = args.from_step is not None and step >= args.from_step and args.rank in (None, rank)
        time.sleep(args.step_ms / 1e3 * (args.factor if slow else 1.0))
        if distributed:
            for parameter in model.parameters():
                dist.all_reduce(parameter.grad)
        optimizer.step()
        optimizer.zero_grad()
    print(f"rank {rank} done", flush=True)
    if distributed:
        # Left to the interpreter's finalization, gloo's teardown aborts a process now and then
        # ("terminate called without an active exception", SIGABRT; pytorch/pytorch#179291), bare
        # as profiled: the suite saw it twice in one loaded run. The group goes while Python is whole.
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
