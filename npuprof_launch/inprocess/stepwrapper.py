"""The optimizer step wrapper: where the step clock counts, before and after an optimizer's range.

torch wraps each optimizer class's ``step`` once (``Optimizer.profile_hook_step``); the optimizer
clock (optimizerclock.py) puts its own wrapper in that place and counts there, not in global
hooks: before torch's ``Optimizer.step#`` range opens, the depth of nested steps (exact mode);
after it closes, the count (exact mode's slow path, or lean mode's count and time by itself, no
extra frame), and the safe point for an action that waits for the step's return. Global hooks
would sit in the dict torch's wrapper iterates, which a compiled training step traces: the job
would not compile as it does bare (issue 27). For dynamo the wrapper is torch's: traced into a
graph it is torch's own (``is_compiling``), and as a frame it is skipped (``skip_code``: its lines
run eagerly) but calls torch's wrapper whenever a compiled region runs it, so that dynamo compiles
torch's frame as it would bare. This code runs on every step of every optimizer, so it is written
for that: closures over plain locals, the clock's state read as plain attributes (``_sole``,
``_lean``, ``_exact``, ``_lean_next``, ``_session``, ``_points``, ``_local``, ``_dynamo``,
``_slow``, ``_slow_after``, ``_exact_only``, ``_broken``: the names both modules keep), and
torch's own wrapper copied rather than wrapped where it is the one every release has. It is a
module of its own because it follows torch's code, not ours: tests/test_torch_contract.py holds
``TORCH_STEP_NAMES`` to each release, tests/unit/test_step_wrapper.py drives ``_around`` with no
torch, and benchmarks/job.py finds the wrapper by this file's name.
"""

from __future__ import annotations

import importlib
import time

from npuprof_launch.inprocess import stepframe

#: The names torch's own ``profile_hook_step`` wrapper uses, in every release from 2.1 to 2.15
#: (tests/test_torch_contract.py reads its source in each): the wrapper ``_like_torch`` mirrors.
TORCH_STEP_NAMES = (
    "cast", "Optimizer", "__class__", "__name__", "torch", "autograd", "profiler", "record_function", "chain",
    "_global_optimizer_pre_hooks", "values", "_optimizer_step_pre_hooks", "isinstance", "tuple", "len",
    "RuntimeError", "_optimizer_step_code", "_optimizer_step_post_hooks", "_global_optimizer_post_hooks",
)  # fmt: skip


def watch_step_returns(clock) -> bool:
    """Give every optimizer's ``step`` a wrapper of the clock's: where it counts, before and after
    the ``Optimizer.step#`` range. Returns False where this torch has no wrapper to take the place of.

    ``clock`` is the OptimizerClock (not imported for its type: it imports this module).

    torch wraps each optimizer class's ``step`` once, with ``Optimizer.profile_hook_step``, when
    its first instance is made (after torch is imported, so after this): the wrapper opens the
    range and runs the hooks inside it. The clock counts in the wrapper that takes its place, not
    in hooks of its own: a global hook is in the dict torch's wrapper iterates, and a compiled
    training step that traces that wrapper would trace it too (or break its graph at it), so the
    job would not compile as it does bare. Before the range: the depth of nested steps (exact
    mode). After it: the count, and the safe point for an action that waits for the step's
    return. A second wrapper around torch's would cost a frame per step, which on a small step
    costs more than all the rest of the clock; so where torch's wrapper is the one every release
    since 2.1 has, ours is that same wrapper with the clock's lines added (``_like_torch``), and
    only a torch with another wrapper gets ours around its own.

    Under ``torch.compile`` the wrapper is what torch's is, for dynamo: traced into a graph,
    it is torch's own wrapper (``_compiled``), and as a frame of its own it is skipped (the clock
    runs eagerly) but calls torch's wrapper, whose frame dynamo compiles as it would bare.
    """
    optimizer_module = importlib.import_module("torch.optim.optimizer")
    optimizer_class = optimizer_module.Optimizer
    original = vars(optimizer_class).get("profile_hook_step")
    inner = getattr(original, "__func__", None)
    if inner is None:
        return False
    if getattr(inner, "_npuprof", False):
        return True

    def profile_hook_step(func):
        hooked = inner(func)
        if getattr(getattr(hooked, "__code__", None), "co_names", None) == TORCH_STEP_NAMES:
            step = stepframe.dressed(_like_torch, inner, hooked)(clock, optimizer_module, func, hooked)
        else:
            step = _around(clock, hooked)
        step._npuprof_torch_step = hooked  # what torch itself would have put there (the benchmark's detached arm)
        clock._step_wrappers.append(step)
        skip = getattr(clock, "_skip", None)
        if skip is not None:
            skip(step)
        return step

    profile_hook_step._npuprof = True  # type: ignore[attr-defined]  # a mark on the function, read with getattr
    optimizer_class.profile_hook_step = staticmethod(profile_hook_step)
    return True


