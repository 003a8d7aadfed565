"""One process as profiling sees it: its rank, its one profiler, how it forks, is signalled and ends.

* **Rank.** A launcher's variable says it (``RANK``, ``OMPI_COMM_WORLD_RANK``, ...), but not every
  launcher sets one: Lightning's ``ddp`` workers have only ``LOCAL_RANK`` and ``NODE_RANK``,
  ``torch.multiprocessing.spawn`` sets nothing. Once ``torch.distributed`` is initialized (always
  before the first step of a distributed job) its global rank is the truth.
* **The slot.** One profiler per process at a time (torch_npu's rule; two Kineto sessions crash):
  the sessions of one process (stages) take turns with it.
* **Ends.** The record must stay true however the process ends. The interpreter's exit handlers,
  ``os._exit`` (every fork-started multiprocessing child leaves that way), ``os.exec*`` (a new
  image under the same pid) and SIGTERM while a window records each end every session first;
  SIGKILL cannot be seen, which is why sessions also write their counts every few seconds.
* **Forks.** A forked child starts with no session and an empty slot; a profiler it inherited
  while recording is silenced (``silence_inherited_profiler``).
Sessions are told through a small interface (``end(how)``, ``flush(reason)``, ``after_fork()``,
``recording``), so this module imports no session.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

from npuprof_launch.common import names, record

if TYPE_CHECKING:
    from collections.abc import Callable

#: The type of the object torch's Python tracer passes to ``PyEval_SetProfile`` (with_stack).
TORCH_PYTHON_TRACER = "TraceContext"


def rank(environ=os.environ) -> tuple[int | None, str | None]:
    """This process's global rank and where it came from: torch.distributed once it is
    initialized, else the first launcher variable that is set, else (None, None)."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), "torch.distributed"
    except Exception:  # noqa: BLE001 - a half-initialized group: the launcher's word then
        pass
    return names.rank_from_env(environ)


class Slot:
    """The one profiler of this process: who holds it now."""

    def __init__(self) -> None:
        self.holder = None
        self._lock = threading.Lock()

    def claim(self, owner) -> object | None:
        """Take the slot for ``owner``; returns the other holder when it is taken, else None."""
        with self._lock:
            if self.holder is None or self.holder is owner:
                self.holder = owner
                return None
            return self.holder

    def release(self, owner) -> None:
        with self._lock:
            if self.holder is owner:
                self.holder = None

    def reset(self) -> None:
        """In a forked child: nothing of the parent's records here, and its lock may be held."""
        self.holder = None
        self._lock = threading.Lock()


