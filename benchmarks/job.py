"""The workload the overhead benchmarks time: a small CPU training loop, or a bare optimizer step.

run.py starts this same file in every arm of a comparison, so the arms differ only in their
environment (the hook on or off, before or after its window) or in ``--hand-profiler``: the job
itself never knows which arm it is in. It prints one JSON line on stdout for run.py to read.

``--rounds R`` times (in CPU time) R rounds of three blocks in this one process: one with the
optimizer-step hooks attached as the process found them, and two with them detached, in an order
that rotates from round to round. attached - detached is the cost of whatever hooks the tool
registered, with the noise of a shared machine cancelled pair by pair; detached - detached, the
same comparison where nothing differs, is the control: how far such a figure strays by chance.
A bare process has no hooks; all three blocks then match.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch

#: Sizes of the small training loop: about 0.7 ms a step on one core of a 2.6 GHz Xeon.
WIDTH, BATCH, FEATURES = 128, 64, 64


class HookSwitch:
    """Detach and re-attach the global optimizer-step hooks that this process holds.

    torch keeps them in two module-level dicts (torch >= 2.0); emptying and refilling them is
    the least intrusive way to compare "with the tool's hooks" and "without" inside one process.
    """

    def __init__(self) -> None:
        from torch.optim import optimizer as optimizer_module

        self._dicts = (optimizer_module._global_optimizer_pre_hooks, optimizer_module._global_optimizer_post_hooks)
        self._saved = [dict(hooks) for hooks in self._dicts]

    @property
    def count(self) -> int:
        return sum(len(saved) for saved in self._saved)

    def attach(self, on: bool) -> None:
        for hooks, saved in zip(self._dicts, self._saved):
            hooks.clear()
            if on:
                hooks.update(saved)


def train_step_factory(device: str = "cpu"):
    """One step of a small MLP trained with AdamW: forward, backward, optimizer step."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, WIDTH),
        torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH),
        torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, 1),
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, FEATURES, device=device)
    y = x.sum(dim=1, keepdim=True)

    def step() -> None:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


def tiny_step_factory(device: str = "cpu"):
    """A bare ``optimizer.step`` of one scalar: the smallest step, so the hooks' cost stands out."""
    parameter = torch.nn.Parameter(torch.zeros(1, device=device))
    parameter.grad = torch.zeros(1, device=device)
    optimizer = torch.optim.SGD([parameter], lr=0.1)
    return optimizer.step


def hand_profiler(spec: str, trace_dir: str, device: str = "cpu"):
    """torch.profiler with the schedule written by hand, as a user would without the tool.

    It records what the tool's torch backend records: the CPU, and CUDA when the model is there.
    """
    skip_first, warmup, active, repeat = (int(part) for part in spec.split(","))
    os.makedirs(trace_dir, exist_ok=True)

    def on_trace_ready(prof) -> None:
        prof.export_chrome_trace(os.path.join(trace_dir, f"hand.{time.time_ns()}.pt.trace.json"))

    return torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU]
        + ([torch.profiler.ProfilerActivity.CUDA] if device.startswith("cuda") else []),
        schedule=torch.profiler.schedule(wait=0, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first),
        on_trace_ready=on_trace_ready,
    )


def time_block(step, count: int) -> float:
    """CPU microseconds per step over ``count`` steps.

    CPU time, not wall time: on a shared machine a block's wall time also holds the time this
    process waited for a core, which is the neighbours' cost, not the hooks'.
    """
    start = time.process_time_ns()
    for _ in range(count):
        step()
    return (time.process_time_ns() - start) / count / 1e3


def clock_state() -> dict:
    """The tool's session in this process, as run.py checks it: the arm must be what it claims.

    ``profiler_on`` is whether torch still has a profiler recording: after the last window it
    must not, or the post-window figure would time the profiler's leftovers, not only the hooks.
    """
    import sys

    hook = sys.modules.get("npuprof_launch.hook")
    session = getattr(hook, "_process_session", None)
    state = {"clock_steps": None, "clock_state": None, "profiler_on": torch.autograd._profiler_enabled()}
    if session is not None:
        state.update(clock_steps=session.steps, clock_state=session.state.value)
    return state


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", choices=["train", "tiny"], default="train")
    parser.add_argument("--steps", type=int, default=20, help="plain steps before any timing")
    parser.add_argument("--rounds", type=int, default=0, help="rounds of 3 timed blocks (see above)")
    parser.add_argument("--block", type=int, default=50, help="steps per timed block")
    parser.add_argument("--device", default="cpu", help="where the model lives: cpu, or cuda on a GPU machine")
    parser.add_argument("--hand-profiler", metavar="SKIP,WARMUP,ACTIVE,REPEAT")
    parser.add_argument("--trace-dir", default="hand_traces")
    args = parser.parse_args()
    torch.set_num_threads(1)  # one core per arm: the arms of a pair must not fight for the two cores
    step = (train_step_factory if args.workload == "train" else tiny_step_factory)(args.device)

    if args.hand_profiler:
        with hand_profiler(args.hand_profiler, args.trace_dir, args.device) as prof:
            for _ in range(args.steps):
                step()
                prof.step()
    else:
        for _ in range(args.steps):
            step()

    result: dict = {"hooks": 0}
    if args.rounds:
        switch = HookSwitch()
        blocks: dict[str, list[float]] = {"attached_us": [], "detached_us": [], "control_us": []}
        time_block(step, args.block)
        for index in range(args.rounds):
            names = list(blocks)
            for name in names[index % 3 :] + names[: index % 3]:
                switch.attach(name == "attached_us")
                blocks[name].append(time_block(step, args.block))
        switch.attach(True)
        result.update(hooks=switch.count, **blocks)
    result.update(clock_state())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
