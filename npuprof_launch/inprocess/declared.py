"""Declared step functions: ``--target MOD:QUALNAME`` and the stages of ``--scenario rl``, found.

This module finds the function and makes its calls counted; counting them is
callclock.CallClock's job. Finding costs nothing until the function's module is imported: from
process start the hook watches the module name with the standard-library finder (importwatch).
Once the module has executed, a plain function whose source is the code that runs is counted
inside its own code (inplace.py: the same function object, and no frame of ours in a warning,
a traceback or a stack the job sees); any other (an ``async def``, a generator, a callable with
no source) is replaced with wrapt's FunctionWrapper (wrapt is imported then, ~80 ms), which
keeps its name, qualname, signature, docstring and kind (classmethod, staticmethod). A module
imported before the hook is handled at once. "Wrapped" below means either.

``__main__`` is never imported through a finder: the script runs as it is read. For
``__main__:QUALNAME`` the hook waits until torch is imported (at the top of a script, before it
defines its step function). If the name is already bound, it is wrapped then. If the script's
module code has no instruction that binds the name (``def``, ``class``, import, assignment), the
reason is recorded and nothing else happens. Otherwise a temporary profile function
(``sys.setprofile`` and ``threading.setprofile``) looks the name up in the script's globals at
each event and wraps the function the moment its ``def`` has run, so the first call already goes
through the wrapper. A first call can still miss it: one that comes before any other event, or
one whose name the script loaded before an event let us wrap (``train_step(k, *make_batch())``
loads ``train_step``, then calls ``make_batch``, and only then the function it loaded). So until
the first call is counted, the profile function watches for a call of the function's own code
outside the wrapper, and counts that call from its call event to its return. It then removes
itself. It runs only between ``import torch`` and the first call (measured: about 0.2 us more per
Python call and 0.15 us per C call there), never while steps run, and never over another
profiler's. One profile function serves every declared function of ``__main__`` (the stages of
``--scenario rl`` may all live there): each is one watcher in ``_watchers``.

A wrapper that imports torch and then runs the real script with ``runpy.run_path`` or
``run_module`` gives the script a ``__main__`` of its own: the hook looks there as soon as runpy
starts running it.

Standard library only at module level: the hook imports this at process start when a target or
stage is declared.
"""

from __future__ import annotations

import os
import sys

from npuprof_launch.common import names, processlog
from npuprof_launch.inprocess import importwatch

#: typing.TYPE_CHECKING without importing typing at process start (hook.py says why); mypy takes it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType

    from npuprof_launch.inprocess.stepclock import DeclaredClock

#: The profile function's watchers while __main__'s functions are awaited: each is called with
#: (frame, event) and returns whether it goes on watching. The last one removed removes the function.
_watchers: list = []


def _dispatch(frame, event, arg) -> None:
    if not _watchers:
        sys.setprofile(None)  # a thread that started while we watched
        return
    for watcher in list(_watchers):
        try:
            keep = watcher(frame, event)
        except Exception as exc:  # noqa: BLE001 - a profile function that raises would break the job
            keep = False
            names.say(f"watching __main__ for a declared function failed: {exc!r}")
        if not keep:
            _stop_watching(watcher)


def _start_watching(watcher) -> None:
    import threading

    _watchers.append(watcher)
    sys.setprofile(_dispatch)
    threading.setprofile(_dispatch)


def _stop_watching(watcher) -> None:
    if watcher in _watchers:
        _watchers.remove(watcher)
    if not _watchers:
        import threading

        sys.setprofile(None)
        threading.setprofile(None)


def _ours_or_none() -> bool:
    """Whether no profile function but ours watches this thread."""
    return sys.getprofile() in (None, _dispatch)


NEVER_IMPORTED = processlog.NEVER_IMPORTED
NEVER_CALLED = processlog.NEVER_CALLED
NOT_FOUND = processlog.NOT_FOUND
_MISSING = object()


def wanted(environ) -> list[Declared]:
    """The functions this job declares (a malformed value is left to the options check)."""
    from npuprof_launch.common import stages

    if (environ.get(names.SCENARIO_VAR) or "").strip().lower() == "rl":
        found = []
        for text in stages.split_list(environ.get(names.STAGE_VAR, "")):
            name, target = stages.split(text)
            found.append(Declared(target, stage=name, stage_text=text))
    else:
        target = environ.get(names.TARGET_VAR, "").strip()
        found = [Declared(target)] if target else []
    return [item for item in found if ":" in item.target]


def replaces_optimizer_clock(environ) -> bool:
    """True when steps come from declared functions: a --target, or a scenario that needs them."""
    scenario = (environ.get(names.SCENARIO_VAR) or "").strip().lower()
    return scenario in ("infer", "rl") or bool(environ.get(names.TARGET_VAR, "").strip())


