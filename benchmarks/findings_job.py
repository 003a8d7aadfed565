"""The job of the findings benchmark (findings.py): alike ranks, or one fault injected on purpose.

    torchrun --standalone --nproc_per_node 4 benchmarks/findings_job.py --step-ms 20 --slow-rank 2 --slow-frac 0.3

Each step stands for an accelerator's: the host waits for the device (a sleep of --step-ms) and
does work of its own (a model's forward, backward and optimizer step, which is the step boundary
the profiler counts). --ddp puts the ranks in lockstep (gloo, DistributedDataParallel); otherwise
each rank trains alone; run without torchrun it is a plain one-rank process.

The model is a small one on 8 rows, or with --rows N one of 8 linear layers of 256 on N rows a step
(compute that holds a CPU, as a real step does; DDP's buckets small, 8 all-reduces a step).

The shapes of a real job: --loader-workers N takes each batch from a DataLoader with N worker
processes; --accumulate K steps the optimizer every K micro-batches (each one a --step-ms sleep and
a forward and backward; DDP syncs the last one only); --eval-every N evaluates after every N-th step
(--eval-ms of device time and forwards without gradients); --checkpoint-every N saves the model and
--checkpoint-mb more to a file, flushed to disk (rank 0 in DDP, every rank alone).

The faults: --slow-rank sleeps --slow-frac of a step more in every step; --compute-rank does
--compute-factor times the others' rows (needs --rows: compute, not a sleep); --spike-rank sleeps
(--spike-factor - 1) steps more once, in --spike-step (a stall); from --slowdown-step on the steps
take --slowdown-factor times as long, on --slowdown-rank or on every rank.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import shutil
import tempfile
import time

import torch


class Batches(torch.utils.data.Dataset):
    """Random batches of a rank, made in the DataLoader's workers."""

    def __init__(self, length: int, rows: int, width: int, seed: int) -> None:
        self.length, self.rows, self.width, self.seed = length, rows, width, seed

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.randn(self.rows, self.width, generator=torch.Generator().manual_seed(self.seed * 100003 + index))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--step-ms", type=float, default=20.0)
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--loader-workers", type=int, default=0)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--eval-every", type=int, default=0)
    parser.add_argument("--eval-ms", type=float, default=200.0)
    parser.add_argument("--checkpoint-every", type=int, default=0)
    parser.add_argument("--checkpoint-mb", type=float, default=16.0)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-frac", type=float, default=0.0)
    parser.add_argument("--compute-rank", type=int, default=-1)
    parser.add_argument("--compute-factor", type=float, default=1.0)
    parser.add_argument("--spike-rank", type=int, default=-1)
    parser.add_argument("--spike-step", type=int, default=0)
    parser.add_argument("--spike-factor", type=float, default=10.0)
    parser.add_argument("--slowdown-step", type=int, default=0)
    parser.add_argument("--slowdown-factor", type=float, default=1.5)
    parser.add_argument("--slowdown-rank", type=int, default=-1, help="-1: every rank")
    args = parser.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    torch.set_num_threads(1)
    distributed = args.ddp and "WORLD_SIZE" in os.environ
    if distributed:
        import torch.distributed as dist

        dist.init_process_group("gloo")
    torch.manual_seed(0)
    if args.rows:
        width, rows = 256, round(args.rows * (args.compute_factor if rank == args.compute_rank else 1.0))
        layers: list[torch.nn.Module] = []
        for _ in range(8):
            layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 1))
    else:
        width, rows = 16, 8
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    net = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.1) if distributed else model
    optimizer = torch.optim.SGD(net.parameters(), lr=0.001)
    micro_batches = args.steps * args.accumulate
    if args.loader_workers:
        loader = torch.utils.data.DataLoader(
            Batches(micro_batches, rows, width, rank), batch_size=None, num_workers=args.loader_workers
        )
        batches = iter(loader)
    else:
        x = torch.randn(rows, width, generator=torch.Generator().manual_seed(rank))
        batches = iter([x] * micro_batches)
    checkpoint_dir = tempfile.mkdtemp(prefix=f"findings-job-{rank}-") if args.checkpoint_every else ""
    step_s = args.step_ms / 1e3
    for step in range(1, args.steps + 1):
        device_s = step_s
        if args.slowdown_step and step >= args.slowdown_step and args.slowdown_rank in (-1, rank):
            device_s *= args.slowdown_factor
        if rank == args.slow_rank:
            device_s += args.slow_frac * step_s
        if rank == args.spike_rank and step == args.spike_step:
            time.sleep((args.spike_factor - 1) * step_s)
        for micro in range(args.accumulate):
            batch = next(batches)
            time.sleep(device_s)
            if args.rows and args.slowdown_step and step >= args.slowdown_step and args.slowdown_rank in (-1, rank):
                batch = torch.cat([batch, batch[: round(len(batch) * (args.slowdown_factor - 1))]])
            last = micro == args.accumulate - 1
            sync = net.no_sync() if distributed and not last else contextlib.nullcontext()
            with sync:
                loss = net(batch).square().mean() / args.accumulate
                loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if args.eval_every and step % args.eval_every == 0:
            _evaluate(model, rows, width, args.eval_ms / 1e3)
        if args.checkpoint_every and step % args.checkpoint_every == 0 and (rank == 0 or not distributed):
            _save(model, args.checkpoint_mb, os.path.join(checkpoint_dir, "checkpoint.pt"))
    if checkpoint_dir:
        shutil.rmtree(checkpoint_dir)
    if distributed:
        del net, model, optimizer  # DDP holds the group: destroyed while Python is whole (gloo's exit abort)
        gc.collect()
        dist.destroy_process_group()


def _evaluate(model: torch.nn.Module, rows: int, width: int, device_s: float) -> None:
    """An evaluation: the device's time for it, and forwards without gradients on the host."""
    time.sleep(device_s)
    with torch.no_grad():
        for seed in range(4):
            model(torch.randn(rows, width, generator=torch.Generator().manual_seed(seed)))


def _save(model: torch.nn.Module, extra_mb: float, path: str) -> None:
    """A checkpoint: the model's state and ``extra_mb`` more (an optimizer's, a data loader's), on disk."""
    extra = torch.zeros(int(extra_mb * 2**20 / 4))
    with open(path, "wb") as handle:
        torch.save({"model": model.state_dict(), "extra": extra}, handle)
        handle.flush()
        os.fsync(handle.fileno())


if __name__ == "__main__":
    main()
