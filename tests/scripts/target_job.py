"""Calls one kind of step function N times and prints the results, and what the function looks like.

usage: target_job.py KIND [--calls N] [--late]

KIND: function, method, classmethod, staticmethod, nested, recursive, threaded (nested calls from
another thread), worker-threads (each call in its own thread). --late imports the module of the
step function only after a first half of the calls, done with a local copy: a target whose
module is imported long after the hook, and after torch.
"""

import argparse
import hashlib
import importlib
import inspect
import threading

import torch

KINDS = {
    "function": lambda lib: lib.step,
    "method": lambda lib: lib.Engine().step,
    "classmethod": lambda lib: lib.Engine.class_step,
    "staticmethod": lambda lib: lib.Engine.static_step,
    "nested": lambda lib: lib.Engine.Inner().step,
    "recursive": lambda lib: lib.recursive_step,
    "threaded": lambda lib: lib.threaded_step,
    "worker-threads": lambda lib: lib.step,
}


def local_step(x: torch.Tensor) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.tanh(x @ torch.randn(16, 16))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--late", action="store_true")
    args = parser.parse_args()

    x = torch.linspace(-1, 1, 64).reshape(4, 16)
    calls = args.calls
    if args.late:
        for _ in range(calls // 2):
            x = local_step(x)
        calls -= calls // 2
    lib = importlib.import_module("target_lib")
    function = KINDS[args.kind](lib)
    print("name", function.__name__, function.__qualname__, function.__doc__)
    print("signature", inspect.signature(function))
    for _ in range(calls):
        if args.kind == "worker-threads":
            box = []
            worker = threading.Thread(target=lambda out, value: out.append(function(value)), args=(box, x))
            worker.start()
            worker.join()
            x = box[0]
        else:
            x = function(x)
    print("result", hashlib.sha256(repr(x.tolist()).encode()).hexdigest())


if __name__ == "__main__":
    main()
