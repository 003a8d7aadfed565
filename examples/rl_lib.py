"""The two stages of a small RL-style loop, importable so that each can be named with ``--stage``.

``Actor.generate`` is the rollout stage (sample actions with the current policy, no gradients);
``Learner.update`` is the training stage (one policy-gradient step). Sampling uses a generator
seeded per iteration, so a run is reproducible to the last bit, in one process or in two.
"""

import torch

OBSERVATIONS, ACTIONS, BATCH = 16, 4, 256


def make_policy() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(OBSERVATIONS, 64), torch.nn.Tanh(), torch.nn.Linear(64, ACTIONS))


class Actor:
    """Rolls out the policy on a batch of random observations."""

    def __init__(self, policy: torch.nn.Module) -> None:
        self.policy = policy

    @torch.no_grad()
    def generate(self, iteration: int) -> dict:
        generator = torch.Generator().manual_seed(1000 + iteration)
        observations = torch.randn(BATCH, OBSERVATIONS, generator=generator)
        probabilities = torch.softmax(self.policy(observations), dim=-1)
        actions = torch.multinomial(probabilities, 1, generator=generator).squeeze(1)
        # The reward: 1 when the action matches the sign pattern of the first observations.
        rewards = (actions == (observations[:, :ACTIONS] > 0).sum(dim=1) % ACTIONS).float()
        return {"observations": observations, "actions": actions, "rewards": rewards}


class Learner:
    """One REINFORCE step per call."""

    def __init__(self, policy: torch.nn.Module) -> None:
        self.policy = policy
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)

    def update(self, batch: dict) -> float:
        logits = self.policy(batch["observations"])
        chosen = torch.log_softmax(logits, dim=-1).gather(1, batch["actions"].unsqueeze(1)).squeeze(1)
        advantages = batch["rewards"] - batch["rewards"].mean()
        loss = -(chosen * advantages).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()
