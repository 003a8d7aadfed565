"""A 4-stage pipeline on gloo (GPipe: every micro-batch forward, then every one backward), its
stages joined by sends and receives only: no collective but the barrier at the end.

    torchrun --standalone --nproc_per_node 4 tests/scripts/pipeline_p2p.py --slow-stage 2

Each stage holds two Linear+ReLU layers of width 256; --slow-stage holds four (twice the work).
Each rank prints ``rank R done``.
"""

import argparse
import sys

import torch
import torch.distributed as dist

WIDTH, ROWS, MICRO = 256, 128, 4


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--slow-stage", type=int, default=-1)
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    layers = 4 if rank == args.slow_stage else 2
    stage = torch.nn.Sequential(*[m for _ in range(layers) for m in (torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU())])
    optimizer = torch.optim.SGD(stage.parameters(), lr=1e-3)
    for _ in range(args.steps):
        inputs, outputs = [], []
        for _ in range(MICRO):
            if rank == 0:
                x = torch.randn(ROWS, WIDTH)
            else:
                x = torch.empty(ROWS, WIDTH)
                dist.recv(x, rank - 1)
            x.requires_grad_(rank != 0)
            y = stage(x)
            inputs.append(x)
            outputs.append(y)
            if rank < world - 1:
                dist.send(y.detach(), rank + 1)
        for micro in reversed(range(MICRO)):
            if rank == world - 1:
                outputs[micro].square().mean().backward()
            else:
                grad = torch.empty(ROWS, WIDTH)
                dist.recv(grad, rank + 1)
                outputs[micro].backward(grad)
            if rank > 0:
                dist.send(inputs[micro].grad, rank - 1)
        optimizer.step()
        optimizer.zero_grad()
    dist.barrier()
    sys.stdout.write(f"rank {rank} done\n")
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
