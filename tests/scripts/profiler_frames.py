"""The job's own torch profiler, whose start and exit the tool watches (coexist.py), as the job
sees them: a warning raised to the profiler's caller (``stacklevel=3`` from what ``_start_trace``
calls), the stack seen from there, and a start and an exit that fail. Bare and profiled, stdout
and stderr must be the same, line for line (tests/test_transparent_frames.py)."""

import traceback
import warnings

import torch
import torch.autograd.profiler as autograd_profiler

real_enable, real_disable = autograd_profiler._enable_profiler, autograd_profiler._disable_profiler
fail = set()


def show(message, category, filename, lineno, file=None, line=None):
    print(f"warning at {filename}:{lineno}: {category.__name__}: {message}", flush=True)


def on_start():
    warnings.warn("the job's profiler starts", UserWarning, stacklevel=3)
    print("start's caller:", traceback.format_stack(limit=3)[0].strip().splitlines()[0], flush=True)


def enable(*args, **kwargs):
    if "start" in fail:
        raise RuntimeError("the profiler cannot start")
    return real_enable(*args, **kwargs)


def disable(*args, **kwargs):
    if "exit" in fail:
        fail.discard("exit")
        real_disable(*args, **kwargs)
        raise RuntimeError("the profiler cannot stop")
    return real_disable(*args, **kwargs)


def main() -> None:
    warnings.showwarning = show
    autograd_profiler._run_on_profiler_start = on_start
    autograd_profiler._enable_profiler, autograd_profiler._disable_profiler = enable, disable
    for case in ("", "start", "exit"):
        fail.clear()
        fail.add(case)
        try:
            with torch.autograd.profiler.profile():
                torch.ones(4).sum()
        except RuntimeError:
            traceback.print_exc()
    print("done", flush=True)


if __name__ == "__main__":
    main()
