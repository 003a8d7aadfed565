"""A trainer in a daemon child process, as some RL and serving frameworks run theirs.

    python tests/scripts/daemon_train.py --steps 8

The parent starts one ``multiprocessing`` child (spawn, ``daemon=True``) that trains a linear model
and prints ``child loss L``; the parent prints ``exit CODE``. On an NPU, torch_npu refuses to parse a
window in a daemon process (an error, and nothing parsed): tests/test_npu_backend.py runs it.
"""

import argparse
import multiprocessing

import torch


def train(steps: int) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss = None
    for _ in range(steps):
        loss = model(torch.randn(32, 64)).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    print(f"child loss {float(loss):.8f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    child = multiprocessing.get_context("spawn").Process(target=train, args=(args.steps,), daemon=True)
    child.start()
    child.join()
    print(f"exit {child.exitcode}", flush=True)
