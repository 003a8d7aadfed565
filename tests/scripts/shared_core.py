"""Two or more gloo DDP ranks, each bound to a core of its own; --burned-rank shares its core with
--burners spinning processes for the whole job (a data worker pinned there, a process left over,
two ranks' CPU binding overlapping): its thread waits for a CPU in step after step, and the others
wait for it in the all-reduce. Run under torchrun; prints ``rank R loss L`` at the end.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
from jobkit import spinning


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--step-ms", type=float, default=20.0, help="the device's part of a step: a sleep")
    parser.add_argument("--burned-rank", type=int, default=-1)
    parser.add_argument("--burners", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[rank % len(cores)]})
    with spinning(args.burners if rank == args.burned_rank else 0):  # they inherit the rank's one core
        torch.manual_seed(0)
        layers = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(4)])
        model = torch.nn.parallel.DistributedDataParallel(layers)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        data = torch.randn(64, 256, generator=torch.Generator().manual_seed(rank))
        loss = torch.zeros(())
        for _ in range(args.steps):
            time.sleep(args.step_ms / 1000)
            optimizer.zero_grad()
            loss = model(data).square().mean()
            loss.backward()
            optimizer.step()
    print(f"rank {rank} loss {loss.item():.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
