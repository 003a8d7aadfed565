"""Declared step functions: ``--target MOD:QUALNAME``, and the stages of ``--scenario rl``.

Each call of a declared function is one step of its clock. The step begins at the call's entry,
so ``--skip-first 0`` records the very first call, and ends at its return. Steps are outermost
calls of one thread, the first to call the function: a recursive call, or a call made from
another thread while one is in flight, belongs to that step. Calls on other threads run
untouched, because a profiler must start, step and stop on one thread; and a window over several
calls starts only on the main thread, which outlives every window (range mode's one-call windows
start on any thread).

Finding the function costs nothing until its module is imported. From process start the hook
watches the module name with the standard-library finder (importwatch); only once the module has
executed is wrapt imported (~80 ms, so never in processes that do not import the module) to
replace the function with a FunctionWrapper, which keeps its name, qualname, signature, docstring
and kind (classmethod, staticmethod). A module imported before the hook is wrapped at once.

``__main__`` is never imported through a finder: the script runs as it is read. For
``__main__:QUALNAME`` the hook waits until torch is imported (at the top of a script, before it
defines its step function). If the name is already bound, it is wrapped then. If the script's
module code has no instruction that binds the name (``def``, ``class``, import, assignment), the
reason is recorded and nothing else happens. Otherwise a temporary profile function
(``sys.setprofile`` and ``threading.setprofile``) looks the name up in the script's globals at
each event and wraps the function the moment its ``def`` has run, so the first call already goes
through the wrapper; should the first call come before any other event, that in-flight call is
counted from its call event to its return. The profile function then removes itself. It runs
only between ``import torch`` and the ``def`` (measured: about 0.2 us more per Python call and
0.15 us per C call there), never while steps run, and never over another profiler's.

Standard library only at module level: this is imported by the hook at process start when a
target or stage is declared.
"""

from __future__ import annotations

import os
import sys

from npuprof_launch import importwatch
from npuprof_launch.bootstrap import SCENARIO_VAR, STAGE_VAR, TARGET_VAR, warn

NEVER_IMPORTED = "never imported"
NEVER_CALLED = "never called"
_MISSING = object()

_declared: list[Declared] = []


def arm(environ: os._Environ | dict, finder: importwatch.PostImportFinder) -> None:
    """At process start: watch the module of each declared function (cheap, standard library only)."""
    if (environ.get(SCENARIO_VAR) or "").strip().lower() == "rl":
        from npuprof_launch import stages

        wanted = []
        for text in stages.split_list(environ.get(STAGE_VAR, "")):
            name, target = stages.split(text)
            wanted.append((target, name, text))
    else:
        target = environ.get(TARGET_VAR, "").strip()
        wanted = [(target, None, None)] if target else []
    for target, stage, text in wanted:
        if ":" not in target:
            continue  # the options check names the bad value when torch is imported
        declared = Declared(target, stage, text)
        _declared.append(declared)
        if declared.module == "__main__":
            finder.watch("torch", declared.find_in_main)
        else:
            finder.watch(declared.module, declared.found_module)
    if _declared:
        os.register_at_fork(after_in_child=_after_fork_in_child)


def replaces_optimizer_clock(environ: os._Environ | dict) -> bool:
    """True when steps come from declared functions: a --target, or a scenario that needs them."""
    scenario = (environ.get(SCENARIO_VAR) or "").strip().lower()
    return scenario in ("infer", "rl") or bool(environ.get(TARGET_VAR, "").strip())


def declared() -> list[Declared]:
    return list(_declared)


def disable_all() -> None:
    """Bad options: let every declared function run untouched; no session will be made."""
    for item in _declared:
        item.passive = True


def idle_report() -> list[dict]:
    """For the exit tally: each declared function that never made a step here, and why."""
    return [item.idle() for item in _declared if item.session is None]


def lookup(owner: object, qualname: str) -> object:
    """The function ``qualname`` names in ``owner``, found where wrapt will patch it.

    A class attribute is read from the ``__dict__`` of the class or of the first base along its
    MRO that has it, as wrapt does, so a classmethod or staticmethod is seen as such and no
    binding happens. Raises LookupError saying what is missing.
    """
    found = owner
    path = getattr(owner, "__name__", "?")
    for part in qualname.split("."):
        parent = found
        found = _MISSING
        if isinstance(parent, type):
            for klass in parent.__mro__:
                if part in vars(klass):
                    found = vars(klass)[part]
                    break
        else:
            found = getattr(parent, part, _MISSING)
        if found is _MISSING:
            raise LookupError(f"{path} has no attribute {part!r}")
        path = f"{path}.{part}"
    function = found.__func__ if isinstance(found, (classmethod, staticmethod)) else found
    if isinstance(function, type):
        raise LookupError(f"{path} is a class; name the method that runs one step")
    if not callable(function):
        raise LookupError(f"{path} is a {type(function).__name__}, not a function")
    return function


