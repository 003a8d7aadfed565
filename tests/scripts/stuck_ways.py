"""Two more ways a rank of a gloo job under torchrun stops stepping (examples/stuck.py has the sleep;
its line numbers are quoted in the README, so the other ways live here).

--way loader   after step --after, rank --stuck-rank takes its next batch from a DataLoader whose one
               worker never returns (its dataset's __getitem__ blocks while the rank lives); the
               others wait in the next step's all_reduce
--way barrier  after step --after, rank --stuck-rank waits at a dist.barrier() the others never reach:
               they sleep
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Blocking(Dataset):
    """A dataset whose items never come: its worker waits until the rank that made it is gone."""

    def __init__(self) -> None:
        self.rank_pid = os.getpid()

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> torch.Tensor:
        while os.getppid() == self.rank_pid:
            time.sleep(0.2)
        return torch.zeros(8, 16)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--way", choices=("loader", "barrier"), required=True)
    parser.add_argument("--stuck-rank", type=int, default=1)
    parser.add_argument("--after", type=int, default=3)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 16)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    stuck = rank == args.stuck_rank
    batches = iter(DataLoader(Blocking(), batch_size=None, num_workers=1)) if stuck and args.way == "loader" else None
    for step in range(1, args.steps + 1):
        if step == args.after + 1 and batches is not None:
            print(f"rank {rank} waits for its data loader", flush=True)
            batch = next(batches)  # the loader
        else:
            batch = torch.randn(8, 16)
        model(batch).sum().backward()
        for parameter in model.parameters():
            dist.all_reduce(parameter.grad)  # the others wait here
        optimizer.step()
        optimizer.zero_grad()
        if step == args.after and args.way == "barrier":
            print(f"rank {rank} {'at the barrier' if stuck else 'elsewhere'} after step {step}", flush=True)
            if stuck:
                dist.barrier()  # the barrier
            else:
                time.sleep(3600)  # the others are elsewhere
    print(f"rank {rank} done", flush=True)


if __name__ == "__main__":
    main()
