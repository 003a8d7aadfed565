"""A data-parallel job with a slow rank and a one-off stall: what the job summary is for.

    npuprof-run --skip-first 2 --active 3 -- torchrun --standalone --nproc_per_node 4 examples/stragglers.py

Under torchrun (gloo, CPU): rank --slow-rank sleeps --slow-s before every step (the others wait
for it inside the all-reduce, so every rank's step takes as long), and rank --stall-rank sleeps
--stall-s once, in step --stall-step (a spike that lockstep spreads to every rank). With
--alone each rank trains by itself (no process group), so only the sleeping ranks slow down.
Each rank prints ``rank R loss L checksum C``.
"""

import argparse
import gc
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--slow-rank", type=int, default=2)
    parser.add_argument("--slow-s", type=float, default=0.1)
    parser.add_argument("--stall-rank", type=int, default=1)
    parser.add_argument("--stall-step", type=int, default=7)
    parser.add_argument("--stall-s", type=float, default=0.4)
    parser.add_argument("--alone", action="store_true")
    args = parser.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    distributed = not args.alone and "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(args.steps, 16, 32, generator=torch.Generator().manual_seed(rank))
    loss = None
    for step, x in enumerate(data, start=1):
        if rank == args.slow_rank:
            time.sleep(args.slow_s)
        if rank == args.stall_rank and step == args.stall_step:
            time.sleep(args.stall_s)
        loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    digest = hashlib.sha256(repr([t.tolist() for t in model.state_dict().values()]).encode()).hexdigest()
    # One write per line: the ranks share one stdout, unbuffered under the tests.
    sys.stdout.write(f"rank {rank} loss {loss.item():.10f} checksum {digest}\n")
    sys.stdout.flush()
    if distributed:
        # DDP holds the group: free it first, so that the group is destroyed while Python is whole
        # (left to the interpreter's exit, gloo's teardown can abort the process on a busy machine).
        del model, optimizer
        gc.collect()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
