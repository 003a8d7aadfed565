"""Training patterns real jobs use, for the step-clock tests. Each prints its loss and an exact checksum.

--pattern plain     one AdamW optimizer
--pattern backward  one optimizer per parameter, stepped from a post-accumulate-grad hook inside
                    loss.backward() (PyTorch's "optimizer step in backward" recipe)
--pattern phases    a probe phase of --change iterations with SGD, then Adam; the probe optimizer
                    stays referenced
--pattern subclass  a warm-up phase of --change iterations with SGD, then ClippedSGD, an SGD
                    subclass whose step clips the gradients and calls super().step()
--pattern holder    a warm-up phase of --change iterations with SGD, then Smoothed, an Optimizer
                    of its own that holds that SGD and calls its step
--pattern epochs    a new optimizer each epoch of --change iterations, the old one freed
--pattern every4    two optimizers: D every 4th iteration (first in iteration 1), G every iteration
--pattern lbfgs     LBFGS, whose step runs a closure (forward and backward inside the step)
--pattern scaler    torch.amp.GradScaler on the CPU; the iterations of --skip-at get inf gradients,
                    so the scaler skips their optimizer step
--pattern megatron  a wrapper that is no torch Optimizer and skips the inner step when the
                    gradients overflowed, as Megatron's and MindSpeed's mixed-precision optimizers do
--label             label each whole iteration with record_function("job_iteration_N")
--sleep S           sleep S seconds in every iteration
--announce          print "iteration N" on stderr after each iteration
"""

import argparse
import contextlib
import math
import sys
import time

import torch
from jobkit import checksum


class MixedPrecisionOptimizer:
    """Megatron-style: holds a torch optimizer, checks the gradients, skips the step on overflow."""

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def zero_grad(self):
        self.optimizer.zero_grad()

    def step(self):
        found_inf = any(not torch.isfinite(p.grad).all() for g in self.optimizer.param_groups for p in g["params"])
        if found_inf:
            return False
        self.optimizer.step()
        return True


class ClippedSGD(torch.optim.SGD):
    """A job's own optimizer: clip, then the parent's step (a step inside a step)."""

    def step(self, closure=None):
        torch.nn.utils.clip_grad_norm_([p for g in self.param_groups for p in g["params"]], 1.0)
        return super().step(closure)


class Smoothed(torch.optim.Optimizer):
    """An Optimizer that holds another, steps it, then blends the weights toward their running mean."""

    def __init__(self, inner, beta=0.5):
        self.inner = inner
        super().__init__(inner.param_groups, {"beta": beta})

    @torch.no_grad()
    def step(self, closure=None):
        loss = self.inner.step(closure)
        for group in self.param_groups:
            for p in group["params"]:
                mean = self.state[p].setdefault("mean", p.detach().clone())
                mean.mul_(group["beta"]).add_(p, alpha=1 - group["beta"])
        return loss


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pattern", default="plain")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--change", type=int, default=3)
    parser.add_argument("--skip-at", default="")
    parser.add_argument("--label", action="store_true")
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--announce", action="store_true")
    args = parser.parse_args()
    skip_at = {int(n) for n in args.skip_at.split(",") if n}

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    other = torch.nn.Linear(16, 1)
    x = torch.randn(64, 16)
    y = x.sum(dim=1, keepdim=True)

    def loss_of(net=model):
        return torch.nn.functional.mse_loss(net(x), y)

    pattern = args.pattern
    if pattern == "backward":
        per_parameter = {p: torch.optim.SGD([p], lr=0.01) for p in model.parameters()}

        def step_in_backward(p):
            per_parameter[p].step()
            per_parameter[p].zero_grad()

        for p in model.parameters():
            p.register_post_accumulate_grad_hook(step_in_backward)
    probe = torch.optim.SGD(model.parameters(), lr=0.001)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    if pattern == "lbfgs":
        optimizer = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=3)
    d_optimizer = torch.optim.SGD(other.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**4) if pattern == "scaler" else None
    wrapper = MixedPrecisionOptimizer(optimizer)
    later = optimizer
    if pattern == "subclass":
        later = ClippedSGD(model.parameters(), lr=0.01, momentum=0.9)
    elif pattern == "holder":
        later = Smoothed(probe)

    loss = None
    for index in range(args.steps):
        iteration = index + 1
        label = torch.profiler.record_function(f"job_iteration_{iteration}") if args.label else None
        with label if label is not None else contextlib.nullcontext():
            if pattern == "backward":
                loss = loss_of()
                loss.backward()
            elif pattern in ("phases", "subclass", "holder"):
                opt = probe if iteration <= args.change else later
                loss = loss_of()
                loss.backward()
                opt.step()
                opt.zero_grad()
            elif pattern == "epochs":
                if index % args.change == 0:
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 / (1 + index))
                loss = loss_of()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            elif pattern == "every4":
                if index % 4 == 0:
                    d_loss = loss_of(other)
                    d_loss.backward()
                    d_optimizer.step()
                    d_optimizer.zero_grad()
                loss = loss_of()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            elif pattern == "lbfgs":

                def closure(optimizer=optimizer):
                    optimizer.zero_grad()
                    value = loss_of()
                    value.backward()
                    return value

                loss = optimizer.step(closure)
            elif pattern == "scaler":
                loss = loss_of() * (math.inf if iteration in skip_at else 1.0)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
            elif pattern == "megatron":
                loss = loss_of() * (math.inf if iteration in skip_at else 1.0)
                loss.backward()
                wrapper.step()
                wrapper.zero_grad()
            else:
                loss = loss_of()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
        if args.sleep:
            time.sleep(args.sleep)
        if args.announce:
            print(f"iteration {iteration}", file=sys.stderr, flush=True)
    print(f"loss {loss.detach().item():.10f}")
    print(f"checksum {checksum(model, other)}")
    print(f"probe kept {probe is not None}")


if __name__ == "__main__":
    main()
