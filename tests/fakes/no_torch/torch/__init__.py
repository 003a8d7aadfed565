"""A fake ``torch`` that fails to import as an absent one does, for "torch not installed at all"."""

raise ModuleNotFoundError("No module named 'torch'", name="torch")
