"""A Ray Train job: TorchTrainer with 2 CPU workers (gloo DDP), as Ray's docs write it; no npuprof code.

Ray Train gives each worker RANK and starts the process group; when training ends it kills the
worker actors (ray.kill), so no exit handler runs in them. Each worker writes its loss and an
exact checksum of the weights to a file; the driver prints them in rank order.
"""

import argparse
import glob
import hashlib
import os
import tempfile

import ray
import torch
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_loop(config: dict) -> None:
    torch.manual_seed(0)
    model = prepare_model(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    rank = train.get_context().get_world_rank()
    data = torch.randn(config["steps"], 8, 16, generator=torch.Generator().manual_seed(1 + rank))
    loss = None
    for x in data:
        loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    digest = hashlib.sha256(repr([t.tolist() for t in model.state_dict().values()]).encode()).hexdigest()
    with open(os.path.join(config["results"], f"rank{rank}"), "w") as handle:
        handle.write(f"rank {rank} loss {loss.item():.10f} checksum {digest}\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with tempfile.TemporaryDirectory() as storage, tempfile.TemporaryDirectory() as results:
            trainer = TorchTrainer(
                train_loop,
                train_loop_config={"steps": args.steps, "results": results},
                scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                run_config=RunConfig(storage_path=storage, name="npuprof"),
            )
            trainer.fit()
            for path in sorted(glob.glob(os.path.join(results, "rank*"))):
                with open(path) as handle:
                    print(handle.read(), end="")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
