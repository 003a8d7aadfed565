"""A training step compiled whole, optimizer.step included: dynamo traces the step hooks.

Prints the loss of each step (exact, so any difference from a bare run shows) and what dynamo
did: how many graphs and frames it compiled, and each graph break's reason with its count. The
job must compile the same under the tool: a step wrapper or hook that dynamo traced differently
would add a graph break, a frame or a recompile, or take one away. ``--scaler``: the step
under a GradScaler (torch.amp on the CPU), whose ``step`` the tool counts in place.
"""

import sys

import torch
import torch._dynamo.utils

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
x = torch.randn(16, 8)
scaler = torch.amp.GradScaler("cpu") if "--scaler" in sys.argv else None
backend = next((arg for arg in sys.argv[1:] if not arg.startswith("--")), "eager")


@torch.compile(backend=backend)
def train_step():
    loss = model(x).pow(2).mean()
    if scaler is None:
        loss.backward()
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    optimizer.zero_grad()
    return loss


for _ in range(12):
    print(f"loss {train_step().item():.10f}")
counters = torch._dynamo.utils.counters
print(f"unique graphs {counters['stats']['unique_graphs']}, calls captured {counters['stats']['calls_captured']}")
print(f"frames {dict(counters['frames'])}")
for reason, count in sorted(counters["graph_break"].items()):
    print(f"graph break x{count}: {' '.join(line.strip() for line in reason.splitlines()[:2])}")
