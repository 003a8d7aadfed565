"""Counting a function inside its own code (inplace.py): done only where the recompiled source is
the code that runs, and then with the job's lines, names, closure and warnings as they were."""

from __future__ import annotations

import importlib
import linecache
import sys
import traceback
import warnings

from npuprof_launch.inprocess import inplace


def recorder():
    calls: list = []
    return calls, (lambda *a: calls.append(("begin", *a))), (lambda *a: calls.append(("end", *a)))


def make_trainer(offset):
    class Trainer:
        def __init__(self):
            self.__scale = 2  # mangled: _Trainer__scale

        def step(self, batch):
            """Its docstring stays."""
            warnings.warn("to the caller", UserWarning, stacklevel=2)
            if batch is None:
                raise ValueError("no batch")
            return super().__repr__()[:1] + str(batch * self.__scale + offset)

    return Trainer


def test_a_method_with_a_closure_super_and_mangled_names_is_counted_and_reads_as_before():
    calls, begin, end = recorder()
    trainer_class = make_trainer(1)
    before = trainer_class.step.__code__
    assert inplace.count_in_place(trainer_class.step, begin, end, ("batch",))
    assert trainer_class.step.__code__ is not before and trainer_class.step.__doc__ == "Its docstring stays."
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert trainer_class().step(3) == "<7"  # the caller's line, not a frame of ours
    assert seen[0].filename == __file__ and seen[0].lineno == sys._getframe().f_lineno - 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer_class().step(None)
    except ValueError as exc:
        frames = traceback.extract_tb(exc.__traceback__)
    assert [f.name for f in frames] == [
        "test_a_method_with_a_closure_super_and_mangled_names_is_counted_and_reads_as_before",
        "step",
    ]
    assert frames[-1].line == 'raise ValueError("no batch")'
    assert calls == [("begin", 3), ("end", 3), ("begin", None), ("end", None)]


def test_what_cannot_be_proved_the_same_is_left_alone(tmp_path, monkeypatch):
    _, begin, end = recorder()

    def generator():
        yield 1

    def rebinds(batch):
        batch = batch + 1
        return batch

    assert not inplace.count_in_place(generator, begin, end)
    assert not inplace.count_in_place(lambda: 1, begin, end)
    assert not inplace.count_in_place(rebinds, begin, end, ("batch",))  # ``end`` would read the new value
    assert not inplace.count_in_place(len, begin, end)
    assert inplace.count_in_place(rebinds, begin, end)  # no argument read: fine
    source = tmp_path / "edited_module.py"
    source.write_text("def step(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_module")
    source.write_text("def step(x):\n    return x + 2\n")  # the file changed after the import
    linecache.checkcache(str(source))
    assert not inplace.count_in_place(module.step, begin, end)
    assert module.step(1) == 2
