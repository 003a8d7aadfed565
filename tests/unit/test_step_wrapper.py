"""The moment after an optimizer's range, as the step wrapper runs it, driven in-process with no torch.

What the lean count does on the common path (count and time, nothing else), where it hands over to
the slow path (a boundary that acts, another optimizer), and what it does outside lean mode (run
what waits for the step's return), for the wrapper put around another torch's own (``_around``);
the copy of torch's wrapper runs the same lines, and the subprocess tests hold it to them.
"""

from __future__ import annotations

import types

from npuprof_launch.inprocess import stepwrapper


class Optimizer:
    """Something with a step, as torch's wrapper is called: the optimizer first."""


def clock_with(session, *, sole=None, lean=False, action=None, exact=False):
    calls: list = []
    clock = types.SimpleNamespace(
        _sole=sole,
        _lean=lean,
        _exact=exact,
        _exact_only=False,
        _broken=False,
        _dynamo=None,
        _local=types.SimpleNamespace(depth=0),
        _lean_next=None,
        _session=session,
        _points=types.SimpleNamespace(action=action),
        _slow=lambda obj, inside: calls.append(("slow", obj, inside)),
        _slow_after=lambda obj: calls.append(("after", obj)),
    )
    return clock, calls


def stepping(clock):
    returned = []

    def hooked(optimizer, *args, **kwargs):
        returned.append((optimizer, args, kwargs))
        return "out"

    return stepwrapper._around(clock, hooked), returned


def test_lean_steps_are_counted_and_timed_after_the_step_returns():
    optimizer = Optimizer()
    session = types.SimpleNamespace(steps=0, marked=[0], call_at=4, times=[])
    clock, calls = clock_with(session, sole=id(optimizer), lean=True)
    step, returned = stepping(clock)
    assert [step(optimizer, 1, lr=2) for _ in range(3)] == ["out"] * 3
    assert returned == [(optimizer, (1,), {"lr": 2})] * 3
    assert session.steps == session.marked[0] == 3 and len(session.times) == 3 and calls == []
    step(optimizer)  # the count reaches call_at: the session is told, outside the range
    assert session.steps == 3 and calls == [("slow", optimizer, False)]


def test_another_optimizer_while_lean_goes_to_the_slow_path():
    sole, other = Optimizer(), Optimizer()
    session = types.SimpleNamespace(steps=0, marked=[0], call_at=100, times=[])
    clock, calls = clock_with(session, sole=id(sole), lean=True)
    step, _ = stepping(clock)
    step(other)
    assert session.steps == 0 and calls == [("slow", other, False)]


def test_outside_lean_mode_only_what_waits_for_the_return_runs():
    optimizer = Optimizer()
    session = types.SimpleNamespace(steps=0, marked=[0], call_at=100, times=[])
    clock, calls = clock_with(session)
    step, _ = stepping(clock)
    step(optimizer)
    assert calls == [] and session.steps == 0
    clock._points.action = object()  # a post hook asked for an action inside the range
    step(optimizer)
    assert calls == [("after", optimizer)]
    clock._points.action, clock._lean_next = None, id(optimizer)  # the clock may turn lean now
    step(optimizer)
    assert calls == [("after", optimizer)] * 2


def test_exact_steps_go_to_the_slow_path_after_the_range_and_a_step_inside_a_step_does_not():
    outer, inner = Optimizer(), Optimizer()
    session = types.SimpleNamespace(steps=0, marked=[0], call_at=100, times=[])
    clock, calls = clock_with(session, exact=True)
    depths = []

    def hooked(optimizer, *args, **kwargs):
        depths.append(clock._local.depth)
        if optimizer is outer:
            step(inner)  # a subclass's step calling its parent's: one iteration
        return "out"

    step = stepwrapper._around(clock, hooked)
    assert step(outer) == "out"
    assert depths == [1, 2] and clock._local.depth == 0
    assert calls == [("slow", outer, False)] and clock._exact_only


def test_a_step_that_raises_leaves_the_depth_as_it_found_it():
    optimizer = Optimizer()
    clock, calls = clock_with(types.SimpleNamespace(steps=0, marked=[0], call_at=100, times=[]), exact=True)

    def hooked(optimizer, *args, **kwargs):
        raise ValueError("the job's own error")

    step = stepwrapper._around(clock, hooked)
    for _ in range(2):
        try:
            step(optimizer)
        except ValueError:
            pass
    assert clock._local.depth == 0 and calls == []


def test_a_step_begun_lean_that_a_step_inside_it_turned_exact_is_counted_once_as_the_outer_one():
    """A subclass's step calling super().step() while the clock is lean on another optimizer:
    the inner step leaves lean mode and is no iteration of its own; the outer one counts."""
    sole, subclass = Optimizer(), Optimizer()
    session = types.SimpleNamespace(steps=5, call_at=100, times=[])
    clock, calls = clock_with(session, sole=id(sole), lean=True)

    def leave_lean(obj, inside):
        calls.append(("slow", obj, inside))
        clock._lean, clock._exact, clock._sole = False, True, None

    clock._slow = leave_lean

    nested = []

    def hooked(optimizer, *args, **kwargs):
        if not nested:
            nested.append(True)
            step(optimizer)  # the parent class's step, wrapped too
        return "out"

    step = stepwrapper._around(clock, hooked)
    step(subclass)
    assert calls == [("slow", subclass, False), ("slow", subclass, False)]  # the inner (left lean), the outer
    assert clock._local.depth == 0
