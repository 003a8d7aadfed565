"""The optimizer clock: counts training iterations from ``optimizer.step`` (a step clock, stepclock.py).

Every ``torch.optim.Optimizer`` subclass's ``step`` goes through the wrapper torch gives it
(``Optimizer.profile_hook_step``, where torch's global step hooks run); the clock takes that
wrapper's place (stepwrapper.py) and counts there, before and after the ``Optimizer.step#``
range, instead of in global hooks of its own: those would be in the dict a compiled training step
traces, so the job would not compile as it does bare (issue 27). Only outermost steps count: a
thread-local depth ignores the inner ``step`` of a wrapper (an Optimizer subclass calling another's ``step``,
``GradScaler.step``, or a wrapper that is no Optimizer at all, found on the stack at the first
step). Which outermost steps end an iteration is iterations.py's business. Two steps are counted
even when no optimizer stepped:

* ``GradScaler.step`` that skipped the optimizer for inf/NaN gradients (common in the first
  iterations of mixed precision): every ``GradScaler`` class's own ``step`` is wrapped when the
  first scaler is created, the job's subclasses and torch_npu's (which overrides ``step``) too;
* a wrapper that is no ``torch.optim.Optimizer`` and skips the inner step on overflow
  (Megatron's and MindSpeed's mixed-precision optimizers, DeepSpeed's ZeRO optimizer): an object
  whose class name says it is an optimizer, that is no ``nn.Module``, and that holds the stepped
  optimizer, found as the caller of the first step that runs; its ``step`` is wrapped from then on.

The clock runs on every iteration of jobs that last days, so it has two modes. It starts
*exact*: the wrapper keeps the depth before the range and feeds iterations.py after it (the slow
path). Once one optimizer is known to make every iteration alone (most jobs) it turns *lean*: the
wrapper only checks the optimizer, records the time and adds one to the session's count, in a
frame that runs anyway. A torch whose ``Optimizer`` has no ``profile_hook_step`` to take the
place of gets global hooks instead, and stays exact. Any other optimizer, a wrapper or a step
inside a step sends it back to exact for good. All the rest runs in ``_advance``, off the per-step path.

That wrapper is in a module of its own because it is torch's code as much as ours (a copy of
torch's ``profile_hook_step`` wrapper, held to every release by tests/test_torch_contract.py);
this module holds the clock's state and everything off the per-step path. The wrapper reads the
clock's attributes directly (``_sole``, ``_lean``, ``_session``, ``_slow``...), one plain lookup
each, so those names are part of the contract between the two modules.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import weakref
from typing import TYPE_CHECKING

from npuprof_launch.inprocess import importwatch, resumed, stepwrapper
from npuprof_launch.inprocess.iterations import Iterations

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType, ModuleType, SimpleNamespace

    from npuprof_launch.inprocess.safepoints import SafePoints
    from npuprof_launch.inprocess.stepclock import ClockSession

EXACT, LEAN, DETACHED = "exact", "lean", "detached"


class _Depth(threading.local):
    """How deep this thread is in nested steps (optimizer, scaler, wrapper); 0 to start with."""

    depth = 0


class OptimizerClock:
    """Counts iterations from optimizer steps and tells the session at each boundary."""

    def __init__(
        self,
        *,
        torch_module: ModuleType,
        new_session: Callable[[], ClockSession],
        points: SafePoints,
        say: Callable[[str], None],
    ) -> None:
        self._torch = torch_module
        self._new_session = new_session
        self._points = points
        self._say = say
        self._local = _Depth()
        self._iterations = Iterations()
        #: id(object) -> weak reference to it, for every optimizer or wrapper counted.
        self._known: dict[int, weakref.ref] = {}
        self._session: ClockSession | None = None
        self._mode = EXACT
        #: Lean mode, read by the step wrapper on every step (a plain attribute).
        self._lean = False
        #: Exact mode, read by the step wrapper on every step: it keeps the depth and calls the slow path.
        self._exact = True
        #: Once dynamo is imported: its ``is_compiling`` and the eval-frame ``callback`` (stepwrapper.py).
        self._dynamo: SimpleNamespace | None = None
        #: Once dynamo is imported: what keeps a wrapper's frame out of its graphs (None without one).
        self._skip: Callable[[Callable], object] | None = None
        #: Lean mode: id() of the one optimizer whose every step is one iteration; None in the other modes.
        self._sole: int | None = None
        #: The optimizer that may turn the clock lean once its step has returned through the wrapper.
        self._lean_next: int | None = None
        #: Set once a wrapper or a second optimizer was seen: the clock stays exact from then on.
        self._exact_only = False
        self._broken = False
        self._looked_for_wrappers = False
        self._wrapped_classes: set[type] = set()
        #: The slow path as the hooks call it: ``_advance``, kept out of dynamo's reach once it is imported.
        self._slow = self._advance
        #: What the step wrapper calls after a step returned, kept out of dynamo's reach like ``_slow``.
        self._slow_after = self._after_step
        #: What a counted ``step`` (a scaler's, a wrapper's: ``_counting``) calls around the step,
        #: kept out of dynamo's reach like ``_slow``: enter, leave, and the count of an outermost one.
        self._enter_now, self._leave_now, self._outer_now = self.enter, self.leave, self.outer_step
        #: The counted steps (``_counting``), whose frames dynamo skips like the step wrappers'.
        self._counted: list = []
        self._pre_hook, self._exact_hook = self._hooks()
        #: Global hooks, only where this torch has no step wrapper to take the place of.
        self._hooked = False

    def install(self) -> None:
        """Arm the clock, once torch is imported: the step wrapper torch will give each optimizer
        class (stepwrapper.py; global hooks where there is none), dynamo's skips once it exists,
        the scalers, the fork."""
        self._step_wrappers: list = []
        if not stepwrapper.watch_step_returns(self):
            optimizer = importlib.import_module("torch.optim.optimizer")
            optimizer.register_optimizer_step_pre_hook(self._pre_hook)
            optimizer.register_optimizer_step_post_hook(self._exact_hook)
            self._hooked = True
        importwatch.finder().watch("torch._dynamo", self._keep_out_of_graphs)
        _watch_grad_scalers(self)
        resumed.watch_loads(self._torch, self._say)
        os.register_at_fork(after_in_child=self.after_fork)

    @property
    def session(self) -> ClockSession | None:
        """The process's session, opened at the first counted step (stepclock.StepClock)."""
        return self._session

    # -- the hooks torch calls on every optimizer.step ------------------------------------------

    def _hooks(self):
        """The pre hook and the exact post hook, for a torch with no step wrapper to replace:
        what the wrapper does before and after the range, as global hooks (inside it)."""
        clock, local = self, self._local

        def pre(optimizer, args, kwargs) -> None:
            local.depth += 1

        def exact(optimizer, args, kwargs) -> None:
            depth = local.depth - 1
            local.depth = depth if depth > 0 else 0
            if depth > 0:
                clock._exact_only = True  # a step inside a step: a lean count could not tell them apart
                return
            if clock._broken:
                return
            clock._slow(optimizer, True)

        return pre, exact

    def outer_step(self, obj: object, inside_range: bool) -> None:
        """A step that did not come through the optimizer's own post hook: a ``GradScaler.step``
        (``obj`` is its optimizer) or a wrapper's ``step`` (``obj`` is the wrapper)."""
        if not self._broken:
            self._slow(obj, inside_range)

    def enter(self) -> None:
        self._local.depth += 1
        if self._mode == LEAN:  # a scaler or a wrapper: inner steps need the depth
            assert self._session is not None  # lean mode begins after a counted step
            self._iterations.count = self._session.steps  # while lean only the session counted
            self._set_mode(EXACT)
        self._exact_only = True

    def leave(self) -> int:
        depth = self._local.depth = max(self._local.depth - 1, 0)
        return depth

    # -- everything else, off the per-step path --------------------------------------------------

    def _advance(self, obj, inside_range: bool) -> None:
        """A step the hooks could not count alone: feed it to the iterations and tell the session."""
        if self._broken:
            return
        try:
            if self._mode == LEAN and not self._leave_lean(obj):
                return
            if not self._looked_for_wrappers:
                self._looked_for_wrappers = True
                obj = self._wrapper_of(obj)
            key = id(obj)
            ref = self._known.get(key)
            if ref is None or ref() is not obj:
                self._track(obj)
            delta = self._iterations.step(key)
            session = self._session
            if session is None:
                if delta <= 0:
                    return
                session = self._session = self._new_session()
                session.clock_name = "optimizer.step"
                if session.off:
                    self._set_mode(DETACHED)
                    return
                session.number_from(*resumed.job_numbering(sys._getframe(1)))  # a resumed job's numbering, once
            for _ in range(delta):
                session.step_ended(inside_range=inside_range)
            if delta < 0:
                session.retract()
            if self._mode == EXACT and not self._exact_only and self._iterations.sole() == key:
                self._lean_next = key  # one optimizer makes every iteration: lean once its step returns
        except Exception as exc:  # noqa: BLE001 - the job must never see our failure
            self._broken = True
            self._say(f"step clock failed, job goes on unprofiled: {exc!r}")

    def _after_step(self, obj) -> None:
        """An optimizer's ``step`` returned through the wrapper: run what waits for that moment,
        and turn lean if this is the optimizer that makes every iteration. Only here: lean mode
        counts in the wrapper, so it begins where the wrapper is known to run for that optimizer."""
        try:
            self._points.after_step()
            key, self._lean_next = self._lean_next, None
            if (
                key == id(obj)
                and self._mode == EXACT
                and not self._exact_only
                and not self._broken
                and self._local.depth == 0
                and self._iterations.sole() == key
            ):
                self._sole = key
                self._set_mode(LEAN)
        except Exception as exc:  # noqa: BLE001
            self._broken = True
            self._say(f"step clock failed, job goes on unprofiled: {exc!r}")

    def _leave_lean(self, obj) -> bool:
        """A step the wrapper passed on: the sole optimizer at a boundary that acts, or another one.

        While lean only the session counted: the iterations catch up first. Another optimizer
        while the sole one lives means more than one, and the clock stays exact from now on; one
        that replaced the sole one after it was freed may turn lean again once it is known.

        Returns False for a step that is no iteration of its own, which lean mode (no pre hook,
        no depth) could not tell: a step inside another optimizer's step (a subclass calling
        ``super().step()``), counted instead by the outer step through the post hook now back;
        or the step of an optimizer that holds the sole one, whose inner step was just counted.
        """
        assert self._session is not None and self._sole is not None  # lean mode has both (_after_step)
        self._iterations.count = self._session.steps
        if id(obj) == self._sole:
            return True
        ref = self._known.get(self._sole)
        sole = ref() if ref is not None else None
        if sole is not None:
            self._exact_only = True
        self._sole = None
        self._set_mode(EXACT)
        if self._inside_another_step() or (sole is not None and _holds(obj, [sole])):
            self._exact_only = True
            return False
        return True

    def _inside_another_step(self) -> bool:
        """Whether the step returning now runs inside another optimizer's step: two of the step
        wrappers' frames on this thread's stack (its own and an outer one)."""
        codes = {getattr(step, "__code__", None) for step in self._step_wrappers}
        found = 0
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            if frame.f_code in codes:
                found += 1
                if found > 1:
                    return True
            frame = frame.f_back
        return False

    def _track(self, obj) -> None:
        """Know an optimizer (or wrapper); forget it when it goes, before its id can be reused."""
        key = id(obj)
        iterations, known = self._iterations, self._known

        def gone(_ref, key=key) -> None:
            known.pop(key, None)
            iterations.forget(key)

        known[key] = weakref.ref(obj, gone)
        if len(known) > 1:
            self._exact_only = True

    def _wrapper_of(self, optimizer):
        """At the first step: the outermost wrapper on the stack that holds this optimizer and is
        no Optimizer (Megatron's, DeepSpeed's, Lightning's), which then counts instead of it."""
        torch = self._torch
        held = [optimizer]
        found = optimizer
        frame: FrameType | None = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_name == "step":
                owner = frame.f_locals.get("self")
                if owner is not None and _is_wrapper(owner, held, torch) and self._wrap_step(owner, frame.f_code):
                    held.append(owner)
                    found = owner
            frame = frame.f_back
        return found

    def _wrap_step(self, owner, code) -> bool:
        """Wrap the ``step`` of ``owner``'s class that runs ``code``, so every call of it counts."""
        for klass in type(owner).__mro__:
            function = vars(klass).get("step")
            if getattr(function, "__code__", None) is code:
                if klass not in self._wrapped_classes:
                    self._wrapped_classes.add(klass)
                    # mypy sees a bare type; this class has a step (vars(klass) above)
                    _count_steps(self, klass, function, 0)
                self._exact_only = True  # the step running now counts as the wrapper's, here
                return True
        return False

    def _set_mode(self, mode: str) -> None:
        """Switch modes: the flags the step wrapper reads on every step. A torch with global hooks
        instead of the wrapper never turns lean (only the wrapper turns it lean), and in the
        detached mode its hooks stay and find the clock off (``_broken`` is not needed: the
        session is off, ``_advance`` returns at once after the first step)."""
        self._mode = mode
        self._lean = mode == LEAN
        self._exact = mode == EXACT
        if not self._lean:
            self._sole = None  # the step wrapper counts the sole optimizer's steps only while lean
        if mode == DETACHED and self._hooked:
            self._broken = True  # the hooks stay registered; they stop at ``_broken``

    def _keep_out_of_graphs(self, dynamo) -> None:
        """Once dynamo exists, a compiled training step must compile as it does bare.

        The step wrappers' own frames are skipped (``torch._dynamo.eval_frame.skip_code``: the
        clock's lines run eagerly, the frames they call are compiled as ever), and traced into a
        graph they are torch's own wrapper (stepwrapper.py); for that they need
        ``torch.compiler.is_compiling`` and the eval-frame callback (set while a compiled region
        runs its eager calls). The slow path goes through ``torch.compiler.disable``, whose
        eval-frame switch (about 4 us) it pays only at the few steps it runs. A torch without
        ``skip_code`` gets the wrappers disabled (``skip``, as before), and without the callback
        probe they run their own copy of torch's wrapper.
        """
        import types

        disable = getattr(getattr(self._torch, "compiler", None), "disable", None) or getattr(dynamo, "disable", None)
        if disable is None:
            return
        self._slow = disable(self._advance)
        self._slow_after = disable(self._after_step)
        self._enter_now, self._leave_now = disable(self.enter), disable(self.leave)
        self._outer_now = disable(self.outer_step)
        skip_code = getattr(importlib.import_module("torch._dynamo.eval_frame"), "skip_code", None)
        is_compiling = getattr(getattr(self._torch, "compiler", None), "is_compiling", None)
        try:
            callback = importlib.import_module("torch._C._dynamo.eval_frame").get_eval_frame_callback
        except (ImportError, AttributeError):
            callback = None
        if skip_code is not None and is_compiling is not None and callback is not None:
            self._skip = lambda wrapper: skip_code(wrapper.__code__)
            self._dynamo = types.SimpleNamespace(is_compiling=is_compiling, callback=callback)
        else:
            self._skip = getattr(importlib.import_module("torch._dynamo.decorators"), "skip", None)
        for wrapper in self._step_wrappers + self._counted:
            if self._skip is not None:
                self._skip(wrapper)
        if self._hooked:
            self._disable_hooks(disable)

    def _disable_hooks(self, disable) -> None:
        """The global hooks of a torch with no step wrapper, replaced in place by their disabled versions."""
        optimizer = importlib.import_module("torch.optim.optimizer")
        for hooks, hook in (
            (optimizer._global_optimizer_pre_hooks, self._pre_hook),
            (optimizer._global_optimizer_post_hooks, self._exact_hook),
        ):
            for key, value in list(hooks.items()):
                if value is hook:
                    hooks[key] = disable(hook)

    def after_fork(self) -> None:
        """A forked child (a DataLoader worker, a fork-started trainer) starts counting from nothing."""
        self._session = None
        self._iterations = Iterations()
        self._known = {}
        self._local.depth = 0
        self._exact_only = False
        self._sole = None
        self._lean_next = None
        self._broken = False
        if self._mode != EXACT:
            self._set_mode(EXACT)


