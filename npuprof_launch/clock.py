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

from npuprof_launch.bootstrap import warn


class OptimizerClock:
    """Counts training iterations from optimizer steps and tells the session at each boundary."""

    def __init__(self, torch_module, first_step) -> None:
        self._torch = torch_module
        self._first_step = first_step
        self._local = threading.local()
        self._per_optimizer: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._count = 0
        self._session = None
        self._handles: list = []
        self._broken = False

    def install(self) -> None:
        optimizer = importlib.import_module("torch.optim.optimizer")
        disable = getattr(getattr(self._torch, "compiler", None), "disable", None)
        pre, post = self._pre, self._post
        if disable is not None:
            # Run eagerly under torch.compile: no graph break, no warning, the counts stay exact.
            pre, post = disable(pre), disable(post)
        self._handles = [
            optimizer.register_optimizer_step_pre_hook(pre),
            optimizer.register_optimizer_step_post_hook(post),
        ]
        os.register_at_fork(after_in_child=self._after_fork_in_child)

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _pre(self, optimizer, args, kwargs) -> None:
        local = self._local
        local.depth = getattr(local, "depth", 0) + 1

    def _post(self, optimizer, args, kwargs) -> None:
        local = self._local
        depth = getattr(local, "depth", 1) - 1
        local.depth = depth
        if depth > 0 or self._broken:
            return
        try:
            per = self._per_optimizer
            n = per.get(optimizer, 0) + 1
            per[optimizer] = n
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
            session.boundary()
        except Exception as exc:  # noqa: BLE001 - the job must never see our failure
            self._broken = True
            warn(f"step clock failed, job goes on unprofiled: {exc!r}")

    def _after_fork_in_child(self) -> None:
        """A forked child (e.g. a DataLoader worker) starts from nothing and never inherits a profiler."""
        from npuprof_launch import activation

        activation.forget_after_fork()
        self._session = None
        self._count = 0
        self._per_optimizer = weakref.WeakKeyDictionary()
        self._local = threading.local()


def install_optimizer_clock(torch_module, first_step) -> OptimizerClock:
    clock = OptimizerClock(torch_module, first_step)
    clock.install()
    return clock
