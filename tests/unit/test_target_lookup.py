"""A declared function looked up in its module (declared.lookup): a misspelt name gets the closest
names of the module or class it was looked for in, as a misspelt option gets 'did you mean'."""

from __future__ import annotations

import types

import pytest

from npuprof_launch.inprocess import declared


class Engine:
    def step(self) -> None: ...

    def stop(self) -> None: ...


class Fast(Engine):
    def warm(self) -> None: ...


MODULE = types.SimpleNamespace(__name__="serve_lib", Engine=Engine, Fast=Fast, generate=lambda: None)


@pytest.mark.parametrize(
    ("qualname", "said"),
    [
        ("Engine.stpe", "serve_lib.Engine has no attribute 'stpe' (did you mean 'stop' or 'step'?)"),
        ("Fast.setp", "serve_lib.Fast has no attribute 'setp' (did you mean 'stop' or 'step'?)"),
        ("Engin.step", "serve_lib has no attribute 'Engin' (did you mean 'Engine'?)"),
        ("generat", "serve_lib has no attribute 'generat' (did you mean 'generate'?)"),
        ("nothing_like_it", "serve_lib has no attribute 'nothing_like_it'"),
    ],
)
def test_a_misspelt_target_gets_the_closest_names(qualname, said):
    with pytest.raises(LookupError) as raised:
        declared.lookup(MODULE, qualname)
    assert str(raised.value) == said


def test_a_found_method_is_its_function():
    assert declared.lookup(MODULE, "Fast.step") is Engine.step


def test_an_idle_line_says_why_as_a_kind_and_an_old_line_is_read_from_its_sentence():
    from npuprof_launch.common import processlog

    assert processlog.why_of({"why": "never called", "reason": "never called"}) == "never called"
    assert processlog.why_of({"reason": "not found: target_lib has no attribute 'nosuch'"}) == "not found"
    assert processlog.why_of({"reason": "something else"}) is None
    assert processlog.WHY_ORDER == ("not found", "never called", "never imported")