def _is_wrapper(owner, held: list, torch) -> bool:
    """An object that wraps one of ``held``: no Optimizer, no Module, named as an optimizer."""
    if isinstance(owner, (torch.optim.Optimizer, torch.nn.Module)) or any(owner is h for h in held):
        return False
    return "optim" in type(owner).__name__.lower() and _holds(owner, held)


def _holds(owner, held: list) -> bool:
    """Whether one of ``owner``'s attributes is one of ``held``, or a list or tuple holding one."""
    try:
        values = list(vars(owner).values())
    except TypeError:
        return False
    for value in values:
        items = value if isinstance(value, (list, tuple)) else (value,)
        if any(item is h for item in items for h in held):
            return True
    return False


def _count_steps(clock: OptimizerClock, klass: type, step, key: int, thorough: bool = True) -> None:
    """Count each outermost call of ``klass.step`` as a step of its argument number ``key``
    (``self`` for a wrapper's step, the optimizer for a scaler's): inside the function's own code
    where it can be (inplace.py: no frame of ours in a warning or a traceback through it), else
    with a wrapper around it. ``thorough``: inplace.py may parse the function's whole module (not
    at a process's start: torch's GradScaler, counted as torch is imported, takes its quick way)."""
    from npuprof_launch.inprocess import inplace

    code = getattr(step, "__code__", None)
    name = code.co_varnames[key] if code is not None and key < code.co_argcount else None
    begin, end = _counted_in_place(clock)
    if name is not None and inplace.count_in_place(step, begin, end, (name,), thorough=thorough):
        step._npuprof_counted = True
        return
    # mypy sees a bare type; the class has a step (the callers read it from vars(klass))
    klass.step = _counting(clock, step, lambda args: args[key] if len(args) > key else args[0])  # type: ignore[attr-defined]


