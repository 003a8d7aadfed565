"""A training job that ends without the interpreter's exit handlers, for the status-record tests.

--how plain           an ordinary end
--how os_exit         os._exit(0) after the loop, after the window
--how os_exit_inside  os._exit(0) right after iteration --at, inside the window
--how exec            after iteration 1 the process replaces itself (os.execv) with this script
                      running the remaining iterations: a new image under the same pid
--how exec_again     after iteration --at the process re-executes itself once with its own
                      arguments (an environment marker says it did) and trains from the start
--how fork_trainer    the training runs in a multiprocessing child started with fork (such a
                      child leaves through os._exit); the parent imports torch and never steps
Prints the loss after the last iteration and an exact checksum of the weights.
"""

import argparse
import hashlib
import multiprocessing
import os
import sys

import torch


def train(first: int, last: int, how: str, at: int) -> None:
    torch.manual_seed(first)
    model = torch.nn.Linear(16, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 16)
    y = x.sum(dim=1, keepdim=True)
    loss = None
    for iteration in range(first, last + 1):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if how == "os_exit_inside" and iteration == at:
            print(f"leaving at {iteration}", flush=True)
            os._exit(0)
        if how == "exec_again" and iteration == at and not os.environ.get("ENDINGS_EXECED"):
            sys.stdout.flush()
            os.environ["ENDINGS_EXECED"] = "1"
            os.execv(sys.executable, [sys.executable, *sys.argv])
        if how == "exec" and iteration == 1:
            sys.stdout.flush()
            os.execv(sys.executable, [sys.executable, __file__, "--how", "plain", "--first", "2", "--steps", str(last)])
    digest = hashlib.sha256(repr([t.tolist() for t in model.state_dict().values()]).encode()).hexdigest()
    print(f"loss {loss.item():.10f} checksum {digest}", flush=True)
    if how == "os_exit":
        os._exit(0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--how", default="plain")
    parser.add_argument("--first", type=int, default=1)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--at", type=int, default=4)
    args = parser.parse_args()
    if args.how == "fork_trainer":
        child = multiprocessing.get_context("fork").Process(target=train, args=(1, args.steps, "plain", 0))
        child.start()
        child.join()
        print(f"child exit {child.exitcode}")
        return
    train(args.first, args.steps, args.how, args.at)


if __name__ == "__main__":
    main()
