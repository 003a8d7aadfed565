"""A job whose process stops stepping inside a window, then does work that belongs to no step.

Alone (no WORLD_SIZE): --steps iterations of a small model, then a teardown (an evaluation under a
``teardown`` range) and the end of the process.

Under torchrun: DistributedDataParallel on gloo with uneven inputs under
``torch.distributed.algorithms.join.Join``: rank R has ``--steps + R * --extra`` batches, so the
ranks with fewer run out of data first and shadow the others' all-reduces inside ``Join`` (work
of no iteration of theirs) until every rank is done; then each runs the same teardown.

Each rank prints ``rank R steps S checksum C`` (its weights, to the last bit).
"""

import argparse
import gc
import os
import sys

import torch
import torch.distributed as dist
from jobkit import checksum


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--extra", type=int, default=2)
    args = parser.parse_args()

    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(rank)
    batches = [torch.randn(16, 32, generator=generator) for _ in range(args.steps + rank * args.extra)]

    def train() -> int:
        done = 0
        for batch in batches:
            optimizer.zero_grad()
            model(batch).pow(2).mean().backward()
            optimizer.step()
            done += 1
        return done

    if distributed:
        from torch.distributed.algorithms.join import Join

        with Join([model]):
            steps = train()
    else:
        steps = train()

    with torch.no_grad(), torch.autograd.profiler.record_function("teardown"):
        model(torch.randn(256, 32, generator=generator)).sum()
    # One write per line: the ranks share torchrun's stdout, and print() writes the newline apart.
    sys.stdout.write(f"rank {rank} steps {steps} checksum {checksum(model)}\n")
    sys.stdout.flush()
    if distributed:
        dist.barrier()  # gloo aborts now and then ("terminate called") when a rank destroys its group early
        # DDP's reducer holds gloo work of the shadowed all-reduces: freed at the interpreter's
        # finalization it aborts the process (about 1 run in 4 on a loaded machine), so free it now.
        del model, optimizer
        gc.collect()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
