"""A tiny DistributedDataParallel job for the multi-process tests: gloo on CPU, a few steps.

Run under torchrun (or alone, as one process without a process group). Each rank prints one line,
``rank R loss L checksum C``, so a run with and without the profiler can be compared rank by rank
to the last bit.

--child      start a ``python -c`` child that imports torch and never steps
--fail-once  exit 1 after training while TORCHELASTIC_RESTART_COUNT is 0 (a torchelastic restart)
--raise-on R:N  rank R raises a RuntimeError after its step N (a job that fails on one rank)
--kill-on R:N   rank R kills itself with SIGKILL after its step N (an out-of-memory kill)
"""

import argparse
import gc
import os
import signal
import subprocess
import sys

import torch
import torch.distributed as dist
from jobkit import checksum


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--fail-once", action="store_true")
    parser.add_argument("--raise-on", default=None)
    parser.add_argument("--kill-on", default=None)
    args = parser.parse_args()

    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    net = torch.nn.parallel.DistributedDataParallel(model) if distributed else model
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    data = torch.randn(args.steps, 16, 32, generator=torch.Generator().manual_seed(1))

    if args.child:
        subprocess.run([sys.executable, "-c", "import torch; torch.ones(2).sum()"], check=True)

    raise_rank, raise_step = map(int, args.raise_on.split(":")) if args.raise_on else (None, None)
    kill_rank, kill_step = map(int, args.kill_on.split(":")) if args.kill_on else (None, None)
    for step, x in enumerate(data, start=1):
        x = x[rank::world]  # each rank its own slice of the batch; DDP averages the gradients
        loss = torch.nn.functional.mse_loss(net(x), x.sum(dim=1, keepdim=True))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if rank == raise_rank and step == raise_step:
            raise RuntimeError(f"bad batch on rank {rank} at step {step}")
        if rank == kill_rank and step == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)

    # One write per line: the ranks share torchrun's stdout, and print() writes the newline apart.
    sys.stdout.write(f"rank {rank} loss {loss.item():.10f} checksum {checksum(model)}\n")
    sys.stdout.flush()
    if distributed:
        dist.barrier()
        # DDP's reducer keeps the group alive: left to the interpreter's finalization, gloo's
        # teardown aborts the process now and then on a loaded machine ("terminate called without
        # an active exception", SIGABRT, bare as profiled), so the group goes while Python is whole.
        del net, model, optimizer
        gc.collect()
        dist.destroy_process_group()
    if args.fail_once and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
        sys.exit(1)


if __name__ == "__main__":
    main()
