"""The import watch's registry: one callback call per watch, whichever thread imports or watches."""

from __future__ import annotations

import sys
import threading

from npuprof_launch.inprocess import importwatch


def _module_dir(tmp_path, count: int) -> list[str]:
    names = [f"npuprof_watched_{tmp_path.name}_{index}" for index in range(count)]
    for name in names:
        (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    return names


def test_watches_and_imports_on_many_threads_each_call_back_once(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    finder = importwatch.PostImportFinder()
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    names = _module_dir(tmp_path, 40)
    calls: dict[str, int] = {}
    guard = threading.Lock()

    def seen(module) -> None:
        with guard:
            calls[module.__name__] = calls.get(module.__name__, 0) + 1

    start = threading.Barrier(8)

    def work(offset: int) -> None:
        start.wait()
        for name in names[offset::4]:
            finder.watch(name, seen)
        for name in names[offset::4]:
            __import__(name)

    threads = [threading.Thread(target=work, args=(index % 4,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Two threads watch each name: both callbacks run, each once (now, or at the import).
    assert calls == {name: 2 for name in names}
    for name in names:
        sys.modules.pop(name, None)


def test_a_callback_that_raises_never_fails_the_import(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(tmp_path))
    finder = importwatch.PostImportFinder()
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    (name,) = _module_dir(tmp_path, 1)

    def broken(module) -> None:
        raise RuntimeError("boom")

    finder.watch(name, broken)
    assert __import__(name).VALUE == 1
    assert "npuprof: post-import hook for" in capsys.readouterr().err
    sys.modules.pop(name, None)


def test_a_failed_import_keeps_its_watches_for_the_next_attempt(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    finder = importwatch.PostImportFinder()
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    (name,) = _module_dir(tmp_path, 1)
    source = tmp_path / f"{name}.py"
    source.write_text("raise ImportError('not yet')\n")
    seen = []
    finder.watch(name, seen.append)
    try:
        __import__(name)
    except ImportError:
        pass
    assert seen == []
    source.write_text("VALUE = 2\n")
    import importlib

    importlib.invalidate_caches()
    assert __import__(name).VALUE == 2
    assert [module.__name__ for module in seen] == [name]
    sys.modules.pop(name, None)
