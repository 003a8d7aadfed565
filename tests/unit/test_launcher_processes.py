"""A launcher that starts a job's workers (torchrun's agent, ``accelerate launch``, ``deepspeed``)
imports torch but is never meant to step: the process log names it (processlog.launcher_name), so
the report counts it apart and never tells it as a process that "imported torch but never stepped"."""

from __future__ import annotations

import pytest

from npuprof_launch.common import processlog


@pytest.mark.parametrize(
    "argv, main_module, expected",
    [
        (["/venv/bin/torchrun", "--standalone", "--nproc_per_node"], None, "torchrun"),
        (["/usr/lib/python3/site-packages/torch/distributed/run.py", "--nnodes"], "torch.distributed.run", "torchrun"),
        (["-m", "--nproc_per_node"], "torch.distributed.launch", "torch.distributed.launch"),
        (["/venv/bin/accelerate", "launch", "train.py"], None, "accelerate launch"),
        (["/venv/bin/deepspeed", "train.py"], None, "deepspeed"),
        (["train.py", "--steps"], None, None),
        (["/venv/bin/torchrun_helper.py"], None, None),
        ([], None, None),
    ],
)
def test_a_launcher_is_known_by_its_command_or_its_module(argv, main_module, expected):
    assert processlog.launcher_name(argv, main_module) == expected
