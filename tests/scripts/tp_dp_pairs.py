"""4 ranks on gloo in process groups of two shapes, as tensor and data parallelism make them.

    torchrun --standalone --nproc_per_node 4 tests/scripts/tp_dp_pairs.py --slow-rank 3 --slow-ms 30

Tensor-parallel pairs {0, 1} and {2, 3} all-reduce an activation in each forward; data-parallel
pairs {0, 2} and {1, 3} all-reduce the gradients after each backward. --slow-rank sleeps --slow-ms
before its gradients' all-reduce every step (a host-side stall: its data, its logging): its
data-parallel partner waits for it there, its tensor-parallel partner at the next step's forward.
--held-rank binds itself to one core beside --burners spinning processes bound there too (a data
worker pinned beside it, the ranks' CPU binding overlapping): the machine holds it back in every
step, and its partners wait for it. Each rank prints ``rank R loss L``.
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from jobkit import spinning


def train(args: argparse.Namespace, rank: int) -> torch.Tensor:
    """The job's steps; the last step's loss."""
    pairs = [dist.new_group([0, 1]), dist.new_group([2, 3])]  # every rank makes every group, in order
    data = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    tensor_group, data_group = pairs[rank // 2], data[rank % 2]
    torch.manual_seed(0)
    first = torch.nn.Parameter(torch.randn(256, 128) * 0.05)
    second = torch.nn.Parameter(torch.randn(128, 256) * 0.05)
    optimizer = torch.optim.SGD([first, second], lr=1e-3)
    generator = torch.Generator().manual_seed(rank)
    loss = None
    for _ in range(args.steps):
        hidden = torch.randn(256, 256, generator=generator) @ first
        for _ in range(4):
            hidden = hidden @ second @ first
        summed = hidden.detach().clone()
        dist.all_reduce(summed, group=tensor_group)
        loss = ((hidden + (summed - hidden.detach())) ** 2).mean()
        loss.backward()
        if rank == args.slow_rank:
            time.sleep(args.slow_ms / 1000)
        for parameter in (first, second):
            dist.all_reduce(parameter.grad, group=data_group)
            parameter.grad /= 2
        optimizer.step()
        optimizer.zero_grad()
    return loss


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-ms", type=float, default=0.0)
    parser.add_argument("--held-rank", type=int, default=-1)
    parser.add_argument("--burners", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == args.held_rank:  # its spinning processes inherit the one core
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    with spinning(args.burners if rank == args.held_rank else 0):
        loss = train(args, rank)
    sys.stdout.write(f"rank {rank} loss {loss.item():.10f}\n")
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
