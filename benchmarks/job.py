"""The workload the overhead benchmarks time: a small CPU training loop, or a bare optimizer step.

run.py starts this same file in every arm of a comparison, so the arms differ only in their
environment (the hook on or off, before or after its window) or in ``--hand-profiler``: the job
itself never knows which arm it is in. It prints one JSON line on stdout for run.py to read.

``--rounds R`` times (in CPU time) R rounds of three blocks in this one process: one with the
optimizer-step hooks attached as the process found them, and two with them detached, in an order
that rotates from round to round. attached - detached is the cost of whatever hooks the tool
registered, with the noise of a shared machine cancelled pair by pair; detached - detached, the
same comparison where nothing differs, is the control: how far such a figure strays by chance.
A bare process has no hooks; all three blocks then match. "The hooks" are the global pre and
post hooks and the wrapper the clock gives each optimizer class's ``step`` in place of torch's (stepwrapper.py,
``watch_step_returns``): detached, the class's ``step`` is torch's own again, as in a bare process.

``--toggle step-times`` times the same three blocks with the tool's hooks left alone and its
whole-run step times switched on (attached) and off (detached) instead: ``--step-times`` against
``--no-step-times`` in one process (figure 8).

``--step-starts`` adds the wall time at which each of the ``--steps`` iterations began (and the
end of the last one) to the JSON line, and the process's CPU time at the same moments: run.py
finds the window's end stall in them (figure 6).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch

#: Sizes of the small training loop: about 0.7 ms a step on one core of a 2.6 GHz Xeon.
WIDTH, BATCH, FEATURES = 128, 64, 64
#: The wide workload: many small layers, so that a recorded step holds many operators (a big
#: model's trace) while a step stays short: about 50 ms a step for 200 layers.
WIDE_WIDTH, WIDE_BATCH = 16, 8


class HookSwitch:
    """Detach and re-attach the optimizer-step hooks that this process holds.

    torch keeps the global hooks in two module-level dicts (torch >= 2.0); emptying and refilling
    them is the least intrusive way to compare "with the tool's hooks" and "without" inside one
    process. The clock also gives each optimizer class its own ``step`` wrapper in place of the
    one torch's ``profile_hook_step`` makes (stepwrapper.py): detached, ``type(optimizer).step`` is
    torch's wrapper (the one the clock keeps as ``_npuprof_torch_step``); attached, the clock's.
    """

    def __init__(self, optimizer) -> None:
        from torch.optim import optimizer as optimizer_module

        self._dicts = (optimizer_module._global_optimizer_pre_hooks, optimizer_module._global_optimizer_post_hooks)
        self._saved = [dict(hooks) for hooks in self._dicts]
        #: (class, the clock's step, torch's in its place) for each class whose step the clock wraps.
        self._steps = [
            (klass, vars(klass)["step"], vars(klass)["step"]._npuprof_torch_step)
            for klass in type(optimizer).__mro__
            if _clock_wrapper(vars(klass).get("step"))
        ]

    @property
    def count(self) -> int:
        return sum(len(saved) for saved in self._saved) + len(self._steps)

    @property
    def wrappers(self) -> int:
        return len(self._steps)

    def attach(self, on: bool) -> None:
        for hooks, saved in zip(self._dicts, self._saved):
            hooks.clear()
            if on:
                hooks.update(saved)
        for klass, clock_step, torch_step in self._steps:
            klass.step = clock_step if on else torch_step


def _clock_wrapper(function) -> bool:
    """Whether ``function`` is the clock's wrapper of an optimizer class's step: its code is in
    stepwrapper.py, or dressed as torch's wrapper (stepframe.py: in torch's file, not torch's code)."""
    code = getattr(function, "__code__", None)
    torch_step = getattr(function, "_npuprof_torch_step", None)
    if code is None or torch_step is None:
        return False
    folder, name = os.path.split(code.co_filename)
    if name == "stepwrapper.py" and os.path.basename(folder) == "inprocess":
        return True
    return code.co_filename == torch_step.__code__.co_filename and code is not torch_step.__code__


