"""Step sources: where the hook learns that one step of the job has ended.

The optimizer clock uses torch's global optimizer-step hooks (torch >= 2.0). They fire for every
``torch.optim.Optimizer`` subclass, survive LR schedulers and work under ``torch.compile``,
where wrapping ``Optimizer.step`` does not (see reference/launchers.md section 7). It counts
iterations, not calls:

* a depth counter per thread ignores the inner ``step`` of a wrapper optimizer whose ``step``
  calls another optimizer's ``step`` (DeepSpeed, Accelerate, Lightning, Megatron, or a subclass
  calling ``super().step()``);
* a per-optimizer count advances the clock only when the largest count grows, so a GAN that
  steps two optimizers per iteration, or one optimizer per parameter, counts one step.
"""

from __future__ import annotations

import importlib
import os
import threading
import weakref

from npuprof_launch import importwatch
from npuprof_launch.bootstrap import warn


class OptimizerClock:
    """Counts training iterations from optimizer steps and tells the session at each boundary."""

    def __init__(self, torch_module, first_step) -> None:
        self._torch = torch_module
        self._first_step = first_step
        self._local = threading.local()
        #: id(optimizer) -> [weak reference to it, its step count]. Not a WeakKeyDictionary: that
        #: builds a weak reference per lookup and per store, a third of the clock's cost per step.
        self._per_optimizer: dict[int, list] = {}
        self._count = 0
        self._session = None
        self._handles: list = []
        self._broken = False
        #: Whether an optimizer's step ever ran inside another's (a wrapper optimizer): then only
        #: the depth-guarded hooks count iterations right.
        self._nested_seen = False

    def install(self) -> None:
        optimizer = importlib.import_module("torch.optim.optimizer")
        self._handles = [
            optimizer.register_optimizer_step_pre_hook(self._eager(self._pre)),
            optimizer.register_optimizer_step_post_hook(self._eager(self._post)),
        ]
        os.register_at_fork(after_in_child=self._after_fork_in_child)

    def _eager(self, method):
        """The hook torch calls: ``method``, run through ``torch.compiler.disable`` only while dynamo traces.

        Under torch.compile the disabled version keeps our Python out of the graph (the counts
        stay exact, no recompiles). In eager code, the common case, it is skipped: its eval-frame
        switching cost about 4 us per call in a training loop. It is built once torch._dynamo is
        imported (by the first optimizer or torch.compile, never earlier than dynamo can trace),
        so a process that imports torch and never steps does not pay for importing dynamo.
        """
        compiler = getattr(self._torch, "compiler", None)
        disable = getattr(compiler, "disable", None)
        is_compiling = getattr(compiler, "is_compiling", None)
        if disable is None:
            return method
        if is_compiling is None:  # older torch: no cheap test, so always the disabled version
            return disable(method)
        disabled: list = []

        def hook(optimizer, args, kwargs):
            if disabled and is_compiling():
                return disabled[0](optimizer, args, kwargs)
            return method(optimizer, args, kwargs)

        importwatch.finder().watch("torch._dynamo", lambda _dynamo: disabled.append(disable(method)))
        return hook

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _pre(self, optimizer, args, kwargs) -> None:
        local = self._local
        depth = local.depth = getattr(local, "depth", 0) + 1
        if depth > 1:
            self._nested_seen = True

    def settle(self) -> None:
        """After the last window: keep counting iterations for the report with as little as one call.

        With one optimizer and no wrapper seen, each post-hook call is one iteration, so the pre
        hook and the per-optimizer bookkeeping go and a one-line counter replaces them. Otherwise
        the exact counter stays.
        """
        session = self._session
        if session is None or self._nested_seen or len(self._per_optimizer) != 1 or not self._handles:
            return

        def count(optimizer, args, kwargs) -> None:
            session.steps += 1

        self.remove()
        optimizer = importlib.import_module("torch.optim.optimizer")
        self._handles = [optimizer.register_optimizer_step_post_hook(self._eager(count))]

    def _post(self, optimizer, args, kwargs) -> None:
        local = self._local
        depth = getattr(local, "depth", 1) - 1
        local.depth = depth
        if depth > 0 or self._broken:
            return
        try:
            entry = self._per_optimizer.get(id(optimizer))
            if entry is None or entry[0]() is not optimizer:
                entry = self._track(optimizer)
            entry[1] += 1
            n = entry[1]
            if n <= self._count:
                return
            self._count = n
            session = self._session
            if session is None:
                session = self._session = self._first_step()
                session.set_clock("optimizer.step", self)
                if session.state == "off":
                    self.remove()
                    return
            elif n < session.call_at:  # nothing due at this boundary: only count (no call, no clock read)
                session.steps += 1
                return
            session.boundary()
        except Exception as exc:  # noqa: BLE001 - the job must never see our failure
            self._broken = True
            warn(f"step clock failed, job goes on unprofiled: {exc!r}")

    def _track(self, optimizer) -> list:
        """Start counting a new optimizer; its entry goes when it does, before its id can be reused."""
        per, key = self._per_optimizer, id(optimizer)
        entry = per[key] = [weakref.ref(optimizer, lambda _ref: per.pop(key, None)), 0]
        return entry

    def _after_fork_in_child(self) -> None:
        """A forked child (e.g. a DataLoader worker) starts from nothing and never inherits a profiler."""
        from npuprof_launch import activation

        activation.forget_after_fork()
        self._session = None
        self._count = 0
        self._per_optimizer = {}
        self._local = threading.local()


def install_optimizer_clock(torch_module, first_step) -> OptimizerClock:
    clock = OptimizerClock(torch_module, first_step)
    clock.install()
    return clock