class Declared:
    """One declared function: where it lives, whether it was found, and the clock that counts its calls."""

    def __init__(self, target: str, stage: str | None = None, stage_text: str | None = None) -> None:
        self.target = target
        self.module, _, self.qualname = target.partition(":")
        self.stage = stage
        self.stage_text = stage_text
        self.reason = NEVER_IMPORTED
        self.session = None
        self.passive = False
        self._lock = None  # threading is imported when the function is found, not at process start
        self._current_thread = None
        self._main_thread = None
        self._owner = None
        self._owner_name = ""
        self._noted_threads = False
        self._busy = False
        self._depth = 0
        self._hunting = False

    def describe(self) -> str:
        return f"stage {self.stage} ({self.target})" if self.stage else f"target {self.target}"

    # -- finding the function -----------------------------------------------------------------

    def found_module(self, module: object) -> None:
        """The module has executed: wrap the function, or remember why it cannot be."""
        self._wrap(module)

    def _wrap(self, module: object):
        """Replace the function with our wrapper; returns the code its calls run first, or None."""
        import threading

        self._lock = threading.Lock()
        self._current_thread = threading.current_thread
        self._main_thread = threading.main_thread()
        try:
            function = lookup(module, self.qualname)
        except LookupError as exc:
            self.reason = f"not found: {exc}"
            return None
        try:
            import wrapt

            wrapt.wrap_function_wrapper(module, self.qualname, self._call)
        except Exception as exc:  # noqa: BLE001 - the module must import as if we were not here
            self.reason = f"not found: could not wrap it ({type(exc).__name__}: {exc})"
            warn(f"{self.describe()}: {self.reason}; the job goes on unprofiled")
            return None
        self.reason = NEVER_CALLED
        from npuprof_launch import activation

        activation.register_tally()
        return getattr(function, "__code__", None)

    def find_in_main(self, torch_module: object = None) -> None:
        """torch was imported: find the function in the script run as ``__main__``, now or at its ``def``."""
        main = sys.modules.get("__main__")
        if main is None:
            self.reason = "not found: this process has no __main__ module"
            return
        names = vars(main)
        first = self.qualname.split(".")[0]
        if first in names:
            self._wrap(main)
            return
        frame = _module_frame(names)
        if frame is not None and not _assigns(frame.f_code, first):
            self.reason = f"not found: the code run as __main__ never assigns {first}"
            return
        import threading

        if sys.getprofile() is not None:
            self.reason = (
                "not found: another profiler (sys.setprofile) watches __main__, so its definition could not be "
                "awaited; put the function in an importable module"
            )
            return
        self.reason = f"not found: the code run as __main__ had not assigned {first} when the process ended"
        self._hunting = True
        hunt = self._hunter(main, first)
        sys.setprofile(hunt)
        threading.setprofile(hunt)

    def _hunter(self, main: object, first: str):
        """The temporary profile function: one dict lookup per event until ``__main__`` binds ``first``."""
        names = vars(main)

        def hunt(frame, event, arg) -> None:
            if first in names:
                self._found_in_main(main, frame, event)

        return hunt

    def _found_in_main(self, main: object, frame, event: str) -> None:
        """``__main__`` just bound the name: wrap it, and count a first call already under way."""
        try:
            if not self._hunting:
                sys.setprofile(None)  # a thread that started while we hunted
                return
            self._stop_hunting()
            code = self._wrap(main)
            if code is None or event != "call" or frame.f_code is not code:
                return
            # The first call began before any other event: count it from here to its return.
            if not self._on_owner_thread():
                return
            label = self._enter()

            def until_return(returning, event, arg) -> None:
                if returning is frame and event == "return":
                    sys.setprofile(None)
                    self._exit(label)

            sys.setprofile(until_return)
        except Exception as exc:  # noqa: BLE001 - a profile function that raises would break the job
            self._stop_hunting()
            self._break(exc)

    def _stop_hunting(self) -> None:
        import threading

        self._hunting = False
        sys.setprofile(None)
        threading.setprofile(None)

    # -- counting calls -----------------------------------------------------------------------

    def _call(self, wrapped, instance, args, kwargs):
        """The wrapper: one step per outermost call on the owner thread, the call itself untouched."""
        if self.passive or self._busy or not self._on_owner_thread():
            return wrapped(*args, **kwargs)
        label = self._enter()
        try:
            return wrapped(*args, **kwargs)
        finally:
            self._exit(label)

    def _on_owner_thread(self) -> bool:
        """Whether this call may be a step: the steps are the calls of one thread, the first caller's.

        A profiler must start, step and stop on one thread: Kineto keeps its state per thread, and
        a profiler started on one thread and stepped or stopped on another, or left running when
        its thread ended, crashed the process (segfault at exit, torch 2.13). Calls on other
        threads run untouched; one made while a call is in flight on the owner thread is part of
        that step anyway.
        """
        thread = self._current_thread()  # an object, not an id: a new thread may reuse an old one's id
        if self._owner is None:
            with self._lock:
                if self._owner is None:
                    self._owner = thread
                    self._owner_name = thread.name
        if thread is self._owner:
            return True
        if self._depth == 0 and not self._noted_threads and self.session is not None:
            self._noted_threads = True
            self.session.note_warning(
                f"{self.describe()}: calls on other threads than {self._owner_name}, the first to call it, run "
                "unprofiled and are not counted (a profiler starts, steps and stops on one thread)"
            )
        return False

    def _enter(self):
        """A call begins on the owner thread; the outermost begins a step. Returns the open timeline label."""
        self._depth += 1
        if self._depth > 1 or self.passive:
            return None
        self._busy = True  # our own code calling the function (a status write, a profiler) is not a step
        try:
            return self._begin_step()
        except Exception as exc:  # noqa: BLE001 - the job must never see our failure
            self._break(exc)
        finally:
            self._busy = False
        return None

    def _begin_step(self):
        from npuprof_launch.session import OFF, RUNNING

        session = self.session
        if session is None:
            session = self.session = self._new_session()
            if session.state == OFF:
                self.passive = True
                return None
        if session.config.range or self._owner is self._main_thread:
            session.step_begins()
        else:
            session.note_warning(
                f"{self.describe()}: its calls run on {self._owner_name}, not on the main thread: a window over "
                "several calls is only started on the main thread (a profiler left running when its thread ends "
                "crashes the process at exit), so none was; --range records single calls on any thread"
            )
        if session.state != RUNNING:
            return None
        from torch.autograd.profiler import record_function

        label = record_function(f"{self.stage or self.qualname}#{session.steps + 1}")
        label.__enter__()
        return label

    def _exit(self, label) -> None:
        """A call on the owner thread returns (or raises); the outermost ends the step."""
        self._depth = max(self._depth - 1, 0)  # a call in flight when a child was forked ends there too
        if self._depth > 0 or self.passive or self.session is None:
            return
        self._busy = True
        try:
            if label is not None:
                label.__exit__(None, None, None)
            self.session.step_ends()
        except Exception as exc:  # noqa: BLE001
            self._break(exc)
        finally:
            self._busy = False

    def _new_session(self):
        if self.stage is None:
            from npuprof_launch import activation

            session = activation.first_step()
        else:
            from npuprof_launch.session import Session

            session = Session.from_env(os.environ, warn, stage=self.stage_text)
        session.target = self.target
        session.set_clock(self.describe(), self)
        return session

    def _break(self, exc: BaseException) -> None:
        self.passive = True
        warn(f"{self.describe()}: step clock failed, job goes on unprofiled: {exc!r}")

    # -- the report ---------------------------------------------------------------------------

    def idle(self) -> dict:
        """Why this function made no step in this process."""
        reason = self.reason
        main = sys.modules.get("__main__")
        if reason == NEVER_IMPORTED and self.module in _names_of(main):
            reason += f": it runs as __main__ here, so name it __main__:{self.qualname}"
        return {"stage": self.stage, "target": self.target, "reason": reason}

    def forget(self) -> None:
        """In a forked child: start from nothing; the parent's locks and sessions are not ours."""
        import threading

        self._lock = threading.Lock()
        self._main_thread = threading.main_thread()
        self._owner = None
        self._busy = False
        self._depth = 0
        if self.session is not None and self.stage is not None:
            self.session.abandon()
        self.session = None


