"""Where torch can take a profiler action: outside backward, outside the job's ranges, on one thread.

A step boundary is seen where torch tells us of it, and that is rarely a place to start, step or
stop a profiler:

* an optimizer's post hooks run inside its ``Optimizer.step#…`` range, so a ``ProfilerStep#``
  boundary put there straddles it (viewers mis-nest it, and Kineto warns on the job's stderr
  when the job labels its own iterations with ``record_function``);
* an optimizer stepped from a backward hook (the "optimizer step in backward" recipe) runs inside
  ``loss.backward()``, where starting torch's profiler crashes the process;
* autograd runs device work on threads of its own, and a profiler must start, step and stop on
  one thread.

So a boundary's action is run at the first *safe point* after it: a moment on the job's thread,
outside backward, where no range of the job that opened since we started watching is still
open. Safe points are the ends and beginnings of ``record_function`` ranges (``Optimizer.step#``
itself, ``zero_grad``, a DataLoader's ``__next__``, the job's own labels) and, when the boundary
fell inside backward, the next module forward. Watching ranges costs a Python call per range,
so it is on only while a window is due or open: from the boundary of its first action to its end.

A range that was open when watching began is not waited for: it began before the profiler did,
so it is not in the trace at all (an iteration's label that ends just after the window starts,
an epoch's label). Should a whole step pass without a safe point (a range opened in the window
that encloses many steps), the ranges still open are taken to be of that kind too.

TorchScript compiles ``record_function``'s methods when it first scripts code that uses it, and
it cannot compile a wrapper of ours; once compiled, the class is cached. So before the first
watch, the class is compiled once with torch's own methods (about 60 ms, in processes that
record a window only).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    import torch  # at run time _compile_for_torchscript sets it, for the function TorchScript compiles
    from torch.utils.hooks import RemovableHandle


class _Depth(threading.local):
    """Ranges opened on this thread since watching began and not yet closed."""

    depth = 0


class SafePoints:
    """Runs one pending action at the next safe point of the job's thread."""

    def __init__(self, torch_module, say) -> None:
        self._torch = torch_module
        self._say = say
        self._local = _Depth()
        #: What waits for the next safe point (a plain attribute: the step wrapper reads it every step).
        self.action: Callable[[], object] | None = None
        self._busy = False
        self._watching = False
        #: record_function's own __enter__ and __exit__, while ours are in their place.
        self._saved: tuple[Callable, Callable] | None = None
        self._forward_handle: RemovableHandle | None = None
        #: The job's thread: the first on which an action ran. Actions run on no other.
        self.thread: threading.Thread | None = None
        self._graph_task_id = getattr(getattr(torch_module, "_C", None), "_current_graph_task_id", None)

    # -- is this a moment torch can take it? ---------------------------------------------------

    def in_backward(self) -> bool:
        """Inside autograd's backward pass (also on its device threads, and in checkpoint recompute)."""
        if self._graph_task_id is None:
            return False
        try:
            return self._graph_task_id() != -1
        except Exception:  # noqa: BLE001 - a torch that cannot tell: assume it is not
            return False

    def capturing_graph(self) -> bool:
        """A CUDA graph is being captured on this thread's stream: nothing may be launched or synced."""
        cuda = getattr(self._torch, "cuda", None)
        try:
            return bool(cuda is not None and cuda.is_initialized() and cuda.is_current_stream_capturing())
        except Exception:  # noqa: BLE001
            return False

    def _thread_ok(self) -> bool:
        current = threading.current_thread()
        if self.thread is None:
            # A thread autograd or another C++ library made is no place to own a profiler.
            return not isinstance(current, threading._DummyThread)
        return current is self.thread

    def allowed_now(self) -> bool:
        """Whether torch can take a profiler action on this thread now (a declared function's
        call is its own step, so the job's ranges around it do not matter)."""
        return not self.in_backward() and not self.capturing_graph()

    def may_stop_idle(self) -> bool:
        """Whether a window may be stopped now from outside any step (--window-timeout): outside
        backward and a CUDA graph capture, no action of ours under way, on the job's thread. The
        job's ranges do not matter: the window is cut short, as at the process's end."""
        return not self._busy and self._thread_ok() and self.allowed_now()

    def safe_now(self) -> bool:
        return (
            not self._busy
            and self._local.depth == 0
            and self._thread_ok()
            and not self.in_backward()
            and not self.capturing_graph()
        )

    # -- running an action ----------------------------------------------------------------------

    def run(self, action, *, inside_range: bool) -> bool:
        """Run ``action`` now if this is a safe point, else at the next one. True if it ran now.

        ``inside_range``: the caller runs inside a range of torch's (an optimizer's post hook runs
        inside ``Optimizer.step#``), so this moment is not safe, but the moment the optimizer's
        ``step`` returns will be (``after_step``). Watching starts here, so the ranges open now are
        not counted (their end was fixed when they began): they began before any profiler did.
        A previous action still waiting here means a whole step passed without a safe point: the
        ranges open now are taken to enclose steps, and no longer waited for.
        """
        if self.action is not None or not self._watching:
            self.watch(True)
            self._local.depth = 0
        self.action = action
        if not inside_range and self.safe_now():
            self._run_pending()
            return True
        if self.in_backward():
            self._watch_forward()
        return False

    def after_step(self) -> None:
        """An optimizer's ``step`` returned: out of its range, perhaps a safe point."""
        if self.action is not None and self.safe_now():
            self._run_pending()

    def pending(self) -> bool:
        return self.action is not None

    def run_pending_now(self) -> None:
        """At exit or on a signal: run what waits, if this thread may (never inside backward)."""
        if self.action is not None and self._thread_ok() and not self.in_backward():
            self._run_pending()

    def _run_pending(self) -> None:
        action, self.action = self.action, None
        assert action is not None  # every caller checks that one waits
        self._unwatch_forward()
        if self.thread is None:
            self.thread = threading.current_thread()
        self._busy = True
        try:
            action()
        finally:
            self._busy = False

    def quiet(self):
        """A context for our own ``record_function`` use (step labels): not the job's ranges."""
        return _Quiet(self)

    def open_label(self, name: str):
        """A step's label on the timeline (``iteration#5``): a range of ours, opened now."""
        with self.quiet():
            label = self._torch.autograd.profiler.record_function(name)
            label.__enter__()
        return label

    def close_label(self, label) -> None:
        with self.quiet():
            label.__exit__(None, None, None)

    # -- watching the job's ranges --------------------------------------------------------------

    def watch(self, on: bool) -> None:
        """Count ``record_function`` ranges on the job's thread (only while a window is due or open)."""
        if on == self._watching:
            return
        record_function = self._torch.autograd.profiler.record_function
        if on:
            _compile_for_torchscript(self._torch)
            self._saved = (record_function.__enter__, record_function.__exit__)
            record_function.__enter__ = self._entering(self._saved[0])
            record_function.__exit__ = self._exiting(self._saved[1])
        else:
            assert self._saved is not None  # saved when watching began
            record_function.__enter__, record_function.__exit__ = self._saved
            self._saved = None
        self._watching = on
        self._local.depth = 0

    def _entering(self, enter):
        points = self

        def __enter__(rf):
            if points._busy:  # our own ranges (ProfilerStep#, step labels) are not the job's
                return enter(rf)
            if points.action is not None and not points._busy and points._local.depth == 0 and points.safe_now():
                points._run_pending()  # between two ranges of the job: before the next one opens
            points._local.depth += 1
            return enter(rf)

        return _named_like(__enter__, enter)

    def _exiting(self, exit_):
        points = self

        def __exit__(rf, *exc):
            if points._busy:
                return exit_(rf, *exc)
            try:
                return exit_(rf, *exc)
            finally:
                local = points._local
                if local.depth > 0:
                    local.depth -= 1
                if points.action is not None and local.depth == 0 and points.safe_now():
                    points._run_pending()

        return _named_like(__exit__, exit_)

    def _watch_forward(self) -> None:
        """Inside backward nothing of the job's may come before the next forward: watch for it."""
        if self._forward_handle is not None:
            return
        try:
            from torch.nn.modules import module

            self._forward_handle = module.register_module_forward_pre_hook(self._before_forward)
        except Exception as exc:  # noqa: BLE001 - without it, the next range or the exit will do
            self._say(f"could not watch for the next forward pass: {exc!r}")

    def _before_forward(self, module, args) -> None:
        if self.action is not None and self.safe_now():
            self._run_pending()

    def _unwatch_forward(self) -> None:
        if self._forward_handle is not None:
            self._forward_handle.remove()
            self._forward_handle = None

    def after_fork(self) -> None:
        """A forked child starts with no action pending and no thread of its own yet."""
        self.action = None
        self._busy = False
        self.thread = None
        self._local.depth = 0
        self._forward_handle = None


