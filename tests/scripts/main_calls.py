"""Step functions in ``__main__`` called in ways that load their name before any event lets the hook
wrap them, and two stages in ``__main__``. Prints one line per call count, so the job's own count
can be compared with the tool's.

--mode args    ``train_step(k, *make_batch())``: the name is loaded, then make_batch is called
--mode stages  ``update(rollout(3))``: two stages, both defined in the script
"""

import argparse

import torch

torch.manual_seed(0)
policy = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
calls = {"train_step": 0, "rollout": 0, "update": 0}


def make_batch():
    return (torch.randn(2, 4),)


def train_step(k, x):
    calls["train_step"] += 1
    policy(x).sum().backward()
    optimizer.step()
    optimizer.zero_grad()


def rollout(n):
    calls["rollout"] += 1
    with torch.no_grad():
        return [policy(torch.randn(2, 4)) for _ in range(n)]


def update(samples):
    calls["update"] += 1
    (policy(torch.randn(2, 4)).sum() + sum(s.sum() for s in samples) * 0).backward()
    optimizer.step()
    optimizer.zero_grad()


parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["args", "stages"], default="args")
parser.add_argument("--calls", type=int, default=4)
args = parser.parse_args()
for k in range(args.calls):
    if args.mode == "args":
        train_step(k, *make_batch())
    else:
        update(rollout(3))
print(" ".join(f"{name}={count}" for name, count in calls.items() if count))
