"""The job of the findings benchmark (findings.py): alike ranks, or one fault injected on purpose.

    torchrun --standalone --nproc_per_node 4 benchmarks/findings_job.py --step-ms 20 --slow-rank 2 --slow-frac 0.3

Each step stands for an accelerator's: the host waits for the device (a sleep of --step-ms) and
does a little work of its own (a small model's forward, backward and optimizer step, which is
the step boundary the profiler counts). --ddp puts the ranks in lockstep (gloo, DistributedDataParallel);
otherwise each rank trains alone. The faults: --slow-rank sleeps --slow-frac of a step more in
every step; --spike-rank sleeps (--spike-factor - 1) steps more once, in --spike-step; from
--slowdown-step on every rank's steps take --slowdown-factor times as long.
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--step-ms", type=float, default=20.0)
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-frac", type=float, default=0.0)
    parser.add_argument("--spike-rank", type=int, default=-1)
    parser.add_argument("--spike-step", type=int, default=0)
    parser.add_argument("--spike-factor", type=float, default=10.0)
    parser.add_argument("--slowdown-step", type=int, default=0)
    parser.add_argument("--slowdown-factor", type=float, default=1.5)
    args = parser.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    torch.set_num_threads(1)
    distributed = args.ddp and "WORLD_SIZE" in os.environ
    if distributed:
        import torch.distributed as dist

        dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(rank))
    step_s = args.step_ms / 1e3
    for step in range(1, args.steps + 1):
        device_s = step_s
        if args.slowdown_step and step >= args.slowdown_step:
            device_s *= args.slowdown_factor
        if rank == args.slow_rank:
            device_s += args.slow_frac * step_s
        if rank == args.spike_rank and step == args.spike_step:
            device_s += (args.spike_factor - 1) * step_s
        time.sleep(device_s)
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    if distributed:
        del model, optimizer  # DDP holds the group: destroyed while Python is whole (gloo's exit abort)
        gc.collect()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
