"""A training loop fed by a DataLoader with worker processes, for the worker tests.

Prints the loss and an exact weight checksum on stdout. On stderr, one line per worker process
that made batches: ``worker PID records: yes|no|-``, whether an operator run in that worker was
recorded by a profiler it inherited (``-``: no profiler was enabled there at all).

--workers N        DataLoader worker processes
--start-method M   fork, spawn or forkserver
--new-loader-at K  build a new DataLoader (new workers) after step K, e.g. while a window is open
"""

import argparse
import os
import sys

import torch
from jobkit import checksum
from torch.utils.data import DataLoader, Dataset


def inherited_profiler_records() -> str:
    """Run a named operator, then read the inherited profiler's buffer (ends its state here)."""
    if not torch._C._autograd._profiler_enabled():
        return "-"
    with torch.autograd.profiler.record_function("worker_probe"):
        torch.ones(1).add_(1)
    names = []
    for event in torch._C._autograd._disable_profiler().events():
        try:
            names.append(event.name())
        except UnicodeDecodeError:  # events copied from the parent's buffer may not decode
            pass
    return "yes" if "worker_probe" in names else "no"


class Batches(Dataset):
    def __init__(self, count: int) -> None:
        self.x = torch.randn(count, 16, 32, generator=torch.Generator().manual_seed(1))
        self.probed = False

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int):
        if not self.probed:
            self.probed = True
            sys.stderr.write(f"worker {os.getpid()} records: {inherited_profiler_records()}\n")
            sys.stderr.flush()
        return self.x[index]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--start-method", default="fork", choices=["fork", "spawn", "forkserver"])
    parser.add_argument("--new-loader-at", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    dataset = Batches(args.steps)
    step = 0
    while step < args.steps:
        loader = DataLoader(
            torch.utils.data.Subset(dataset, range(step, args.steps)),
            batch_size=None,
            num_workers=args.workers,
            multiprocessing_context=args.start_method if args.workers else None,
        )
        for x in loader:
            loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            step += 1
            if step == args.new_loader_at:
                break
    print(f"loss {loss.item():.10f}")
    print(f"checksum {checksum(model)}")


if __name__ == "__main__":
    main()