def _did_you_mean(parent: object, part: str) -> str:
    """`` (did you mean 'step'?)`` with the closest names of ``parent`` (a misspelt --target), or ``""``;
    difflib is imported here only, on the way to saying the target was not found."""
    import difflib

    try:
        if isinstance(parent, type):
            known = {name for klass in parent.__mro__ for name in vars(klass)}
        else:
            known = set(dir(parent))
    except Exception:  # noqa: BLE001 - an object whose attributes cannot be listed: no suggestion
        return ""
    near = difflib.get_close_matches(part, sorted(name for name in known if not name.startswith("__")), n=2)
    return f" (did you mean {' or '.join(repr(name) for name in near)}?)" if near else ""


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
            raise LookupError(f"{path} has no attribute {part!r}{_did_you_mean(parent, part)}")
        path = f"{path}.{part}"
    function = found.__func__ if isinstance(found, (classmethod, staticmethod)) else found
    if isinstance(function, type):
        raise LookupError(f"{path} is a class; name the method that runs one step")
    if not callable(function):
        raise LookupError(f"{path} is a {type(function).__name__}, not a function")
    return function


class Declared:
    """One declared function: where it lives, whether it was found, and the clock its calls go to."""

    def __init__(self, target: str, *, stage: str | None = None, stage_text: str | None = None) -> None:
        self.target = target
        self.module, _, self.qualname = target.partition(":")
        self.stage = stage
        self.stage_text = stage_text
        self.reason = self.why = NEVER_IMPORTED
        #: The callclock.CallClock its calls go to, made by ``make_clock(self)`` (the hook's) once the
        #: function is found: not at process start, where the hook imports as little as it can.
        self.clock: DeclaredClock | None = None
        self.make_clock: Callable[[Declared], DeclaredClock] | None = None
        self.wrapped = False
        #: Counted inside its own code (inplace.py), not through a wrapper around it.
        self.in_place = False
        #: How a call gives its work back (``kind_of``), known once the function is found.
        self.kind: str | None = None
        self._hunting = False

    @property
    def awaited(self) -> bool:
        """An ``async def``: a call's work runs when what it returns is awaited, not in the call."""
        return self.kind == COROUTINE

    @property
    def iterated(self) -> bool:
        """A generator function: a call's work runs as what it returns is iterated, not in the call."""
        return self.kind == GENERATOR

    def describe(self) -> str:
        return f"stage {self.stage} ({self.target})" if self.stage else f"target {self.target}"

    def label(self) -> str:
        """The name its recorded calls carry on the timeline, before ``#N``."""
        return self.stage or self.qualname

    def watch(self, finder: importwatch.PostImportFinder) -> None:
        if self.module == "__main__":
            finder.watch("torch", self.find_in_main)
            finder.watch("runpy", self._watch_runpy)
        else:
            finder.watch(self.module, self.found_module)

    # -- finding the function -----------------------------------------------------------------

    def found_module(self, module: object) -> None:
        """The module has executed: wrap the function, or remember why it cannot be."""
        self._wrap(module)

    def _not_found(self, why: str) -> None:
        self.reason, self.why = f"{NOT_FOUND}: {why}", NOT_FOUND

    def _wrap(self, module: object):
        """Replace the function with our wrapper; returns the code its calls run first, or None."""
        try:
            function = lookup(module, self.qualname)
        except LookupError as exc:
            self._not_found(str(exc))
            return None
        code = getattr(function, "__code__", None)  # the code a call in flight runs (the first-call watcher's)
        self.kind = kind_of(function)
        from npuprof_launch.inprocess import inplace

        if self.kind is None and inplace.count_in_place(function, self._begin, self._end):
            self.in_place = True
        else:
            try:
                import wrapt

                wrapt.wrap_function_wrapper(module, self.qualname, self._call)
            except Exception as exc:  # noqa: BLE001 - the module must import as if we were not here
                self._not_found(f"could not wrap it ({type(exc).__name__}: {exc})")
                names.say(f"{self.describe()}: {self.reason}; the job goes on unprofiled")
                return None
        self.reason = self.why = NEVER_CALLED
        self.wrapped = True
        if self.clock is None and self.make_clock is not None:
            self.clock = self.make_clock(self)
        return code

    def _call(self, wrapped, instance, args, kwargs):
        clock = self.clock
        if clock is None:
            return wrapped(*args, **kwargs)
        return clock.call(wrapped, args, kwargs)

    def _begin(self) -> None:
        """The first line of the function's own code, counted in place (inplace.py)."""
        clock = self.clock
        if clock is not None:
            clock.begin_call()

    def _end(self) -> None:
        """The ``finally`` of the function's own code, counted in place."""
        clock = self.clock
        if clock is not None:
            clock.end_call()

    def find_in_main(self, torch_module: object = None, code=None) -> None:
        """torch was imported (or runpy runs a script as ``__main__``): find the function in the
        script, now or at its ``def``. ``code`` is the script's code when runpy is about to run it."""
        if self.wrapped or self._hunting:
            return
        main = sys.modules.get("__main__")
        if main is None:
            self._not_found("this process has no __main__ module")
            return
        namespace = vars(main)
        first = self.qualname.split(".")[0]
        if first in namespace:
            self._wrap(main)
            return
        if code is None:
            frame = _module_frame(namespace)
            code = frame.f_code if frame is not None else None
        if code is not None and not _assigns(code, first):
            self._not_found(f"the code run as __main__ never assigns {first}")
            return
        if not _ours_or_none():
            self._not_found(
                "another profiler (sys.setprofile) watches __main__, so its definition could not be awaited; "
                "put the function in an importable module"
            )
            return
        self._not_found(f"the code run as __main__ had not assigned {first} when the process ended")
        self._hunting = True
        _start_watching(self._hunter(main, first))

    def _watch_runpy(self, runpy) -> None:
        """A script run by ``runpy.run_path``/``run_module`` as ``__main__`` gets a module of its
        own: look for the function there when runpy starts it, if torch is imported by then (else
        the torch watch will, as for any script)."""
        run_code = getattr(runpy, "_run_code", None)
        if run_code is None or getattr(run_code, "_npuprof_watched", False):
            return
        declared = self

        def _run_code(code, run_globals, *args, **kwargs):
            mod_name = kwargs.get("mod_name", args[1] if len(args) > 1 else None)
            if mod_name == "__main__" and "torch" in sys.modules and not declared.wrapped:
                try:
                    declared._hunting = False
                    declared.find_in_main(code=code)
                except Exception as exc:  # noqa: BLE001 - the script must run whatever happens here
                    names.say(f"{declared.describe()}: could not look for it in the script runpy runs: {exc!r}")
            return run_code(code, run_globals, *args, **kwargs)

        _run_code._npuprof_watched = True  # type: ignore[attr-defined]  # a mark on the function, read with getattr
        _run_code.__wrapped__ = run_code  # type: ignore[attr-defined]  # functions take it, as functools.wraps sets it
        runpy._run_code = _run_code

    def _hunter(self, main: object, first: str):
        """The watcher that waits for the ``def``: one dict lookup per event until ``__main__`` binds ``first``."""
        namespace = vars(main)

        def hunt(frame, event) -> bool:
            if not self._hunting:
                return False
            if first not in namespace:
                return True
            self._hunting = False
            code = self._wrap(main)
            if code is not None and self.clock is not None and not self.awaited:
                # (a coroutine's frame "returns" at each await: its first call is not followed)
                first_call = self._first_call_watcher(code, self.clock)
                if first_call(frame, event):
                    _start_watching(first_call)
            return False

        return hunt

    def _first_call_watcher(self, code, clock: DeclaredClock):
        """The watcher of the first call until one is counted: a call of the function's own code
        that did not come through the wrapper (a name loaded before we wrapped, or the call whose
        event found the ``def``) is counted from its call event to its return."""

        def first_call(frame, event) -> bool:
            if clock.session is not None or clock.in_call:
                return False  # a call came through the wrapper: counted there
            if event != "call" or frame.f_code is not code:
                return True
            if not clock.claims_this_thread():
                return True
            clock.enter()

            def until_return(returning, event) -> bool:
                if returning is frame and event == "return":
                    clock.exit()
                    return False
                return True

            _start_watching(until_return)
            return False

        return first_call

    # -- the report ---------------------------------------------------------------------------

    def idle(self) -> dict:
        """Why this function made no step in this process."""
        reason = self.reason
        main = sys.modules.get("__main__")
        if reason == NEVER_IMPORTED and self.module in _names_of(main):
            reason += f": it runs as __main__ here, so name it __main__:{self.qualname}"
        return {"stage": self.stage, "target": self.target, "reason": reason, "why": self.why}