_compiled = False


def _compile_for_torchscript(torch_module) -> None:
    """Have TorchScript compile ``record_function`` now, with torch's own methods (see above)."""
    global _compiled
    if _compiled:
        return
    _compiled = True
    from npuprof_launch.inprocess import unwarned

    globals()["torch"] = torch_module  # what the scripted function below names

    try:
        with unwarned.ignoring():  # torch 2.13 deprecates torch.jit.script: not the job's warning
            torch_module.jit.script(_uses_record_function)
    except Exception:  # noqa: BLE001 - a torch without TorchScript has nothing to compile
        pass


def _uses_record_function(x: torch.Tensor) -> torch.Tensor:
    with torch.autograd.profiler.record_function("npuprof"):
        return x


class _Quiet:
    def __init__(self, points: SafePoints) -> None:
        self._points = points
        self._was = False

    def __enter__(self):
        self._was, self._points._busy = self._points._busy, True
        return self

    def __exit__(self, *exc) -> None:
        self._points._busy = self._was


def _named_like(wrapper, wrapped):
    wrapper.__name__ = getattr(wrapped, "__name__", wrapper.__name__)
    wrapper.__qualname__ = getattr(wrapped, "__qualname__", wrapper.__qualname__)
    wrapper.__doc__ = getattr(wrapped, "__doc__", None)
    wrapper.__wrapped__ = wrapped
    return wrapper
