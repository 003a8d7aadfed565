"""The clock's wrapper of an optimizer's step, dressed as torch's (stepframe.py), in-process: a
traceback through it has torch's frame (file, line, name, source line and columns), a hook's
exception too, and the code is the clock's all the same (it counts); a source that is not the
running code is refused, and the plain wrapper is used."""

from __future__ import annotations

import traceback
import types

import pytest

torch = pytest.importorskip("torch")
optimizer_module = pytest.importorskip("torch.optim.optimizer")

from test_step_wrapper import clock_with  # noqa: E402 - after the skip

from npuprof_launch.inprocess import stepframe, stepwrapper  # noqa: E402 - after the skip

FACTORY = vars(optimizer_module.Optimizer)["profile_hook_step"].__func__


def clock(optimizer_id: int | None = None):
    """test_step_wrapper's clock (lean for ``optimizer_id``'s optimizer), with torch for the range."""
    session = types.SimpleNamespace(steps=0, marked=[0], call_at=100, times=[])
    made, _ = clock_with(session, sole=optimizer_id, lean=optimizer_id is not None)
    made._torch = torch
    return made


def frames_after_the_caller(call) -> list[tuple]:
    """Where a call's exception passed, past the lambda that calls: file, line, name, source
    line and (3.11) columns."""
    try:
        call()
    except ValueError as exc:
        summary = traceback.extract_tb(exc.__traceback__)[2:]  # this function, the lambda
    else:
        raise AssertionError("it did not raise")
    return [(f.filename, f.lineno, f.name, f.line, getattr(f, "colno", None)) for f in summary]


def optimizer():
    return torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)


def test_a_step_that_raises_has_torchs_frame_and_the_count_goes_on():
    def step(self, closure=None):
        if self.fail:
            raise ValueError("the step fails")

    opt = optimizer()
    hooked = FACTORY(step)
    the_clock = clock(id(opt))
    ours = stepframe.dressed(stepwrapper._like_torch, FACTORY, hooked)(the_clock, optimizer_module, step, hooked)
    opt.fail = True
    bare = frames_after_the_caller(lambda: hooked(opt))
    assert bare[0][0] == optimizer_module.__file__ and bare[0][2] == "wrapper", bare
    assert frames_after_the_caller(lambda: ours(opt)) == bare
    opt.fail = False
    ours(opt)
    ours(opt)
    assert the_clock._session.steps == the_clock._session.marked[0] == 2, "the clock's code: it counts"


def test_a_hook_that_raises_has_torchs_frame():
    def step(self, closure=None):
        return None

    def hook(optimizer, args, kwargs):
        raise ValueError("the hook fails")

    opt = optimizer()
    opt.register_step_pre_hook(hook)
    hooked = FACTORY(step)
    ours = stepframe.dressed(stepwrapper._like_torch, FACTORY, hooked)(clock(), optimizer_module, step, hooked)
    assert frames_after_the_caller(lambda: ours(opt)) == frames_after_the_caller(lambda: hooked(opt))


def test_a_source_that_is_not_the_running_code_is_refused():
    def like_torch(clock, optimizer_module, func, hooked):
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)

        return wrapper

    like_torch.__code__ = like_torch.__code__.replace(co_consts=(*like_torch.__code__.co_consts, "changed"))
    source = __import__("inspect").getsourcelines(FACTORY)
    assert stepframe.dress(like_torch, source, optimizer_module.__file__, None) is None
