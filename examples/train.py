"""A small training job that runs on CPU in seconds: a 2-layer MLP on a fixed random regression task.

Run it as is, or under the profiler without changing a line:

    npuprof-run --skip-first 2 --active 2 --output-dir OUT -- python examples/train.py --steps 12

It prints the final loss and a checksum of the weights, so that a run with and without the
profiler can be compared to the last bit.
"""

import argparse
import hashlib

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    inputs = torch.randn(256, 64)
    targets = inputs.sum(dim=1, keepdim=True)

    for _ in range(args.steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        scheduler.step()

    digest = hashlib.sha256()
    for tensor in model.state_dict().values():
        digest.update(repr(tensor.tolist()).encode())
    print(f"final loss {loss.item():.10f}")
    print(f"weights sha256 {digest.hexdigest()}")


if __name__ == "__main__":
    main()
