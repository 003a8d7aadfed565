"""A configurable CPU training loop for the tests: prints a loss and an exact weight checksum.

--mode plain   one AdamW optimizer and an LR scheduler
--mode gan     two optimizers stepped once each per iteration
--mode nested  a wrapper optimizer whose step() calls an inner optimizer's step()
--mode late    one optimizer, and from iteration --change on a second one as well
--mode swap    one optimizer, replaced by a new one (the old one freed) at iteration --change
--mode accum   gradient accumulation: one optimizer step every --accum micro-batches
--mode none    no optimizer at all (forward passes only)
--compile      run the model through torch.compile
--fault WHAT   a test double of the profiler: torch.profiler.profile's start, step, stop or
               export_chrome_trace raises (the job itself never calls them)
--break-output-at N   at step N, replace $NPU_PROF_OUTPUT_DIR by a plain file (a disk gone bad)
--remove-output-at N  at step N, remove $NPU_PROF_OUTPUT_DIR with everything in it
--announce     print "step N" to stderr after each step (for the signal tests)
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


def inject_fault(method: str) -> None:
    """Make one method of torch.profiler.profile raise, as a broken profiler would."""
    import torch.profiler

    def broken(self, *args, **kwargs):
        raise RuntimeError(f"injected fault in profile.{method}")

    setattr(torch.profiler.profile, method, broken)


def damage_output(remove: bool) -> None:
    import os
    import shutil

    out = os.environ.get("NPU_PROF_OUTPUT_DIR")
    if out and os.path.isdir(out):
        shutil.rmtree(out)
        if not remove:
            with open(out, "w") as handle:
                handle.write("not a directory any more\n")


def checksum(*modules) -> str:
    digest = hashlib.sha256()
    for module in modules:
        for tensor in module.state_dict().values():
            digest.update(repr(tensor.tolist()).encode())
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--mode", default="plain", choices=["plain", "gan", "nested", "accum", "none", "late", "swap"])
    parser.add_argument("--change", type=int, default=4, help="the iteration where --mode late or swap acts")
    parser.add_argument("--accum", type=int, default=2)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep in each step")
    parser.add_argument("--fault", choices=["start", "step", "stop", "export_chrome_trace"])
    parser.add_argument("--break-output-at", type=int, default=-1)
    parser.add_argument("--remove-output-at", type=int, default=-1)
    parser.add_argument("--announce", action="store_true")
    args = parser.parse_args()
    if args.fault:
        inject_fault(args.fault)
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

    for index in range(args.steps):
        if index == args.break_output_at or index == args.remove_output_at:
            damage_output(remove=index == args.remove_output_at)
        if args.mode == "none":
            with torch.no_grad():
                loss = torch.nn.functional.mse_loss(run(x), y)
            continue
        if index + 1 == args.change and args.mode == "late":
            optimizers.append(torch.optim.Adam(other.parameters(), lr=0.01))
        if index + 1 == args.change and args.mode == "swap":
            optimizers = [torch.optim.SGD(model.parameters(), lr=0.01)]
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
        if args.announce:
            import sys

            print(f"step {index + 1}", file=sys.stderr, flush=True)
    print(f"loss {loss.item():.10f}")
    print(f"checksum {checksum(model, other)}")


if __name__ == "__main__":
    main()
