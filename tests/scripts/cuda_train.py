"""A training loop on CUDA for tests/test_cuda.py: prints each step's loss and a weight checksum.

--compile compiles the whole step, optimizer.step included, with inductor (Triton kernels), so
dynamo meets the step clock's hooks. Deterministic algorithms are asked for, so that a run
under the tool and a bare run can be compared to the last bit.
"""

import argparse
import hashlib
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402 - cuBLAS reads its workspace setting when torch loads it

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--compile", action="store_true")
args = parser.parse_args()

torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(1024, 256, device="cuda")
y = x.sum(dim=1, keepdim=True)


def train_step():
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


step = torch.compile(train_step) if args.compile else train_step
for _ in range(args.steps):
    print(f"loss {step().item():.10f}")
digest = hashlib.sha256()
for tensor in model.state_dict().values():
    digest.update(repr(tensor.tolist()).encode())
print(f"checksum {digest.hexdigest()}")
if args.compile:
    import torch._dynamo.utils

    print(f"unique graphs {torch._dynamo.utils.counters['stats']['unique_graphs']}")
