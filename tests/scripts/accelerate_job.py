"""A tiny Hugging Face Accelerate job, written as the Accelerate docs show it; no npuprof code.

Accelerator.prepare wraps the optimizer in an AcceleratedOptimizer and the scheduler in an
AcceleratedScheduler; under ``accelerator.accumulate(model)`` the loop calls optimizer.step()
on every micro-batch, and the wrapper steps the real optimizer only every 2nd one. Prints the
last loss, the number of real optimizer steps and an exact checksum of the weights.
"""

import argparse

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from jobkit import checksum


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12, help="optimizer steps")
    args = parser.parse_args()

    accumulation = 2
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=accumulation)
    set_seed(0)
    x = torch.randn(8 * accumulation * args.steps, 16)
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)

    optimizer_steps = 0
    model.train()
    for inputs, targets in loader:
        with accelerator.accumulate(model):
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
            accelerator.backward(loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
        if accelerator.sync_gradients:
            optimizer_steps += 1
    print(f"loss {loss.item()!r}")
    print(f"optimizer_steps {optimizer_steps}")
    print(f"checksum {checksum(accelerator.unwrap_model(model))}")


if __name__ == "__main__":
    main()
