"""Run a callback right after a module is imported, with the standard library only.

wrapt has the same feature, but importing wrapt 2.x costs ~80 ms, and the hook runs in every
Python process of a job, most of which never import torch. This finder sits first on
``sys.meta_path``, answers only for the watched names, and lets the real finder do the work.
A callback that raises is reported and never makes the import fail (a failing wrapt
post-import hook makes ``import torch`` itself fail).

The registry is under a lock, as wrapt's is: the job may import on several threads at once (a
data-loading thread, a thread that imports torch), and a watch is added while another thread's
import looks up the same name. A watch added while the module's import is under way
on another thread joins that import's callbacks (it would otherwise wait for an import that has
already begun, forever). The lock is ``_thread``'s (a built-in, so nothing is imported at
start-up) and is held only while the registry changes: never while other finders are asked or a
callback runs, either of which may import.
"""

from __future__ import annotations

import sys
from _thread import allocate_lock


def _report(name: str, exc: BaseException) -> None:
    try:
        sys.stderr.write(f"npuprof: post-import hook for {name} failed, job goes on unprofiled: {exc!r}\n")
    except Exception:  # noqa: BLE001 - no stderr (2>&-, a daemon): the import must still succeed
        pass


class _Loader:
    """Delegates to the real loader and calls the callbacks once the module has executed."""

    def __init__(self, loader, finder: PostImportFinder, name: str) -> None:
        self._loader = loader
        self._finder = finder
        self._name = name

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        # Put the real loader back first, so the module never sees us (pkgutil, importlib.resources).
        module.__loader__ = self._loader
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            spec.loader = self._loader
        try:
            self._loader.exec_module(module)
        except BaseException:
            self._finder._failed(self._name)
            raise
        run_callbacks(module.__name__, module, self._finder._executed(self._name))


def run_callbacks(name: str, module: object, callbacks: list) -> None:
    for callback in callbacks:
        try:
            callback(module)
        except Exception as exc:  # noqa: BLE001 - a hook of ours must never break an import
            _report(name, exc)


class PostImportFinder:
    """A meta-path finder that only intercepts the module names it watches."""

    def __init__(self) -> None:
        self._watched: dict[str, list] = {}
        #: Watched modules whose import (through us) is under way: a watch added now joins them.
        self._loading: dict[str, list] = {}
        #: Watched modules that have executed, though importlib may not have marked them done yet.
        self._done: set[str] = set()
        self._busy: set[str] = set()
        self._lock = allocate_lock()

    def watch(self, name: str, callback) -> None:
        """Call ``callback(module)`` once ``name`` is imported (now, if it already is)."""
        with self._lock:
            loading = self._loading.get(name)
            if loading is not None:
                loading.append(callback)
                return
            module = sys.modules.get(name)
            initializing = getattr(getattr(module, "__spec__", None), "_initializing", False)
            loaded = module is not None and (name in self._done or initializing is False)
            if not loaded:
                self._watched.setdefault(name, []).append(callback)
        if loaded:
            run_callbacks(name, module, [callback])

    def _executed(self, name: str) -> list:
        """The module has executed: the callbacks to call, those added during its import included."""
        with self._lock:
            self._done.add(name)
            return self._loading.pop(name, [])

    def _failed(self, name: str) -> None:
        """The import raised: its watches wait for the next attempt, as they waited for this one."""
        with self._lock:
            self._watched.setdefault(name, []).extend(self._loading.pop(name, []))

    def find_spec(self, fullname: str, path=None, target=None):
        with self._lock:
            if fullname not in self._watched or fullname in self._busy:
                return None
            self._busy.add(fullname)
        # The others are asked outside the lock: a finder of theirs may wait for an import lock that
        # another thread holds while it asks us. importlib imports one name on one thread at a time,
        # so ``_busy`` only ever sees this thread asking again, through the finders it asks.
        try:
            spec = self._find_with_others(fullname, path, target)
        finally:
            with self._lock:
                self._busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        with self._lock:
            callbacks = self._watched.pop(fullname, None)
            if callbacks is None:
                return spec
            self._loading[fullname] = callbacks
        spec.loader = _Loader(spec.loader, self, fullname)
        return spec

    def _find_with_others(self, fullname: str, path, target):
        for finder in sys.meta_path:
            if finder is self:
                continue
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def invalidate_caches(self) -> None:
        """Part of the finder protocol; nothing is cached here."""


def finder() -> PostImportFinder:
    """The process's one finder, put first on ``sys.meta_path`` on first use."""
    for existing in sys.meta_path:
        if isinstance(existing, PostImportFinder):
            return existing
    new = PostImportFinder()
    sys.meta_path.insert(0, new)
    return new
