"""--window-timeout: a window whose process stops stepping is saved after that long, as soon as torch allows.

A window is stopped on the thread that started it, outside backward (safepoints.py), and it is
normally stopped by a step. A process that stops stepping inside one (an inference rank whose
requests stop, a stuck job) runs no code of ours: the clocks are silent and the checkpoints
come with steps. Without the option its window is saved, cut short, when the process ends
(session.flush); with it, after SECONDS without a step:

* While a window is open and the option is set (never otherwise: with the defaults no thread of
  ours exists), a timer thread waits for the last step to be SECONDS old. It sleeps in an
  ``Event.wait``, without the GIL, and wakes once per SECONDS while the job steps.
* Then it asks the interpreter to run a call of ours on the main thread (``Py_AddPendingCall``):
  the main thread runs it at its next check of the eval breaker, that is as soon as it runs
  Python bytecode again, at once in a loop that sleeps, polls a queue or serves requests.
* That call stops nothing unless torch can take it now: the window is the main thread's, not
  inside backward, no CUDA graph being captured, no code of ours under way (the innermost frame
  that is not torch's is not ours), and still no step. Then the session saves the window, cut
  short by --window-timeout (outcomes.CUT_SHORT, ``by`` "window_timeout"). Otherwise the thread
  asks again RETRY_S later.

What it cannot close: a window whose profiler runs on another thread than the main one (pending
calls run on the main thread only), and a main thread blocked in C for good (a collective that
never returns, a lock or an event loop waiting with no timeout), which runs no bytecode, so no
moment comes. Those windows are saved, cut short, when the process ends (an exit, SIGTERM once
the blocking call returns); a process killed with SIGKILL loses them. A step that comes after
the window was closed finds it over: it is not reopened, and the record says the job stepped
again (outcomes.STEPPED_AFTER_TIMEOUT).

Every failure here is one ``npuprof:`` line and the window is left to the process's end: no
exception reaches the job (the pending call returns 0 whatever happens; a Ctrl-C that arrives
while it runs is handed back to the main thread).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import FrameType


#: Seconds between two asks while the main thread cannot take the close (inside backward, ...).
RETRY_S = 1.0
#: The package's folder: a frame of a file under it is code of ours.
_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class WindowTimeout:
    """One session's --window-timeout: started when a window opens, stopped when it closes.

    ``last_step``: the perf-counter time of the session's last step; ``may_close``: whether torch
    can take a profiler stop on this thread now (safepoints.py's checks); ``close(idle_s)``: save
    the window, cut short; ``say``: one ``npuprof:`` line."""

    def __init__(
        self,
        seconds: float | None,
        *,
        last_step: Callable[[], float],
        may_close: Callable[[], bool],
        close: Callable[[float], None],
        say: Callable[[str], None],
    ) -> None:
        self.seconds = float(seconds) if seconds else None
        self._last_step = last_step
        self._may_close = may_close
        self._close = close
        self._say = say
        self._stop: threading.Event | None = None
        self._asked = False
        self._broken = False
        #: The C callback of the pending call and the function it runs (``_pending_call``), made once.
        self._callback: tuple | None = None
        self._pid = os.getpid()

    def start(self, owner: threading.Thread) -> str | None:
        """A window opened on ``owner``: watch it. Returns why it cannot be watched, or None."""
        if not self.seconds or self._broken:
            return None
        if owner is not threading.main_thread():
            return (
                f"--window-timeout cannot close a window recorded on thread {owner.name}: a call of ours can be "
                "scheduled on the main thread only; the process's end saves the window"
            )
        self.stop()
        try:
            if self._callback is None:
                self._callback = _pending_call(self._on_main_thread)
            self._stop = stop = threading.Event()
            self._asked = False
            watcher = threading.Thread(target=self._watch, args=(stop,), name="npuprof-window-timeout", daemon=True)
            watcher.start()
        except Exception as exc:  # noqa: BLE001 - no Py_AddPendingCall (PyPy), no thread to be had
            self._broken = True
            self._stop = None
            return f"--window-timeout is not available here ({exc!r}); the process's end saves the window"
        return None

    def stop(self) -> None:
        """The window closed (or the process ends, or forked): the timer thread leaves."""
        stop, self._stop = self._stop, None
        if stop is not None:
            stop.set()

    def after_fork(self) -> None:
        """A forked child has no timer thread and no window of its own."""
        self._stop = None
        self._asked = False
        self._pid = os.getpid()

    # -- the timer thread -----------------------------------------------------------------------

    def _watch(self, stop: threading.Event) -> None:
        seconds = self.seconds
        try:
            assert seconds and _ADD is not None and self._callback is not None  # start() made them before this thread
            while not stop.is_set():
                left = self._last_step() + seconds - time.perf_counter()
                if left > 0:
                    stop.wait(left)
                    continue
                if not self._asked:
                    self._asked = True
                    if _ADD(self._callback[0], None) != 0:  # the interpreter's queue is full: later
                        self._asked = False
                stop.wait(RETRY_S)
        except Exception as exc:  # noqa: BLE001 - a thread of ours must never print a traceback
            self._fail(exc)

    # -- the main thread ----------------------------------------------------------------------------

    def _on_main_thread(self) -> None:
        """The pending call: close the window if it is still idle and torch can take it now."""
        self._asked = False
        if self.seconds is None or self._stop is None or self._stop.is_set() or os.getpid() != self._pid:
            return
        try:
            idle_s = time.perf_counter() - self._last_step()
            if idle_s < self.seconds or not self._may_close() or ours_under_way(_job_frame()):
                return
            self.stop()
            self._close(idle_s)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        self._broken = True
        self.stop()
        self._say(f"--window-timeout failed: {type(exc).__name__}: {exc}; the process's end saves the window")


def ours_under_way(frame) -> bool:
    """Whether code of ours runs at ``frame`` (the main thread's frame the pending call came into):
    the innermost frame that is not torch's is ours. Ours further out, waiting on a call into the
    job's code (a declared function's wrapper), is not under way."""
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(_OURS):
            return True
        if f"{os.sep}torch{os.sep}" not in path:
            return False
        frame = frame.f_back
    return False


def _job_frame():
    """The frame the pending call came into: the first one out from here that is not this module's."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame


#: ``Py_AddPendingCall``, looked up with its argument types once (``_pending_call``).
_ADD: Callable[..., int] | None = None


def _pending_call(run: Callable[[], None]) -> tuple:
    """A C callback for ``Py_AddPendingCall`` that runs ``run`` and always returns 0: a pending
    call that returned -1 would raise in the job's code. It is never freed (one reference leaked on
    purpose): a call may still be queued when its window closes, or while the interpreter tears
    down the session that made it, and a freed callback would crash the process when it came."""
    global _ADD
    import ctypes

    kind = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
    if _ADD is None:
        add = ctypes.pythonapi.Py_AddPendingCall
        add.argtypes = [kind, ctypes.c_void_p]
        add.restype = ctypes.c_int
        _ADD = add

    def pending(_arg) -> int:
        try:
            run()
        except KeyboardInterrupt:  # Ctrl-C landed in our call: the job's, handed back to its main thread
            import _thread

            _thread.interrupt_main()
        except BaseException as exc:  # noqa: BLE001 - nothing of ours reaches the job
            from npuprof_launch.common import names

            names.say(f"--window-timeout failed: {type(exc).__name__}: {exc}; the process's end saves the window")
        return 0

    callback = kind(pending)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(callback))
    return (callback, pending)