def _names_of(module) -> tuple[str, ...]:
    """The importable names a ``__main__`` module goes by (``python -m pkg.mod``, ``python mod.py``)."""
    if module is None:
        return ()
    names = []
    spec = getattr(module, "__spec__", None)
    if spec is not None and spec.name:
        names.append(spec.name)
    path = getattr(module, "__file__", None)
    if path:
        names.append(os.path.splitext(os.path.basename(path))[0])
    return tuple(names)


def _module_frame(names: dict):
    """The frame running the ``__main__`` module's own code on this thread's stack, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is names and frame.f_code.co_name == "<module>":
            return frame
        frame = frame.f_back
    return None


def _assigns(code, name: str, stores: tuple[str, ...] = ("STORE_NAME", "STORE_GLOBAL")) -> bool:
    """Whether module code binds ``name`` (def, class, import, assignment), or a function in it
    stores it as a global. Without such an instruction the name can only appear through
    ``globals()`` or ``exec``, which is not worth a profile function for the whole run."""
    import dis  # already imported by torch

    if any(ins.opname in stores and ins.argval == name for ins in dis.get_instructions(code)):
        return True
    return any(_assigns(const, name, ("STORE_GLOBAL",)) for const in code.co_consts if hasattr(const, "co_code"))


def _after_fork_in_child() -> None:
    from npuprof_launch import activation

    activation.forget_after_fork()
    for item in _declared:
        item.forget()
