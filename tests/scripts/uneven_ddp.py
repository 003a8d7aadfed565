"""A DistributedDataParallel job whose one rank computes more than the others: uneven data shards.

    torchrun --standalone --nproc_per_node 4 tests/scripts/uneven_ddp.py --slow-rank 2 --extra 1.0

gloo on CPU. Every rank trains the same model of --layers linear layers on a batch of --rows rows a
step; rank --slow-rank takes (1 + --extra) times as many rows, so its forward and backward take about
that much longer (compute, not a sleep: it holds a CPU as a real straggler does). DDP's buckets are
small (--bucket-kb: 8 all-reduces a step, a layer's gradients each); the slow rank's gradients are
late in every one of them. ``--extra 0`` is a healthy job. Each rank prints ``rank R loss L``.
tests/test_collective_judge.py and docs/benchmarks.md (F6-F7) run it under npuprof-run.
"""

import argparse
import gc
import sys

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--slow-rank", type=int, default=2)
    parser.add_argument("--extra", type=float, default=0.0, help="the slow rank's extra rows, a fraction")
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--bucket-kb", type=float, default=100.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(args.width, 1))
    net = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_kb / 1024)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.001)
    rows = round(args.rows * (1 + args.extra)) if rank == args.slow_rank else args.rows
    generator = torch.Generator().manual_seed(rank)
    loss = None
    for _ in range(args.steps):
        x = torch.randn(rows, args.width, generator=generator)
        loss = torch.nn.functional.mse_loss(net(x), x.mean(dim=1, keepdim=True))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    sys.stdout.write(f"rank {rank} loss {loss.item():.10f}\n")
    sys.stdout.flush()
    # DDP holds the group: free it first, so that the group is destroyed while Python is whole
    # (left to the interpreter's exit, gloo's teardown can abort the process on a busy machine).
    del net, model, optimizer
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
