"""msprof-analyze's own choice of sessions, run from its release wheels (the hand-off's contract).

msprof-analyze's cluster analysis finds the ``*ascend_pt`` directories under ``-d`` and keeps one
session a rank; how it keeps one changed between releases (8.1.0: the oldest, 8.2.0 and later: the
newest). The tests run its own code for that, ``PytorchDataPreprocessor`` of
``cluster_analyse/cluster_data_preprocess/``, from each release's wheel, fetched once from PyPI
with ``pip download --no-deps`` into a cache beside torch_npu's (npu_wheels.cache_dir) and imported
in a child process (two releases cannot share one interpreter). Only the walk for the directories
is written here: its module, ``cluster_analysis.py``, imports pandas, which the suite does not
install; it is six lines there (``allocate_prof_data``: PathManager.limited_depth_walk, ten levels,
every directory name ending in ``ascend_pt``), repeated below as they are. Its ``file_manager``
imports PyYAML, which the code run here never calls: where it is not installed, an empty module
stands in for it.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import subprocess
import sys
import zipfile

from npu_wheels import cache_dir

#: The last release that keeps each rank's oldest session, and the newest on PyPI on 2026-12-05.
VERSIONS = ("8.1.0", "26.2.0")

CHILD = r"""
import json, os, sys, types
try:
    import yaml  # msprof-analyze's file_manager imports it; the code run here never calls it
except ImportError:
    sys.modules["yaml"] = types.ModuleType("yaml")
from msprof_analyze.cluster_analyse.cluster_data_preprocess.pytorch_data_preprocessor import PytorchDataPreprocessor

root = sys.argv[1]
found = []
base_depth = root.count(os.sep)
for folder, dirs, _ in os.walk(root):  # PathManager.limited_depth_walk(path, max_depth=10)
    if folder.count(os.sep) - base_depth > 10:
        dirs.clear()
        continue
    for name in dirs:  # ClusterAnalysis.allocate_prof_data
        if name.endswith("ascend_pt"):
            found.append(os.path.join(folder, name))
processor = PytorchDataPreprocessor(found)
data_map = processor.get_data_map()
print(json.dumps({"found": len(found), "data_map": {str(k): v for k, v in data_map.items()},
                  "data_type": processor.get_data_type()}))
"""


def extracted(version: str) -> str:
    """The wheel of ``version``, unpacked once; raises RuntimeError if it cannot be had."""
    folder = os.path.join(os.path.dirname(cache_dir()), "msprof_analyze")
    target = os.path.join(folder, version)
    if os.path.isdir(os.path.join(target, "msprof_analyze")):
        return target
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f".{version}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel workers: one downloads, the others wait
        if os.path.isdir(os.path.join(target, "msprof_analyze")):
            return target
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", folder]
        result = subprocess.run([*command, f"msprof-analyze=={version}"], capture_output=True, text=True, timeout=600)
        wheels = glob.glob(os.path.join(folder, f"msprof_analyze-{version}-*.whl"))
        if result.returncode != 0 or not wheels:
            raise RuntimeError(f"pip download msprof-analyze=={version} failed: {result.stderr.strip()[-300:]}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            wheel.extractall(target + ".tmp")
        os.replace(target + ".tmp", target)
    return target


def discover(version: str, directory: str) -> dict:
    """What msprof-analyze ``version`` takes from ``directory``: ``{"found", "data_map" {rank: path},
    "data_type"}``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("NPU_PROF_")}
    env["PYTHONPATH"] = extracted(version)
    result = subprocess.run(
        [sys.executable, "-c", CHILD, directory], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])
