"""The calls the tool counts, as the job sees them: a declared step function (``--target
__main__:train_step``), a GradScaler's step (the job's own subclass and torch's) and an
optimizer's step (a subclass's, under torch's wrapper, whose place the clock's takes), each
warning to its caller (``stacklevel=2``), failing once, and looking at its own stack. The job prints the
warnings' locations (the default filter: once per location), the tracebacks and the stack it
sees; bare and profiled, stdout and stderr must be the same, line for line."""

import traceback
import warnings

import torch


def show(message, category, filename, lineno, file=None, line=None):
    print(f"warning at {filename}:{lineno}: {category.__name__}: {message}", flush=True)


class SGD(torch.optim.SGD):
    fail = False

    def step(self, closure=None):
        """A job's own optimizer step: warns to its caller (torch's wrapper), looks at its stack, fails when told."""
        warnings.warn("the optimizer steps", UserWarning, stacklevel=2)
        print("optimizer's caller:", traceback.format_stack(limit=2)[0].strip().splitlines()[0], flush=True)
        if self.fail:
            raise ValueError("the optimizer fails")
        return super().step(closure)


class Scaler(torch.amp.GradScaler):
    def step(self, optimizer, *args, **kwargs):
        """A job's own scaler step: warns to its caller and looks at its stack."""
        warnings.warn("the scaler steps", UserWarning, stacklevel=2)
        print("scaler's caller:", traceback.format_stack(limit=2)[0].strip().splitlines()[0], flush=True)
        return super().step(optimizer, *args, **kwargs)


def train_step(model, optimizer, scaler, i):
    """One step of the job: it warns to its caller, fails at step 3, and prints who called it."""
    warnings.warn("a step begins", UserWarning, stacklevel=2)
    print("step's caller:", traceback.format_stack(limit=2)[0].strip().splitlines()[0], flush=True)
    if i == 3:
        raise ValueError("step 3 fails")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(torch.randn(8, 4)).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    return loss.item()


def main() -> None:
    warnings.showwarning = show
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 4)
    optimizer = SGD(model.parameters(), lr=0.1)
    scaler = Scaler("cpu")
    for i in range(6):
        try:
            train_step(model, optimizer, scaler, i)
        except ValueError:
            traceback.print_exc()
    optimizer.fail = True
    try:  # a failed optimizer step: the traceback goes through torch's wrapper of it
        optimizer.step()
    except ValueError:
        traceback.print_exc()
    optimizer.fail = False
    try:  # torch's own GradScaler.step refuses a closure: the traceback goes through it
        torch.amp.GradScaler("cpu").step(optimizer, closure=lambda: 0.0)
    except RuntimeError:
        traceback.print_exc()
    print(f"weight sum {model.weight.sum().item():.6f}", flush=True)


if __name__ == "__main__":
    main()