def _counted_in_place(clock: OptimizerClock):
    """What a step counted in place calls first and last: ``_counting``'s lines around the call.
    inplace.py runs them through ``torch.compiler.disable`` once dynamo is imported, so they call
    the clock's own ``enter`` and ``leave``, not their disabled twins (one eval-frame switch, not two)."""

    def begin(obj) -> None:
        clock.enter()

    def end(obj) -> None:
        if clock.leave() == 0:
            clock.outer_step(obj, inside_range=False)

    return begin, end


def _counting(clock: OptimizerClock, step, key_of):
    """``step`` wrapped so that each outermost call counts one step of ``key_of(args)``, even one
    that never reaches an optimizer (a skipped step); nested steps inside it are not counted.

    For dynamo it is ``step`` itself, as the step wrapper is torch's (stepwrapper.py): traced into
    a graph it is ``step`` (the optimizer's own step inside counts, through its wrapper); as a
    frame it is skipped and the clock's calls are disabled, so that only ``step``'s frame compiles.
    """
    import functools

    @functools.wraps(step)
    def counted(*args, **kwargs):
        dynamo = clock._dynamo
        if dynamo is not None and dynamo.is_compiling():
            return step(*args, **kwargs)
        clock._enter_now()
        try:
            return step(*args, **kwargs)
        finally:
            if clock._leave_now() == 0:
                clock._outer_now(key_of(args), inside_range=False)

    counted._npuprof_counted = True  # type: ignore[attr-defined]  # a mark on the function, read with getattr
    clock._counted.append(counted)
    skip = getattr(clock, "_skip", None)
    if skip is not None:
        skip(counted)
    return counted