class StepTimesSwitch:
    """Switch the tool's whole-run step times on (attached) and off (detached) in this process.

    The session reads ``config.step_times`` at each checkpoint, where it writes the step times
    (steptimes.py); ``checkpoint_s`` makes checkpoints come that often instead of every
    ``session.CHECKPOINT_S``, so that the blocks hold some (run.py scales the figure back).
    """

    def __init__(self, checkpoint_s: float | None) -> None:
        import sys

        self._session = getattr(sys.modules.get("npuprof_launch.inprocess.hook"), "_process_session", None)
        if self._session is None:
            raise SystemExit("--toggle step-times needs the tool's session in this process")
        from npuprof_launch.inprocess import session as session_module

        self.real_checkpoint_s = session_module.CHECKPOINT_S
        if checkpoint_s:
            session_module.CHECKPOINT_S = checkpoint_s
            self._session._checkpoint_at = self._session.steps + 1
            self._session._plan_next_call()  # the clock calls the session again at the next step
        self._configs = {on: self._session.config.with_values({"step-times": on}) for on in (True, False)}
        self._started = self._session.config.step_times

    count = 1

    def attach(self, on: bool) -> None:
        self._session.config = self._configs[on]

    def restore(self) -> None:
        self._session.config = self._configs[bool(self._started)]


class HangWatchSwitch(StepTimesSwitch):
    """Switch the hang watch on (its checkpoints re-arm faulthandler's timer) and off, like
    StepTimesSwitch: checkpoints every ``checkpoint_s`` so that the blocks hold some re-arms."""

    def __init__(self, checkpoint_s: float | None) -> None:
        super().__init__(checkpoint_s)
        from npuprof_launch.inprocess import hangwatch

        self._watch = hangwatch.watch_for(self._session._status_path, None)
        self._session.hang.watch = self._watch

    def attach(self, on: bool) -> None:
        self._session.hang.watch = self._watch if on else False

    def restore(self) -> None:
        self._watch.disarm()
        self._session.hang.watch = False


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

    return step, optimizer


