"""STAND-IN for torch_npu/profiler/analysis/prof_common_func/_utils.py: its guard of the public calls."""

import functools

from torch_npu.profiler.analysis.prof_common_func._constant import print_error_msg


def no_exception_func(default_ret=None):
    """As the real one: an exception in the call is printed as an error and the call returns ``default_ret``."""

    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except Exception as ex:  # noqa: BLE001 - what the real decorator does
                print_error_msg(f"Call {func.__name__} failed. Exception: {str(ex)}")
                return default_ret

        return wrapper

    return decorator
