"""A job with global optimizer-step hooks of its own, registered after the tool's.

torch calls the global post hooks by iterating over their dict; the tool's clock changes its own
hooks from inside that iteration (lean mode, a process that does not profile), so this job
checks that its own hooks still run exactly once per step. Prints how often each ran.
"""

import argparse

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=10)
args = parser.parse_args()

calls = {"pre": 0, "post": 0}
register_optimizer_step_pre_hook(lambda optimizer, a, k: calls.__setitem__("pre", calls["pre"] + 1))
register_optimizer_step_post_hook(lambda optimizer, a, k: calls.__setitem__("post", calls["post"] + 1))

torch.manual_seed(0)
model = torch.nn.Linear(16, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 16)
for _ in range(args.steps):
    model(x).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad()
print(f"own hooks: pre {calls['pre']} post {calls['post']}")
print(f"weight sum {model.weight.sum().item():.10f}")
