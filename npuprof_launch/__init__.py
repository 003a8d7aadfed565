"""npuprof-launch: profile a PyTorch job without touching its code.

Kept empty on purpose: the hook imports this package in every Python process of a job.
"""

__version__ = "0.1.0"