def _watch_grad_scalers(clock: OptimizerClock) -> None:
    """Wrap the ``step`` of every GradScaler class: the base, each subclass there is now, and each
    one defined later (``__init_subclass__``).

    ``torch.amp.GradScaler`` (torch >= 2.3; ``torch.cuda.amp.GradScaler`` before) is the base;
    torch_npu's GradScaler and a job's own subclass may override ``step``. Classes, not
    instances: a wrapper of ``__init__`` was a frame of ours in every scaler's construction, and a
    warning torch raises there (nanoGPT's scaler on a CPU: "CUDA is not available") named
    optimizerclock.py instead of torch's grad_scaler.py, as it does bare.
    """
    base = _grad_scaler_base(clock._torch)
    if base is None or getattr(base, "_npuprof_watched", False):
        return

    def count_steps_of(klass: type, thorough: bool = True) -> None:
        try:
            step = vars(klass).get("step")
            if step is not None and not getattr(step, "_npuprof_counted", False):
                _count_steps(clock, klass, step, 1, thorough)  # GradScaler.step(self, optimizer, ...): the optimizer's
        except Exception as exc:  # noqa: BLE001 - a scaler must work whatever happens to us
            clock._say(f"GradScaler steps are not counted: {exc!r}")

    pending = [base]
    while pending:
        klass = pending.pop()
        count_steps_of(klass, thorough=False)  # in every process that imports torch: the quick way only
        pending.extend(klass.__subclasses__())
    own = vars(base).get("__init_subclass__")  # torch's, if a release gives one; else object's

    def __init_subclass__(cls, **kwargs) -> None:
        if own is not None:
            own.__func__(cls, **kwargs)
        else:
            super(base, cls).__init_subclass__(**kwargs)
        count_steps_of(cls)

    base.__init_subclass__ = classmethod(__init_subclass__)
    base._npuprof_watched = True


def _grad_scaler_base(torch_module):
    for path in ("torch.amp.grad_scaler", "torch.cuda.amp.grad_scaler"):
        try:
            module = importlib.import_module(path)
        except ImportError:
            continue
        base = getattr(module, "GradScaler", None)
        if isinstance(base, type):
            while (parent := base.__base__) is not None and parent is not object and parent.__name__ == "GradScaler":
                base = parent
            return base
    return None
