"""An optimizer state the job loads, from a checkpoint of its own: one that does not fit (torch
raises inside load_state_dict, and the job prints the traceback) and one that does (its Adam step
count numbers the resumed steps). Bare and profiled, stderr must be the same, frame for frame."""

import traceback

import torch


def main() -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for parameter in model.parameters():  # a checkpoint's state after 5 steps, made without stepping here
        optimizer.state[parameter] = {
            "step": torch.tensor(5.0),
            "exp_avg": torch.zeros_like(parameter),
            "exp_avg_sq": torch.zeros_like(parameter),
        }
    saved = optimizer.state_dict()
    wrong = {"state": {}, "param_groups": [dict(saved["param_groups"][0], params=[0])]}
    try:
        torch.optim.Adam(model.parameters(), lr=0.01).load_state_dict(wrong)
    except ValueError:
        traceback.print_exc()
    resumed = torch.optim.Adam(model.parameters(), lr=0.01)
    resumed.load_state_dict(saved)
    for _ in range(4):
        model(torch.randn(2, 4)).sum().backward()
        resumed.step()
        resumed.zero_grad()
    print(f"weight sum {model.weight.sum().item():.6f}", flush=True)


if __name__ == "__main__":
    main()
