"""STAND-IN: every call made to the stand-in, one JSON line each, in $TORCH_NPU_STANDIN_RECORD."""

import enum
import functools
import inspect
import json
import os

from torch_npu._switches import RECORD as RECORD_VAR


def record(call: str, **data) -> None:
    path = os.environ.get(RECORD_VAR)
    if not path:
        return
    line = json.dumps({"call": call, "pid": os.getpid(), **jsonable(data)}, sort_keys=True)
    with open(path, "a") as handle:
        handle.write(line + "\n")


def jsonable(value):
    """Constants by value, enums by name, recorded objects by what was passed to them."""
    if isinstance(value, enum.Enum):
        return value.name
    if hasattr(value, "passed"):
        return jsonable(value.passed)
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(item) for item in value]
    if callable(value):
        return "<callable>"
    return value


def recorded(call: str):
    """Record the arguments exactly as passed (by name; positional ones listed too), then call.

    functools.wraps keeps the imitated signature visible to inspect.signature, as torch_npu's own
    no_exception_func decorator does.
    """

    def decorate(func):
        signature = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            names = list(signature.parameters)
            passed = dict(bound.arguments)
            positional = names[: len(args)]
            owner = passed.pop("self", None)
            positional = [name for name in positional if name != "self"]
            if owner is not None:
                owner.passed = passed
            record(call, kwargs=passed, positional=positional)
            return func(*args, **kwargs)

        return wrapper

    return decorate
