"""The step function is called right after its def, with no other call in between, so the hook
meets the first call already running. It recurses, and must still count one step per call."""

import torch


def generate_step(n):
    return generate_step(n - 1) + 1 if n else torch.ones(3).sum().item()


generate_step(3)
print(generate_step(3))
