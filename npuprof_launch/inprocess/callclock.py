"""The call clock: counts calls of a function declared with ``--target`` or ``--stage`` (a step clock, stepclock.py).

Each outermost call on one thread is one step, from its entry to its return; declared.py finds
the function and puts the wrapper around it that calls ``CallClock.call``, and its temporary
profile function drives ``enter`` and ``exit`` for a ``__main__`` call already in flight. Unlike
the optimizer clock it sees where a step begins, so a window starts right at a call
(``session.step_began``) and each recorded call carries its own ``NAME#N`` label. Its cost per
call is a few attribute reads and, for an outermost call, ``enter`` and ``exit``: a declared
function does a whole step's work, so it needs no lean mode. It is a module of its own because it
needs neither torch nor the optimizer clock's machinery: it is imported when a declared function
is found, which may be before torch is imported, in a process that steps no optimizer.
"""

from __future__ import annotations

import threading
import types
from typing import TYPE_CHECKING

from npuprof_launch.common import numbering, outcomes

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any

    from npuprof_launch.inprocess.declared import Declared
    from npuprof_launch.inprocess.stepclock import ClockSession


class CallClock:
    """Counts the calls of one declared function: one step per outermost call on one thread.

    A profiler must start, step and stop on one thread: Kineto keeps its state per thread, and a
    profiler started on one thread and stepped or stopped on another, or left running when its
    thread ended, crashed the process (segfault at exit, torch 2.13). So the steps are the calls
    of the first thread to call the function; calls on other threads run untouched (one made
    while a call is in flight on the owner thread is part of that step anyway). A window over
    several calls starts only on the main thread, which outlives every window; range mode's
    one-call windows start on any thread.
    """

    def __init__(
        self,
        *,
        declared: Declared,
        new_session: Callable[[Declared], ClockSession],
        say: Callable[[str], None],
    ) -> None:
        self.declared = declared
        self._new_session = new_session
        self._say = say
        #: The session opened at the first counted call (stepclock.StepClock); None before it.
        self.session: ClockSession | None = None
        #: Set when nothing is to be counted (refused options, the session off, a failure of ours):
        #: every call then runs untouched. hook.py sets it too.
        self.passive = False
        self._lock = threading.Lock()
        self._owner: threading.Thread | None = None
        self._owner_name = ""
        self._main = threading.main_thread()
        self._noted_threads = False
        self._busy = False
        self._depth = 0
        #: The open timeline label of the step in flight (None when it is not recorded).
        self._label = None
        #: Counted in place (``begin_call``/``end_call``): for each call in flight on the owner
        #: thread, whether it went to ``enter`` (so that its end goes to ``exit``).
        self._entered: list[bool] = []

    def call(self, wrapped: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> Any:
        """The wrapper declared.py puts around the function: the call itself goes untouched."""
        if self.declared.awaited:
            return self._awaited(wrapped(*args, **kwargs))
        self.begin_call()
        try:
            return wrapped(*args, **kwargs)
        finally:
            self.end_call()

    def begin_call(self) -> None:
        """Before a call: an outermost call on the owner thread begins a step. The first line of the
        function's own code, where declared.py could put it there (inplace.py), else the wrapper's
        (``call``). Whether it began one is pushed for ``end_call``."""
        try:
            if self.passive or self._busy or not self.claims_this_thread():
                if threading.current_thread() is self._owner:
                    self._entered.append(False)
                return
            self._entered.append(True)
            self.enter()
        except Exception as exc:  # noqa: BLE001 - it runs in the job's function: never raise there
            self._break(exc)

    def end_call(self) -> None:
        """After a call (the ``finally`` of its own code, or of the wrapper's): the end of the step
        ``begin_call`` began, if it began one."""
        try:
            if threading.current_thread() is not self._owner:
                return
            if self._entered and self._entered.pop():
                self.exit()
        except Exception as exc:  # noqa: BLE001
            self._break(exc)

    def _awaited(self, coroutine: types.CoroutineType[Any, Any, Any]) -> Coroutine[Any, Any, Any]:
        """An ``async def``'s call returns a coroutine at once and its work runs when that is awaited
        (on the event loop's thread, which need not be the caller's): so its step is the await,
        from the coroutine's first run to its end. The coroutine is made at the call, so that bad
        arguments still raise there, and keeps the function's name for asyncio's messages."""

        async def step():
            if self.passive or self._busy or not self.claims_this_thread():
                return await coroutine
            self.enter()
            try:
                return await coroutine
            finally:
                self.exit()

        ours = step()
        assert isinstance(ours, types.CoroutineType)  # an async def's call: a native coroutine, which has names
        ours.__name__, ours.__qualname__ = coroutine.__name__, coroutine.__qualname__
        return ours

    @property
    def in_call(self) -> bool:
        """Whether a call of the function is under way on the owner thread (through the wrapper)."""
        return self._depth > 0

    def claims_this_thread(self) -> bool:
        thread = threading.current_thread()  # an object, not an id: a new thread may reuse an old one's id
        if self._owner is None:
            with self._lock:
                if self._owner is None:
                    self._owner = thread
                    self._owner_name = thread.name
        if thread is self._owner:
            return True
        if self._depth == 0 and not self._noted_threads and self.session is not None:
            self._noted_threads = True
            self.session.note_outcome(
                outcomes.OTHER_THREADS, None, function=self.declared.describe(), thread=self._owner_name
            )
        return False

    def enter(self) -> None:
        """A call begins on the owner thread; the outermost begins a step (and opens its timeline label)."""
        self._depth += 1
        if self._depth > 1 or self.passive:
            return
        self._busy = True  # our own code calling the function (a status write, a profiler) is not a step
        try:
            self._label = self._begin_step()
        except Exception as exc:  # noqa: BLE001 - the job must never see our failure
            self._break(exc)
        finally:
            self._busy = False

    def _begin_step(self):
        session = self.session
        if session is None:
            session = self.session = self._new_session(self.declared)
            session.clock_name = self.declared.describe()
            session.target = self.declared.target
            if session.off:
                self.passive = True
                return None
            session.number_from(0, numbering.CALLS)  # a declared function's calls, as this process makes them
            if self.declared.iterated:
                session.note_warning(
                    f"{self.declared.describe()} is a generator function: a call returns before its body runs (the "
                    "body runs as the result is iterated), so each step's work is recorded in the step after it; "
                    "name the function that iterates it instead"
                )
        may_start = session.config.range or self._owner is self._main
        if not may_start and not session.warned_thread:
            session.warned_thread = True
            session.note_outcome(
                outcomes.OFF_MAIN_THREAD, None, function=self.declared.describe(), thread=self._owner_name
            )
        return session.step_began(label=self.declared.label(), may_start=may_start)

    def exit(self) -> None:
        """A call on the owner thread returns (or raises); the last one in flight ends the step.

        Sync calls nest, so that is the outermost; the awaits of an ``async def`` that run at once
        on one event loop overlap, and the step is then from the first begun to the last ended.
        """
        self._depth = max(self._depth - 1, 0)  # a call in flight when a child was forked ends there too
        if self._depth > 0 or self.passive or self.session is None:
            return
        label, self._label = self._label, None
        self._busy = True
        try:
            self.session.step_ended(inside_range=False, label=label)
        except Exception as exc:  # noqa: BLE001
            self._break(exc)
        finally:
            self._busy = False

    def _break(self, exc: BaseException) -> None:
        self.passive = True
        self._say(f"{self.declared.describe()}: step clock failed, job goes on unprofiled: {exc!r}")

    def after_fork(self) -> None:
        """In a forked child: start from nothing; the parent's locks and sessions are not ours."""
        self._lock = threading.Lock()
        self._main = threading.main_thread()
        self._owner = None
        self._busy = False
        self._depth = 0
        self._label = None
        self._entered = []
        self.session = None
