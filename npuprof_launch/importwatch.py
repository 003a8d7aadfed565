"""Run a callback right after a module is imported, with the standard library only.

wrapt has the same feature, but importing wrapt 2.x costs ~80 ms, and the hook runs in every
Python process of a job, most of which never import torch. This finder sits first on
``sys.meta_path``, answers only for the watched names, and lets the real finder do the work.
A callback that raises is reported and never makes the import fail (a failing wrapt
post-import hook makes ``import torch`` itself fail).
"""

from __future__ import annotations

import sys


def _report(name: str, exc: BaseException) -> None:
    try:
        sys.stderr.write(f"npuprof: post-import hook for {name} failed, job goes on unprofiled: {exc!r}\n")
    except Exception:  # noqa: BLE001 - no stderr (2>&-, a daemon): the import must still succeed
        pass


class _Loader:
    """Delegates to the real loader and calls the callbacks once the module has executed."""

    def __init__(self, loader, callbacks: list) -> None:
        self._loader = loader
        self._callbacks = callbacks

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
        self._loader.exec_module(module)
        run_callbacks(module.__name__, module, self._callbacks)


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
        self._busy: set[str] = set()

    def watch(self, name: str, callback) -> None:
        """Call ``callback(module)`` once ``name`` is imported (now, if it already is)."""
        module = sys.modules.get(name)
        if module is not None and getattr(getattr(module, "__spec__", None), "_initializing", False) is False:
            run_callbacks(name, module, [callback])
            return
        self._watched.setdefault(name, []).append(callback)

    def find_spec(self, fullname: str, path=None, target=None):
        callbacks = self._watched.get(fullname)
        if callbacks is None or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            spec = self._find_with_others(fullname, path, target)
        finally:
            self._busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        del self._watched[fullname]
        spec.loader = _Loader(spec.loader, callbacks)
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
