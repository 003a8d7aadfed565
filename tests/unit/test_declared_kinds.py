"""declared.kind_of: which declared functions return before their work is done (fast, in-process)."""

from __future__ import annotations

import functools

from npuprof_launch.inprocess import declared


async def coroutine_function():
    return 1


def generator_function():
    yield 1


async def async_generator_function():
    yield 1


def plain_function():
    return 1


def sync_looking(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return function(*args, **kwargs)

    return wrapper


class Engine:
    @classmethod
    async def class_step(cls):
        return 1

    @staticmethod
    def static_stream():
        yield 1


def test_coroutines_generators_and_plain_functions_are_told_apart():
    assert declared.kind_of(coroutine_function) == declared.COROUTINE
    assert declared.kind_of(generator_function) == declared.GENERATOR
    assert declared.kind_of(async_generator_function) == declared.GENERATOR
    assert declared.kind_of(plain_function) is None


def test_descriptors_and_decorators_that_keep_wrapped_are_looked_through():
    assert declared.kind_of(vars(Engine)["class_step"]) == declared.COROUTINE
    assert declared.kind_of(vars(Engine)["static_stream"]) == declared.GENERATOR
    assert declared.kind_of(sync_looking(coroutine_function)) == declared.COROUTINE


def test_a_wrapped_cycle_is_no_error():
    def looped():
        return 1

    looped.__wrapped__ = looped
    assert declared.kind_of(looped) is None
