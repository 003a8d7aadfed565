"""A training step compiled whole, optimizer.step included: dynamo traces the step hooks.

Prints the loss of each step (exact, so any difference from a bare run shows) and how many
graphs dynamo compiled: a hook that dynamo traced as Python state would add recompiles.
"""

import sys

import torch
import torch._dynamo.utils

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
x = torch.randn(16, 8)


@torch.compile(backend=sys.argv[1] if len(sys.argv) > 1 else "eager")
def train_step():
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


for _ in range(12):
    print(f"loss {train_step().item():.10f}")
print(f"unique graphs {torch._dynamo.utils.counters['stats']['unique_graphs']}")