class Lifecycle:
    """Tells every session of this process when the process ends, forks or is signalled."""

    def __init__(self) -> None:
        self.sessions: list = []
        self.slot = Slot()
        self._pid = os.getpid()
        self._installed = False
        self._ended = False

    def add(self, session) -> None:
        """A new session: from now on it hears of the process's end (handlers installed once)."""
        self.sessions.append(session)
        if not self._installed:
            self._installed = True
            atexit.register(self._at_exit)
            os.register_at_fork(after_in_child=self._after_fork)
            _wrap_os_exits()

    # -- ends ---------------------------------------------------------------------------------

    def end(self, how: str) -> None:
        """The process ends (``how``: record.ENDED_*): end every session, once."""
        if self._ended or os.getpid() != self._pid:
            return
        self._ended = True
        for session in list(self.sessions):
            try:
                session.end(how)
            except Exception as exc:  # noqa: BLE001 - the process is leaving: never stop it
                names.say(f"could not close the status record at the end of the process: {exc!r}")

    def resume(self) -> None:
        """An ``os.exec*`` failed and the process goes on: its sessions go on too."""
        self._ended = False
        for session in self.sessions:
            session.resume()

    def _at_exit(self) -> None:
        self.end(record.ENDED_EXIT)

    def hand_over(self, name: str, args: tuple) -> tuple:
        """Before ``os.execv``/``execve``: tell the new image how many steps this one counted
        (the process's own session, not a stage's), through its environment."""
        counted = [session.steps for session in self.sessions if session.stage is None]
        if not counted:
            return args
        value = f"{os.getpid()}:{counted[0]}"
        if name == "execve" and len(args) >= 3 and hasattr(args[2], "keys"):
            return (*args[:2], {**args[2], names.EXEC_VAR: value}, *args[3:])
        os.environ[names.EXEC_VAR] = value
        return args

    @staticmethod
    def steps_before_exec(environ) -> int:
        """The steps the old image of this process counted, when it re-executed itself; else 0."""
        pid, _, steps = environ.get(names.EXEC_VAR, "").partition(":")
        environ.pop(names.EXEC_VAR, None)  # the job's children are other processes
        return int(steps) if pid == str(os.getpid()) and steps.isdigit() else 0

    # -- SIGTERM while a window records ---------------------------------------------------------

    def window_opened(self) -> None:
        """Flush on SIGTERM (torchrun's way to stop workers) when the program has no handler of its own."""
        try:
            if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                signal.signal(signal.SIGTERM, self._on_sigterm)
        except ValueError:  # not the main thread: leave signals alone
            pass

    def window_closed(self) -> None:
        """Take our SIGTERM handler back once no window records.

        A Python handler runs only between bytecodes: a process blocked in C, such as a hung
        collective, would ignore SIGTERM until torchrun's SIGKILL 30 s later (measured: the
        default action ends a process inside a long torch call at once; our handler only after
        it returns).
        """
        if any(session.recording for session in self.sessions):
            return
        restore_default_sigterm(self)

    def _on_sigterm(self, signum, frame) -> None:
        for session in list(self.sessions):
            try:
                session.flush("SIGTERM")
            except Exception:  # noqa: BLE001
                pass
        self.end(record.ENDED_SIGNAL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    # -- forks ----------------------------------------------------------------------------------

    def _after_fork(self) -> None:
        """A forked child (a DataLoader worker, a fork-started trainer) starts from nothing."""
        was_recording = any(getattr(session, "recording", False) for session in self.sessions)
        for session in self.sessions:
            session.after_fork()
        self.sessions = []
        self.slot.reset()
        self._pid = os.getpid()
        self._ended = False
        restore_default_sigterm(self)  # in the child it would write the parent's record
        if was_recording:
            try:
                silence_inherited_profiler()
            except Exception as exc:  # noqa: BLE001 - the child must run whatever happens here
                names.say(f"forked child {os.getpid()}: could not silence the inherited profiler: {exc!r}")


def restore_default_sigterm(lifecycle: Lifecycle) -> None:
    try:
        if getattr(signal.getsignal(signal.SIGTERM), "__func__", None) is Lifecycle._on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except ValueError:  # not the main thread: leave signals alone
        pass


def silence_inherited_profiler() -> None:
    """In a forked child of a process whose profiler was recording: record nothing more here.

    ``os.fork`` copies the profiler's C++ state: in a DataLoader worker forked while a window is
    open every operator would be recorded into a buffer nobody reads, for the worker's life.
    ``torch.autograd.profiler._disable_profiler()`` would tear the state down, but it finalizes
    every event the parent recorded so far (measured: 0.6 s for 160k events, in each worker) and
    stops the device tracer, which is not safe in a forked child. Removing what records is O(1)
    and touches no device: the RecordFunction callbacks (torch_npu records through them too) and
    the Python tracer that ``with_stack`` installs. With ``--profile-memory``, allocations in such
    a child are still counted into the inherited state.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return
    torch._C._autograd._clear_callbacks()
    if type(sys.getprofile()).__name__ == TORCH_PYTHON_TRACER:
        sys.setprofile(None)


_REAL: dict[str, Callable | None] = {}


def _wrap_os_exits() -> None:
    """``os._exit`` and ``os.exec*`` skip the exit handlers: end the sessions first, then do it."""
    for name in ("_exit", "execv", "execve"):
        real = _REAL.setdefault(name, getattr(os, name, None))
        if real is None or getattr(getattr(os, name), "_npuprof", False):
            continue
        setattr(os, name, _ending_first(real, name))


def _ending_first(real, name: str):
    how = record.ENDED_FAST if name == "_exit" else record.ENDED_EXEC

    def wrapper(*args, **kwargs):
        current = _LIFECYCLE[0]
        if current is not None:
            if how == record.ENDED_EXEC:
                args = current.hand_over(name, args)
            current.end(how)
        try:
            return real(*args, **kwargs)
        except BaseException:
            if current is not None and how == record.ENDED_EXEC:
                current.resume()  # exec failed (no such file): the process and its sessions go on
            raise

    wrapper.__name__ = real.__name__
    wrapper.__qualname__ = getattr(real, "__qualname__", real.__name__)
    wrapper.__doc__ = real.__doc__
    wrapper.__wrapped__ = real  # type: ignore[attr-defined]  # functions take it, as functools.wraps sets it
    wrapper._npuprof = True  # type: ignore[attr-defined]  # a mark on the function, read with getattr
    return wrapper


#: The process's one lifecycle (a list so that a forked child's module state is replaced in place).
_LIFECYCLE: list = [None]


def lifecycle() -> Lifecycle:
    if _LIFECYCLE[0] is None:
        _LIFECYCLE[0] = Lifecycle()
    return _LIFECYCLE[0]