def wide_step_factory(device: str = "cpu", layers: int = 200):
    """One step of ``layers`` tiny Linear+ReLU layers: thousands of operators a step, a large trace."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        *[module for _ in range(layers) for module in (torch.nn.Linear(WIDE_WIDTH, WIDE_WIDTH), torch.nn.ReLU())]
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(WIDE_BATCH, WIDE_WIDTH, device=device)
    y = torch.randn(WIDE_BATCH, WIDE_WIDTH, device=device)

    def step() -> None:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    return step, optimizer


def tiny_step_factory(device: str = "cpu"):
    """A bare ``optimizer.step`` of one scalar: the smallest step, so the hooks' cost stands out.

    The step looks ``optimizer.step`` up at each call (a bound method taken once would keep the
    class's step of that moment, and HookSwitch could not detach the clock's wrapper from it).
    """
    parameter = torch.nn.Parameter(torch.zeros(1, device=device))
    parameter.grad = torch.zeros(1, device=device)
    optimizer = torch.optim.SGD([parameter], lr=0.1)

    def step() -> None:
        optimizer.step()

    return step, optimizer


def hand_profiler(
    spec: str, trace_dir: str, device: str = "cpu", tensorboard: bool = False, record_shapes: bool = False
):
    """torch.profiler with the schedule written by hand, as a user would without the tool.

    It records what the tool's torch backend records: the CPU, and CUDA when the model is there.
    ``tensorboard``: the traces are written by ``torch.profiler.tensorboard_trace_handler``, as
    torch's documentation shows it.
    """
    skip_first, warmup, active, repeat = (int(part) for part in spec.split(","))
    os.makedirs(trace_dir, exist_ok=True)

    def on_trace_ready(prof) -> None:
        prof.export_chrome_trace(os.path.join(trace_dir, f"hand.{time.time_ns()}.pt.trace.json"))

    return torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU]
        + ([torch.profiler.ProfilerActivity.CUDA] if device.startswith("cuda") else []),
        schedule=torch.profiler.schedule(wait=0, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(trace_dir) if tensorboard else on_trace_ready,
        record_shapes=record_shapes,
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

    hook = sys.modules.get("npuprof_launch.inprocess.hook")
    session = getattr(hook, "_process_session", None)
    state = {"clock_steps": None, "clock_state": None, "profiler_on": torch.autograd._profiler_enabled()}
    if session is not None:
        state.update(clock_steps=session.steps, clock_state=session.state.value)
    return state


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", choices=["train", "tiny", "wide"], default="train")
    parser.add_argument("--layers", type=int, default=200, help="layers of the wide workload")
    parser.add_argument("--steps", type=int, default=20, help="plain steps before any timing")
    parser.add_argument("--rounds", type=int, default=0, help="rounds of 3 timed blocks (see above)")
    parser.add_argument("--block", type=int, default=50, help="steps per timed block")
    parser.add_argument("--device", default="cpu", help="where the model lives: cpu, or cuda on a GPU machine")
    parser.add_argument("--hand-profiler", metavar="SKIP,WARMUP,ACTIVE,REPEAT")
    parser.add_argument("--trace-dir", default="hand_traces")
    parser.add_argument("--tensorboard", action="store_true", help="hand profiler: tensorboard_trace_handler")
    parser.add_argument("--record-shapes", action="store_true", help="hand profiler: record_shapes=True")
    parser.add_argument("--step-starts", action="store_true", help="print when each of the --steps began")
    parser.add_argument(
        "--toggle", choices=["hooks", "step-times", "hang-watch"], default="hooks", help="what the blocks switch"
    )
    parser.add_argument(
        "--checkpoint-s", type=float, help="--toggle step-times, hang-watch: the session's checkpoint interval"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)  # one core per arm: the arms of a pair must not fight for the two cores
    factories = {"train": train_step_factory, "tiny": tiny_step_factory}
    factory = factories.get(args.workload) or (lambda device: wide_step_factory(device, args.layers))
    step, optimizer = factory(args.device)

    starts: list[float] = []
    cpu_starts: list[float] = []
    now, cpu = time.perf_counter, time.process_time
    if args.hand_profiler:
        profiler = hand_profiler(args.hand_profiler, args.trace_dir, args.device, args.tensorboard, args.record_shapes)
        with profiler as prof:
            for _ in range(args.steps):
                starts.append(now())
                cpu_starts.append(cpu())
                step()
                prof.step()
    else:
        for _ in range(args.steps):
            starts.append(now())
            cpu_starts.append(cpu())
            step()
    starts.append(now())
    cpu_starts.append(cpu())

    result: dict = {"hooks": 0}
    if args.step_starts:
        result.update(starts_s=starts, cpu_starts_s=cpu_starts)
    if args.rounds:
        switches = {"step-times": StepTimesSwitch, "hang-watch": HangWatchSwitch}
        switch = HookSwitch(optimizer) if args.toggle == "hooks" else switches[args.toggle](args.checkpoint_s)
        blocks: dict[str, list[float]] = {"attached_us": [], "detached_us": [], "control_us": []}
        time_block(step, args.block)
        for index in range(args.rounds):
            names = list(blocks)
            for name in names[index % 3 :] + names[: index % 3]:
                switch.attach(name == "attached_us")
                blocks[name].append(time_block(step, args.block))
        if isinstance(switch, StepTimesSwitch):
            switch.restore()
            result.update(real_checkpoint_s=switch.real_checkpoint_s, checkpoint_s=args.checkpoint_s)
        else:
            switch.attach(True)
            result.update(wrappers=switch.wrappers)
        result.update(hooks=switch.count, **blocks)
    result.update(clock_state())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
