"""A stand-in inference server: calls handle() in a loop until a stop file appears.

It prints how many requests it handled and a checksum of every answer, so that a run under
npuprof-run --on-demand can be compared with a run without it (same number of requests).
"""

import argparse
import hashlib
import os
import time

import torch

torch.manual_seed(0)
WEIGHT = torch.randn(64, 64)


def handle(batch: torch.Tensor) -> torch.Tensor:
    return torch.tanh(batch @ WEIGHT).sum(dim=0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stop-file", required=True)
    parser.add_argument("--requests", type=int, default=0, help="stop after this many (0: only the stop file)")
    parser.add_argument("--pause", type=float, default=0.01)
    args = parser.parse_args()
    digest = hashlib.sha256()
    served = 0
    deadline = time.monotonic() + 300
    while not os.path.exists(args.stop_file) and time.monotonic() < deadline:
        if args.requests and served >= args.requests:
            break
        answer = handle(torch.full((8, 64), float(served % 7)))
        digest.update(repr(answer.tolist()).encode())
        served += 1
        time.sleep(args.pause)
    print(f"served {served}" if args.requests else "served")
    print(f"checksum {digest.hexdigest()}" if args.requests else "stopped")


if __name__ == "__main__":
    main()
