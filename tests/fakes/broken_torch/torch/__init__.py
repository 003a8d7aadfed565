"""A fake ``torch`` for the fault tests: it imports, but has no optimizer-step hooks to register.

It stands for an old or broken torch on which our post-import hook fails; the job itself only
prints a line, so the test can check that the job ran on unchanged.
"""

from torch import optim  # noqa: F401
