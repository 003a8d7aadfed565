"""A training loop that runs a torch.profiler of its own, as a user or a framework may do.

--start N     the job starts its profiler just before iteration N (1-based) ...
--stop N      ... and stops it after iteration N
--warmup N    the job's profiler schedule: N warmup steps (kineto prepared, not recording) then
              recording until --stop
Prints a loss, an exact weight checksum and how many events the job's own profiler exported.
"""

import argparse
import hashlib
import os
import tempfile

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--start", type=int, default=1)
    parser.add_argument("--stop", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, 32)
    y = x.sum(dim=1, keepdim=True)
    schedule = torch.profiler.schedule(
        wait=0, warmup=args.warmup, active=args.stop - args.start + 1 - args.warmup, repeat=1
    )
    own = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule)
    for step in range(1, args.steps + 1):
        if step == args.start:
            own.start()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if args.start <= step <= args.stop:
            own.step()
        if step == args.stop:
            own.stop()
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "own.json")
        own.export_chrome_trace(path)
        exported = os.path.getsize(path) > 0
    digest = hashlib.sha256()
    for tensor in model.state_dict().values():
        digest.update(repr(tensor.tolist()).encode())
    print(f"loss {loss.item()!r}")
    print(f"checksum {digest.hexdigest()}")
    print(f"own profiler exported {exported}, {len(own.events())} events")


if __name__ == "__main__":
    main()
