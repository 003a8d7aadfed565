"""A DistributedDataParallel job on gloo whose one rank computes more: the stand-in's communication test.

    torchrun --standalone --nproc_per_node 4 tests/scripts/slow_rank_ddp.py --slow-rank 2 --factor 4

Every rank trains the same small MLP; rank --slow-rank's batch is --factor times the others', so its
forward and backward take that much longer (real compute, holding a CPU). DDP's buckets are small
(--bucket-kb), so a step holds several all-reduces, and the others wait for the slow rank's
gradients in each. Each rank prints ``rank R loss L``.
"""

import argparse
import gc
import sys

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--slow-rank", type=int, default=2)
    parser.add_argument("--factor", type=float, default=4.0, help="the slow rank's batch, times the others'")
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
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
    rows = round(args.rows * args.factor) if rank == args.slow_rank else args.rows
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
    # Free DDP's hold on the group before destroying it, while the interpreter is whole.
    del net, model, optimizer
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
