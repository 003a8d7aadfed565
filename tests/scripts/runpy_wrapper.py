"""A launcher of the kind some frameworks use: it imports torch itself, then runs the real script
in this process with runpy.run_path as __main__ (the script's arguments follow its path)."""

import runpy
import sys

import torch  # noqa: F401  (imported before the script runs, as such wrappers do)

script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
