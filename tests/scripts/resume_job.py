"""A hand-written loop that saves a checkpoint and a second run that resumes from it; no npuprof code.

The job numbers its steps itself (``global_step``), and keeps the number in its checkpoint, as
Megatron's and most hand-written loops do. Run with ``--save CKPT --steps 5`` it makes steps 1-5
and saves the model, the optimizer's state (Adam keeps a step count per parameter) and its
``global_step``; run with ``--load CKPT --steps 10`` it loads them and makes steps 6-10. Prints
the steps it made (``job steps 6-10``) and an exact checksum of the weights.

--optimizer sgd   SGD with momentum: its state keeps no step count
"""

import argparse
import hashlib

import torch


def checksum(model: torch.nn.Module) -> str:
    digest = hashlib.sha256()
    for tensor in model.state_dict().values():
        digest.update(repr(tensor.tolist()).encode())
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5, help="the job's step to stop after")
    parser.add_argument("--save")
    parser.add_argument("--load")
    parser.add_argument("--optimizer", choices=("adam", "sgd"), default="adam")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    if args.optimizer == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    global_step = 0
    if args.load:
        checkpoint = torch.load(args.load)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        global_step = checkpoint["global_step"]
    first = global_step + 1
    generator = torch.Generator().manual_seed(global_step)
    while global_step < args.steps:
        inputs = torch.randn(64, 16, generator=generator)
        target = inputs.sum(dim=1, keepdim=True)
        loss = torch.nn.functional.mse_loss(model(inputs), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        global_step += 1
    if args.save:
        torch.save(
            {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "global_step": global_step}, args.save
        )
    print(f"job steps {first}-{global_step}")
    print("checksum", checksum(model))


if __name__ == "__main__":
    main()
