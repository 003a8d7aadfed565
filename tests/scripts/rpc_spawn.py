"""Three processes under torch.multiprocessing.spawn, joined by torch.distributed.rpc: rank 0
trains (8 steps, each asking rank 1 for its input with rpc_sync); ranks 1 and 2 only serve.
MASTER_PORT comes from the environment (a free one, chosen by the test)."""

import os

import torch
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp


def add(a, b):
    return a + b


def run(rank: int, world: int) -> None:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world)
    if rank == 0:
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 4)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(8):
            x = rpc.rpc_sync("worker1", add, args=(torch.ones(4), torch.ones(4)))
            model(x).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
        print(f"loss {model(torch.ones(4)).sum().item():.6f}", flush=True)
    rpc.shutdown()


if __name__ == "__main__":
    mp.spawn(run, args=(3,), nprocs=3, join=True)
