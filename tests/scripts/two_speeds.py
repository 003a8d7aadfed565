"""Start two training processes as ranks 0 and 1 of a job, rank 1 sleeping longer in each step.

Used to check that the report flags the slowest rank: 16 steps, so that the two ranks share the 11
steps past warm-up and the window that a finding about two ranks needs (findings.py). The driver
itself never imports torch.
"""

import os
import subprocess
import sys

train = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_loop.py")
children = [
    subprocess.Popen([sys.executable, train, "--steps", "16", "--sleep", sleep], env={**os.environ, "RANK": str(rank)})
    for rank, sleep in ((0, "0.0"), (1, "0.2"))
]
sys.exit(max(child.wait() for child in children))