#: The kinds of function whose call returns before its work is done (``Declared.kind``).
COROUTINE = "coroutine"
GENERATOR = "generator"


def kind_of(function: object) -> str | None:
    """``coroutine`` for an ``async def``, ``generator`` for a (sync or async) generator function, else None.

    A classmethod or staticmethod is looked through, and so is a decorator that keeps
    ``__wrapped__`` (functools.wraps), which an ``async def`` under a sync-looking wrapper has.
    """
    import inspect

    function = getattr(function, "__func__", function)
    try:
        function = inspect.unwrap(function)  # type: ignore[arg-type]  # it follows __wrapped__ on any object
    except ValueError:  # a __wrapped__ cycle
        pass
    if inspect.iscoroutinefunction(function):
        return COROUTINE
    if inspect.isgeneratorfunction(function) or inspect.isasyncgenfunction(function):
        return GENERATOR
    return None


def _names_of(module) -> tuple[str, ...]:
    """The importable names a ``__main__`` module goes by (``python -m pkg.mod``, ``python mod.py``)."""
    if module is None:
        return ()
    found = []
    spec = getattr(module, "__spec__", None)
    if spec is not None and spec.name:
        found.append(spec.name)
    path = getattr(module, "__file__", None)
    if path:
        found.append(os.path.splitext(os.path.basename(path))[0])
    return tuple(found)


def _module_frame(namespace: dict):
    """The frame running the ``__main__`` module's own code on this thread's stack, or None."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is namespace and frame.f_code.co_name == "<module>":
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
