"""FSDP2 (``fully_shard``) on gloo: every layer sharded, all-gathered before its forward and again
before its backward, its gradients reduced after.

    torchrun --standalone --nproc_per_node 4 tests/scripts/fsdp2_stall.py --slow-rank 2 --slow-ms 30

--slow-rank sleeps --slow-ms between its forward and its backward every step (a host-side stall):
the others wait for it at the first all-gather of the backward, one of the step's eight, and at
none of the others. Each rank prints ``rank R loss L``.
"""

import argparse
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-ms", type=float, default=30.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(4)])
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    generator = torch.Generator().manual_seed(rank)
    loss = None
    for _ in range(args.steps):
        loss = model(torch.randn(128, 256, generator=generator)).pow(2).mean()
        if rank == args.slow_rank:
            time.sleep(args.slow_ms / 1000)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    sys.stdout.write(f"rank {rank} loss {loss.item():.10f}\n")
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