class IdleWindows:
    """How long a session's process has not stepped, and the timer that closes its window then: a
    part of Session (session.py) with its own state, as sessionnotes.Notes is. The session tells it
    when a window opens and ends; it reads the session's step times (the list the clocks append to)
    and asks the session, through ``may_close`` and ``close``, to save the window when no step came
    for --window-timeout."""

    def __init__(
        self,
        seconds: float | None,
        say: Callable[[str], None],
        *,
        times: list[float],
        may_close: Callable[[], bool],
        close: Callable[[float], None],
    ) -> None:
        self._times = times
        self._timeout = WindowTimeout(seconds, last_step=self._last_step, may_close=may_close, close=close, say=say)
        #: When the open window began (perf counter): a window no step has reached is idle since then.
        self._window_began = 0.0
        #: The step at which --window-timeout closed a window (the job's numbering), until the next step is told.
        self.closed_at: int | None = None

    def time_window(self, thread: threading.Thread) -> str | None:
        """A window opened on ``thread``: from now on, no step for the timeout closes it. Returns
        why it cannot be timed, where it cannot."""
        self._window_began = time.perf_counter()
        return self._timeout.start(thread)

    def stop(self) -> None:
        """The window ended: no timer."""
        self._timeout.stop()

    def after_fork(self) -> None:
        self._timeout.after_fork()

    def _last_step(self) -> float:
        """When the last step ended (perf counter), or the open window began if that is later."""
        times = self._times
        return max(times[-1] if times else 0.0, self._window_began)

    def idle_s(self) -> float:
        """Seconds since the last step (or since the open window began)."""
        return round(time.perf_counter() - self._last_step(), 1)
