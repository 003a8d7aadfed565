"""An inference rank whose requests stop: handle() serves --requests requests, then the process idles.

usage: idle_rank.py [--requests N] (--idle S | --until FILE) [--queue] [--more M]

--idle S      idle S seconds, then exit (the window is still open when the process ends)
--until FILE  idle until FILE exists (a test creates it once it has seen what it waits for)
--queue       idle waiting on an empty queue.Queue (get with a timeout, as a server's loop does),
              rather than in time.sleep
--more M      after the idle, serve M more requests (the step clock steps again)
"""

import argparse
import os
import queue
import time

import torch

torch.manual_seed(0)
WEIGHT = torch.randn(64, 64)


def handle(batch: torch.Tensor) -> torch.Tensor:
    return torch.tanh(batch @ WEIGHT).sum(dim=0)


def idle(args: argparse.Namespace) -> None:
    requests: queue.Queue = queue.Queue()
    deadline = time.monotonic() + (args.idle if args.idle is not None else 300)
    while time.monotonic() < deadline and not (args.until and os.path.exists(args.until)):
        if args.queue:
            try:
                requests.get(timeout=0.05)
            except queue.Empty:
                pass
        else:
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2)
    parser.add_argument("--idle", type=float, default=None)
    parser.add_argument("--until", default=None)
    parser.add_argument("--queue", action="store_true")
    parser.add_argument("--more", type=int, default=0)
    args = parser.parse_args()
    for served in range(args.requests):
        handle(torch.full((8, 64), float(served)))
    print(f"served {args.requests}, idling", flush=True)
    idle(args)
    for served in range(args.more):
        handle(torch.full((8, 64), float(served)))
    print(f"served {args.requests + args.more} in all", flush=True)


if __name__ == "__main__":
    main()
