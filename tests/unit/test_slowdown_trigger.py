"""--on-slowdown's live trigger and the end's answer judge a process's slowdown alike
(slowdowns.judged): no window is asked for a slowdown its own wait for a CPU explains, which the
answer would then reject (a healthy rank at 1.23x beside a busy machine got one of three windows)."""

from __future__ import annotations

import os

from npuprof_launch.common import names, record, steptimes
from npuprof_launch.launcher import onslowdown, slowdowns

STEPS, FROM, BEFORE_S, AFTER_S = 120, 40, 0.020, 0.040


def running_process(out: str, cpu_wait: dict | None) -> None:
    """A running process's record and step times: 20 ms steps, 40 ms from step FROM on."""
    path = names.status_path(out, "node_pid7", 1)
    times = [BEFORE_S if step < FROM else AFTER_S for step in range(2, STEPS + 1)]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    steptimes.append(names.step_times_path(path), times)
    made = dict(record.DEFAULTS, run_id="run1", pid=7, steps=STEPS, mean_step_s=0.03, cpu_wait=cpu_wait)
    made["step_times"] = os.path.relpath(names.step_times_path(path), out)
    record.write(path, made)


def trigger(out: str) -> onslowdown.Trigger:
    return onslowdown.Trigger(out, "run1", times=1, active=2, warmup=1, say=lambda line: None)


def test_a_slowdown_of_the_job_s_own_asks_for_a_window(tmp_path):
    running_process(str(tmp_path), cpu_wait=None)
    asked = trigger(str(tmp_path)).look()
    assert asked is not None and slowdowns.judged(*_read(str(tmp_path)))["step"] == FROM


def test_a_slowdown_its_own_cpu_wait_explains_asks_for_none(tmp_path):
    blocks = [[first, first + 9, 10 * (AFTER_S - BEFORE_S)] for first in range(FROM, STEPS + 1, 10)]
    running_process(str(tmp_path), cpu_wait={"blocks": blocks, "covered": [[2, STEPS]], "at_most_s": 0.0})
    assert trigger(str(tmp_path)).look() is None
    assert "cpu_wait_s" in slowdowns.judged(*_read(str(tmp_path)))  # the end's answer: undecidable, no finding


def _read(out: str):
    (found,) = record.read_dir(out)
    return steptimes.read(os.path.join(out, found["step_times"] or "")), found["windows"], found["cpu_wait"]
