"""A training loop whose DataLoader runs two workers started with "spawn" (as on macOS, or as
CUDA jobs must): each worker imports torch and never steps, and is no process meant to step."""

import torch
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8, num_workers=2, multiprocessing_context="spawn")
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    print(f"weight sum {model.weight.sum().item():.6f}", flush=True)


if __name__ == "__main__":
    main()