def _like_torch(clock, optimizer_module, func, hooked):
    """torch's ``profile_hook_step`` wrapper of ``func`` (the range, the pre hooks that may change
    the arguments, ``_optimizer_step_code`` for the profiler's Python tracer, the post hooks),
    with the clock's lines before and after the range: ``_before`` and ``_after_range``'s,
    written out here to spare a call. Under a compiled region, torch's own ``hooked`` instead."""
    import functools
    import itertools

    torch, chain, points, now = clock._torch, itertools.chain, clock._points, time.perf_counter
    pre_hooks, post_hooks = optimizer_module._global_optimizer_pre_hooks, optimizer_module._global_optimizer_post_hooks
    local = clock._local

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        self, *_ = args
        dynamo = clock._dynamo
        if dynamo is not None and dynamo.is_compiling():  # traced into a graph: torch's wrapper, as bare
            return _compiled(clock, hooked, self, args, kwargs)
        exact = clock._exact
        if exact:
            local.depth += 1
        try:
            if dynamo is not None and dynamo.callback():  # an eager call from compiled code
                out = hooked(*args, **kwargs)  # torch's frame, for dynamo to compile as it would bare
            else:
                with torch.autograd.profiler.record_function(f"Optimizer.step#{self.__class__.__name__}.step"):
                    for pre_hook in chain(pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
                        result = pre_hook(self, args, kwargs)
                        if result is not None:
                            if isinstance(result, tuple) and len(result) == 2:
                                args, kwargs = result
                            else:
                                raise RuntimeError(
                                    f"{func} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                                )
                    out = func(*args, **kwargs)
                    self._optimizer_step_code()
                    for post_hook in chain(self._optimizer_step_post_hooks.values(), post_hooks.values()):
                        post_hook(self, args, kwargs)
        except BaseException:
            if exact:
                local.depth = max(local.depth - 1, 0)
            raise
        # From here to the end: _after_range's ``after``, written out in place so that the per-step
        # path calls no function of ours (a call is a measurable share of figure 2a); change both.
        if exact:  # exact mode: a step inside a step is no iteration; an outer one goes to the slow path
            depth = local.depth - 1
            local.depth = depth if depth > 0 else 0
            if depth > 0:
                clock._exact_only = True
            elif not clock._broken:
                clock._slow(self, False)
        elif id(self) == clock._sole:  # lean mode's one optimizer (None in the other modes): plain attributes
            session = clock._session
            n = session.steps + 1
            if n < session.call_at:  # nothing due at this boundary: count and time it only
                session.times.append(now())
                session.steps = session.marked[0] = n
                return out
            clock._slow(self, False)
            return out
        elif clock._lean:  # another optimizer while lean
            clock._slow(self, False)
            return out
        elif clock._exact and not local.depth and not clock._broken:
            clock._slow(self, False)  # begun lean, turned exact by a step inside it: this outer step counts
        if points.action is not None or clock._lean_next is not None:
            clock._slow_after(self)
        return out

    return wrapper


def _compiled(clock, hooked, optimizer, args, kwargs):
    """The step as dynamo traces it into a job's graph: torch's own wrapper, then the count,
    which breaks the graph (``clock._slow`` is kept out of graphs); torch's optimizers break it
    inside their step already, so dynamo never gets that far and runs the wrapper as a frame."""
    out = hooked(*args, **kwargs)
    clock._slow(optimizer, False)
    return out


def _around(clock, hooked):
    """``hooked`` (another torch's wrapper, range and hooks inside) with the clock's lines before and after it."""
    import functools

    after = _after_range(clock)
    local = clock._local

    @functools.wraps(hooked)
    def step(*args, **kwargs):
        dynamo = clock._dynamo
        if dynamo is not None and dynamo.is_compiling():
            return _compiled(clock, hooked, args[0], args, kwargs)
        exact = clock._exact
        if exact:
            local.depth += 1
        try:
            out = hooked(*args, **kwargs)
        except BaseException:
            if exact:
                local.depth = max(local.depth - 1, 0)
            raise
        after(args[0], exact)
        return out

    return step


def _after_range(clock):
    """What the moment after an optimizer's range does: in exact mode (as the step began) feed an
    outermost step to the slow path; in lean mode count the step (and call the slow path at a
    boundary that acts, or for another optimizer); a step begun lean that a step inside it turned
    exact (a subclass's ``super().step()``) is counted as an outermost exact one; then run what
    waits for that moment. ``_like_torch``'s step has the same lines in place (no call on the per-step
    path); a change here is a change there."""
    points, now, local = clock._points, time.perf_counter, clock._local

    def after(optimizer, exact: bool) -> None:
        if exact:
            depth = local.depth - 1
            local.depth = depth if depth > 0 else 0
            if depth > 0:
                clock._exact_only = True
            elif not clock._broken:
                clock._slow(optimizer, False)
        elif id(optimizer) == clock._sole:
            session = clock._session
            n = session.steps + 1
            if n < session.call_at:
                session.times.append(now())
                session.steps = session.marked[0] = n
                return
            clock._slow(optimizer, False)
            return
        elif clock._lean:
            clock._slow(optimizer, False)
            return
        elif clock._exact and not local.depth and not clock._broken:
            clock._slow(optimizer, False)  # begun lean, turned exact by a step inside it: this outer step counts
        if points.action is not None or clock._lean_next is not None:
            clock._slow_after(optimizer)

    return after
