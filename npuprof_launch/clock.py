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

The clock runs on every iteration of jobs that last days, so it has two modes. It starts
*exact*: a pre hook keeps the depth and a post hook the per-optimizer counts. Once a whole
iteration has shown one optimizer and no wrapper (most jobs), it turns *lean*: the pre hook goes
and the post hook only checks that the optimizer is that one and adds one to the session's
count, one Python frame per step. Any other optimizer sends it back to exact for good. All the
rest (a new optimizer, a boundary where the schedule does something, the first step) runs in
``_advance``, off the per-step path.
"""

from __future__ import annotations

import importlib
import os
import threading
import weakref

from npuprof_launch import importwatch
from npuprof_launch.bootstrap import warn

EXACT, LEAN, OFF = "exact", "lean", "off"


class _Depth(threading.local):
    """How deep this thread is in nested optimizer steps; 0 in every thread to start with."""

    depth = 0


class OptimizerClock:
    """Counts training iterations from optimizer steps and tells the session at each boundary."""

    def __init__(self, torch_module, first_step) -> None:
        self._torch = torch_module
        self._first_step = first_step
        self._local = _Depth()
        #: id(optimizer) -> [weak reference to it, its step count]. Not a WeakKeyDictionary: that
        #: builds a weak reference per lookup and per store, a third of the clock's cost per step.
        self._per_optimizer: dict[int, list] = {}
        self._count = 0
        self._session = None
        self._mode = EXACT
        #: Lean mode: id() of the one optimizer whose every step is one iteration.
        self._sole: int | None = None
        #: Set once another optimizer or a wrapper was seen: the clock stays exact from then on.
        self._exact_only = False
        self._broken = False
        #: The slow path as the hooks call it: ``_advance``, kept out of dynamo's reach once it is imported.
        self._slow = self._advance
        self._pre_hook, self._exact_hook, self._lean_hook = self._hooks()
        #: The same hooks as registered: themselves, or on old torch their torch.compiler.disable versions.
        self._registered = {hook: hook for hook in (self._pre_hook, self._exact_hook, self._lean_hook)}
        self._pre_handle = None
        self._post_handle = None

    def install(self) -> None:
        optimizer = importlib.import_module("torch.optim.optimizer")
        self._pre_handle = optimizer.register_optimizer_step_pre_hook(self._pre_hook)
        self._post_handle = optimizer.register_optimizer_step_post_hook(self._exact_hook)
        importwatch.finder().watch("torch._dynamo", self._keep_out_of_graphs)
        os.register_at_fork(after_in_child=self._after_fork_in_child)

    # -- the hooks torch calls on every optimizer.step ------------------------------------------

    def _hooks(self):
        """The pre hook, the exact post hook and the lean post hook: plain functions, one frame each.

        Their common path calls no Python function, so that under a compiled step (where dynamo
        skips them, see ``_keep_out_of_graphs``) nothing they call is compiled either; every other
        path goes through ``self._slow``.
        """
        clock, local = self, self._local

        def pre(optimizer, args, kwargs) -> None:
            local.depth += 1
            if local.depth > 1:
                clock._exact_only = True

        def exact(optimizer, args, kwargs) -> None:
            depth = local.depth - 1
            local.depth = depth if depth > 0 else 0
            if depth > 0 or clock._broken:
                return
            entry = clock._per_optimizer.get(id(optimizer))
            if entry is not None and entry[0]() is optimizer:
                n = entry[1] + 1
                if n <= clock._count:  # another optimizer of this iteration has counted it
                    entry[1] = n
                    return
                session = clock._session
                if clock._exact_only and session is not None and n < session.call_at:
                    entry[1] = clock._count = n
                    session.steps += 1
                    return
            clock._slow(optimizer)

        def lean(optimizer, args, kwargs) -> None:
            if id(optimizer) == clock._sole:
                session = clock._session
                n = session.steps + 1
                if n < session.call_at:  # nothing due at this boundary: only count
                    session.steps = n
                    return
            clock._slow(optimizer)

        return pre, exact, lean

    # -- everything else, off the per-step path --------------------------------------------------

    def _advance(self, optimizer) -> None:
        """The step the hooks could not count alone: a new optimizer, the first step, a boundary that acts."""
        if self._broken:
            return
        try:
            if self._mode == LEAN:
                self._catch_up(optimizer)
            entry = self._per_optimizer.get(id(optimizer))
            if entry is None or entry[0]() is not optimizer:
                entry = self._track(optimizer)
            n = entry[1] = entry[1] + 1
            if n <= self._count:
                return
            self._count = n
            session = self._session
            if session is None:
                from npuprof_launch import session as sessions  # first_step builds the session from it

                session = self._session = self._first_step()
                session.set_clock("optimizer.step", self)
                if session.state == sessions.OFF:
                    self._set_hooks(OFF)
                    return
                session.boundary()
            elif n < session.call_at:  # nothing due at this boundary: only count (no call, no clock read)
                session.steps += 1
            else:
                session.boundary()
            if self._mode == EXACT and not self._exact_only and n >= 2:
                self._sole = id(optimizer)  # a whole iteration showed one optimizer, no wrapper: turn lean
                self._set_hooks(LEAN)
        except Exception as exc:  # noqa: BLE001 - the job must never see our failure
            self._broken = True
            warn(f"step clock failed, job goes on unprofiled: {exc!r}")

    def _catch_up(self, optimizer) -> None:
        """Leaving the lean hook, where only the session counted: bring the clock's counts up to date.

        The sole optimizer, or one that replaced it, goes on from the session's count; any other
        optimizer means more than one, or a wrapper, and the clock stays exact from now on.
        """
        steps = self._count = self._session.steps
        sole = self._per_optimizer.get(self._sole)
        if sole is not None:
            sole[1] = steps
        if sole is None or id(optimizer) == self._sole:
            self._sole = id(optimizer)
            return
        self._exact_only = True
        self._sole = None
        self._set_hooks(EXACT)

    def _track(self, optimizer) -> list:
        """Start counting a new optimizer; its entry goes when it does, before its id can be reused.

        A second live optimizer starts from 0, so it drives the clock only if it steps more often
        than the others; one that replaces every earlier optimizer (a new phase of training) goes
        on from their count instead of waiting to catch up with it.
        """
        per, key = self._per_optimizer, id(optimizer)
        entry = per[key] = [weakref.ref(optimizer, lambda _ref: per.pop(key, None)), 0 if per else self._count]
        if len(per) > 1:
            self._exact_only = True
        return entry

    def _set_hooks(self, mode: str) -> None:
        """Switch modes from inside a post hook, while torch iterates over the post hooks.

        The post hook is replaced in place (same key: the iteration goes on unharmed), or removed
        only when it is the last one (nothing left to iterate). The pre hooks are not being
        iterated at that moment, so the pre hook comes and goes freely.
        """
        optimizer = importlib.import_module("torch.optim.optimizer")
        self._mode = mode
        wants_pre = mode == EXACT
        if wants_pre and self._pre_handle is None:
            self._pre_handle = optimizer.register_optimizer_step_pre_hook(self._registered[self._pre_hook])
        elif not wants_pre and self._pre_handle is not None:
            self._pre_handle.remove()
            self._pre_handle = None
        hooks = self._post_handle.hooks_dict_ref() if self._post_handle is not None else None
        if hooks is None or self._post_handle.id not in hooks:
            return
        if mode != OFF:
            hooks[self._post_handle.id] = self._registered[self._post_hook_now()]
        elif next(reversed(hooks)) == self._post_handle.id:
            self._post_handle.remove()
            self._post_handle = None
        else:  # another post hook follows ours: step aside without changing the dict's size
            hooks[self._post_handle.id] = _nothing

    def _keep_out_of_graphs(self, dynamo) -> None:
        """Once dynamo exists, a compiled training step must neither trace the hooks nor compile what they call.

        ``torch._dynamo.decorators.skip`` marks the hooks themselves: dynamo breaks the graph at
        them and runs them as they are, at no cost in eager code. The slow path goes through
        ``torch.compiler.disable``, whose eval-frame switch (about 4 us) it pays only at the few
        steps it runs. A torch without ``skip`` gets the disabled hooks themselves.
        """
        disable = getattr(getattr(self._torch, "compiler", None), "disable", None) or getattr(dynamo, "disable", None)
        if disable is None:
            return
        self._slow = disable(self._advance)
        skip = getattr(importlib.import_module("torch._dynamo.decorators"), "skip", None)
        if skip is not None:
            for hook in self._registered:
                skip(hook)
            return
        self._registered = {hook: disable(hook) for hook in self._registered}
        for handle, hook in ((self._pre_handle, self._pre_hook), (self._post_handle, self._post_hook_now())):
            hooks = handle.hooks_dict_ref() if handle is not None else None
            if hooks is not None and handle.id in hooks and hook is not None:
                hooks[handle.id] = self._registered[hook]

    def _post_hook_now(self):
        return {EXACT: self._exact_hook, LEAN: self._lean_hook}.get(self._mode)

    def _after_fork_in_child(self) -> None:
        """A forked child (e.g. a DataLoader worker) starts from nothing and never inherits a profiler."""
        from npuprof_launch import activation

        activation.forget_after_fork()
        self._session = None
        self._count = 0
        self._per_optimizer = {}
        self._local.depth = 0
        self._exact_only = False
        self._sole = None
        if self._mode == LEAN:
            self._set_hooks(EXACT)


def _nothing(optimizer, args, kwargs) -> None:
    """A post hook that does nothing: what the clock leaves where it could not remove its own."""


def install_optimizer_clock(torch_module, first_step) -> OptimizerClock:
    clock = OptimizerClock(torch_module, first_step)
    clock.install()
    return clock
