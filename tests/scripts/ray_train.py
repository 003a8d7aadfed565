"""A job whose training runs inside a Ray actor: the driver starts a local cluster and waits.

The driver imports torch but never steps; the actor process (started by Ray's raylet; with
--working-dir, in Ray's own copy of that directory) runs the optimizer steps. Prints the actor's
loss and weight checksum (the model, data and seed of ddp_train.py run alone, so the two print the
same figures) and, on stderr, the actor's pid and working directory.
"""

import argparse
import hashlib
import os
import sys

import ray
import torch


@ray.remote
class Trainer:
    def train(self, steps: int) -> tuple:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        data = torch.randn(steps, 16, 32, generator=torch.Generator().manual_seed(1))
        for x in data:
            loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        digest = hashlib.sha256()
        for tensor in model.state_dict().values():
            digest.update(repr(tensor.tolist()).encode())
        return f"{loss.item():.10f}", digest.hexdigest(), os.getcwd(), os.getpid()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--working-dir", help="runtime_env working_dir: Ray runs the actor in its own copy of it")
    args = parser.parse_args()
    runtime_env = {"working_dir": args.working_dir} if args.working_dir else None
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, runtime_env=runtime_env)
    try:
        loss, checksum, cwd, pid = ray.get(Trainer.remote().train.remote(args.steps))
    finally:
        ray.shutdown()
    print(f"loss {loss}")
    print(f"checksum {checksum}")
    sys.stderr.write(f"actor pid {pid} cwd {cwd}\n")


if __name__ == "__main__":
    main()
