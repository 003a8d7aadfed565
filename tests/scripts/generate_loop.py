"""A generation loop whose step function is defined in the script itself, after torch is imported.

usage: generate_loop.py [--calls N] [--kind function|method]
"""

import argparse
import hashlib

import torch

torch.manual_seed(0)
WEIGHT = torch.randn(16, 16)


def generate_step(x: torch.Tensor) -> torch.Tensor:
    """One generation step."""
    return torch.tanh(x @ WEIGHT)


class Decoder:
    def step(self, x: torch.Tensor) -> torch.Tensor:
        return generate_step(x) * 0.5


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--kind", choices=["function", "method"], default="function")
    args = parser.parse_args()
    step = generate_step if args.kind == "function" else Decoder().step
    x = torch.linspace(-1, 1, 64).reshape(4, 16)
    for _ in range(args.calls):
        x = step(x)
    print("result", hashlib.sha256(repr(x.tolist()).encode()).hexdigest())


if __name__ == "__main__":
    main()
