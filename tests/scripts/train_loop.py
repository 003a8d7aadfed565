"""A configurable CPU training loop for the tests: prints a loss and an exact weight checksum.

--mode plain   one AdamW optimizer and an LR scheduler
--mode gan     two optimizers stepped once each per iteration
--mode nested  a wrapper optimizer whose step() calls an inner optimizer's step()
--mode accum   gradient accumulation: one optimizer step every --accum micro-batches
--mode none    no optimizer at all (forward passes only)
--compile      run the model through torch.compile
"""

import argparse
import hashlib
import warnings

import torch


class Wrapper(torch.optim.Optimizer):
    """Like the DeepSpeed/Accelerate/Lightning wrappers: an Optimizer whose step calls another's."""

    def __init__(self, inner):
        self.inner = inner
        super().__init__(inner.param_groups, inner.defaults)

    def step(self, closure=None):
        return self.inner.step(closure)


def checksum(*modules) -> str:
    digest = hashlib.sha256()
    for module in modules:
        for tensor in module.state_dict().values():
            digest.update(repr(tensor.tolist()).encode())
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--mode", default="plain", choices=["plain", "gan", "nested", "accum", "none"])
    parser.add_argument("--accum", type=int, default=2)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep in each step")
    args = parser.parse_args()
    warnings.simplefilter("default")

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    other = torch.nn.Linear(32, 1)
    run = torch.compile(model, backend="eager") if args.compile else model
    x = torch.randn(128, 32)
    y = x.sum(dim=1, keepdim=True)

    if args.mode == "gan":
        optimizers = [torch.optim.SGD(model.parameters(), lr=0.01), torch.optim.Adam(other.parameters(), lr=0.01)]
    elif args.mode == "nested":
        optimizers = [Wrapper(torch.optim.SGD(model.parameters(), lr=0.01))]
    elif args.mode == "none":
        optimizers = []
    else:
        optimizers = [torch.optim.AdamW(model.parameters(), lr=0.01)]
    schedulers = [torch.optim.lr_scheduler.StepLR(opt, step_size=3) for opt in optimizers if args.mode == "plain"]

    import time

    for _ in range(args.steps):
        if args.mode == "none":
            with torch.no_grad():
                loss = torch.nn.functional.mse_loss(run(x), y)
            continue
        micro = args.accum if args.mode == "accum" else 1
        for _ in range(micro):
            loss = torch.nn.functional.mse_loss(run(x), y) + torch.nn.functional.mse_loss(other(x), y)
            loss.backward()
        for opt in optimizers:
            opt.step()
            opt.zero_grad()
        for scheduler in schedulers:
            scheduler.step()
        if args.sleep:
            time.sleep(args.sleep)
    print(f"loss {loss.item():.10f}")
    print(f"checksum {checksum(model, other)}")


if __name__ == "__main__":
    main()
