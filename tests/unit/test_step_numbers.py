"""ProfilerStep#N numbered by the job, and a cut window's unfinished step left out, in-process:
the backends' counters on stand-in profile objects, and the trace filter on a small file. The real
profilers are driven end to end in test_end_to_end.py, test_endings.py and test_npu_backend.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

from npuprof_launch.inprocess.backends import npu
from npuprof_launch.inprocess.backends import torch as torch_backend


def schedule(step: int) -> str:
    """A window of 1 warm-up step and 2 recorded ones, asked as torch asks its schedule."""
    assert step >= 0
    return ("warmup", "record", "save")[step] if step < 3 else "none"


def test_the_torch_counter_starts_at_the_window_and_the_schedule_still_sees_0_1_2():
    numbered = torch_backend.JobSteps(schedule)
    prof = SimpleNamespace(step_num=0, step_rec_fn=None)
    assert numbered(0) == "warmup", "the constructor asks for step 0 before the counter is set"
    assert numbered.count_from(prof, 7) == 7 and prof.step_num == 7
    assert [numbered(step) for step in (8, 9, 10)] == ["record", "save", "none"]


def test_a_torch_without_a_counter_to_set_keeps_its_own_numbering():
    numbered = torch_backend.JobSteps(schedule)
    assert numbered.count_from(SimpleNamespace(), 7) == 0
    assert numbered.count_from(SimpleNamespace(step_num=0, step_rec_fn=object()), 7) == 0, "already started"
    assert [numbered(step) for step in (1, 2, 3)] == ["record", "save", "none"]


def test_torch_2_1s_step_naming_by_the_count_before_is_seen():
    class Old:
        def step(self):
            cur_step = self.step_num
            self.step_num += 1
            return cur_step

    class New:
        def step(self):
            self.step_num += 1

    assert not torch_backend.names_by_count(Old) and torch_backend.names_by_count(New)


def test_torch_npu_gets_the_offset_where_the_release_has_one():
    prof = SimpleNamespace(_step_num_offset=0, step_rec_fn=None, step_num=0)
    assert npu.count_from(prof, 5) == 5 and prof._step_num_offset == 5 and prof.step_num == 0
    assert npu.count_from(SimpleNamespace(step_rec_fn=None, step_num=0), 5) == 0, "2.1.0.post8 to 2.5.1"


def test_the_unfinished_steps_ranges_leave_the_trace_and_the_work_under_them_stays(tmp_path):
    path = tmp_path / "w.pt.trace.json"
    events = [
        {"ph": "X", "name": "ProfilerStep#6", "ts": 0, "dur": 10},
        {"ph": "X", "name": "ProfilerStep#7", "ts": 10, "dur": 30},
        {"ph": "X", "name": "ProfilerStep#7", "cat": "gpu_user_annotation", "ts": 12, "dur": 5},
        {"ph": "X", "name": "iteration#7", "ts": 11, "dur": 29},
        {"ph": "X", "name": "aten::add", "ts": 15, "dur": 2},
    ]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    torch_backend.drop_events(str(path), ("ProfilerStep#7", "iteration#7"))
    kept = json.loads(path.read_text())
    assert [e["name"] for e in kept["traceEvents"]] == ["ProfilerStep#6", "aten::add"]
    assert kept["schemaVersion"] == 1
