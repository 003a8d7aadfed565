"""A tiny greedy-decoding engine, importable so that its step can be named: ``infer_lib:Engine.step``.

``Engine.step`` runs the model once and appends one token to every sequence of the batch, the
way an inference engine's ``execute_model`` does; it is the function to give ``--target``.
"""

import torch


class Engine:
    """A small GRU language model that decodes a batch greedily, one token per step."""

    def __init__(self, vocab: int = 96, hidden: int = 128, batch: int = 8, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.cell = torch.nn.GRUCell(hidden, hidden)
        self.head = torch.nn.Linear(hidden, vocab)
        self.state = torch.zeros(batch, hidden)
        self.tokens = torch.randint(0, vocab, (batch, 1))

    @torch.no_grad()
    def step(self) -> torch.Tensor:
        """Run the model once: one new token for each sequence."""
        self.state = self.cell(self.embed(self.tokens[:, -1]), self.state)
        token = self.head(self.state).argmax(dim=-1, keepdim=True)
        self.tokens = torch.cat([self.tokens, token], dim=1)
        return token
