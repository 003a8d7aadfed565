"""What an Ascend training script does first, import torch_npu, then the usual CPU training loop.

With the recording stand-in on PYTHONPATH this is a job that "uses an NPU" as far as
``--backend auto`` can tell; its results are those of train_loop.py.
"""

import os
import runpy
import sys

import torch_npu  # noqa: F401 - the import is the point

if __name__ == "__main__":
    sys.argv[0] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_loop.py")
    runpy.run_path(sys.argv[0], run_name="__main__")
