"""Fake ``torch.optim`` without ``torch.optim.optimizer`` (see the package docstring)."""
