"""The step times of a session (steptiming.py): the arithmetic on the clock's readings, the file
of durations, and the checkpoint spacing a session takes from the measured step time."""

from __future__ import annotations

import contextlib
import types

import pytest

from npuprof_launch.common import options, steptimes
from npuprof_launch.inprocess import session as session_module
from npuprof_launch.inprocess import sessionrecord, steptiming
from npuprof_launch.inprocess.steptiming import StepTimesFile


def test_a_span_of_seconds_is_at_least_one_step_and_one_while_the_step_time_is_unknown():
    assert steptiming.steps_in(5.0, None) == 1
    assert steptiming.steps_in(5.0, 0.0) == 1
    assert steptiming.steps_in(5.0, -1.0) == 1
    assert steptiming.steps_in(5.0, 0.03) == 166
    assert steptiming.steps_in(5.0, 60.0) == 1


def test_the_recent_step_time_reads_only_the_latest_readings():
    assert steptiming.recent_step_s([]) is None
    assert steptiming.recent_step_s([1.0]) is None
    assert steptiming.recent_step_s([1.0, 1.5]) == pytest.approx(0.5)
    slow_then_fast = [10.0 * i for i in range(10)] + [90.0 + 0.25 * i for i in range(1, 64)]
    assert steptiming.recent_step_s(slow_then_fast) == pytest.approx(0.25), "the last 64 readings only"


def test_the_mean_step_time_runs_from_the_end_of_the_first_step():
    assert steptiming.mean_step_s(None, [3.0], 5) is None
    assert steptiming.mean_step_s(1.0, [], 5) is None
    assert steptiming.mean_step_s(1.0, [1.0], 1) is None, "one step has no duration"
    assert steptiming.mean_step_s(1.0, [1.0], 3) is None, "no time has passed"
    assert steptiming.mean_step_s(1.0, [7.0], 4) == pytest.approx(2.0)


def test_durations_are_appended_and_the_last_reading_stays_for_the_next_step(tmp_path):
    path = str(tmp_path / "npuprof_status" / "rank0.1.steps")
    errors: list[str] = []
    made = StepTimesFile(path, errors.append)
    assert made.relative_to(str(tmp_path)) is None
    times = [1.0, 1.5, 2.5]
    made.write(times, enabled=True)
    assert times == [2.5], "the same list, emptied but for its last reading"
    times += [2.75, 3.0]
    made.write(times, enabled=True)
    assert list(steptimes.read(path)) == pytest.approx([0.5, 1.0, 0.25, 0.25])
    assert made.written == 4 and times == [3.0] and not errors
    assert made.relative_to(str(tmp_path)) == "npuprof_status/rank0.1.steps"
    made.write(times, enabled=True)
    assert made.written == 4, "one reading is no duration"


def test_with_step_times_off_the_readings_are_dropped_and_no_file_is_named(tmp_path):
    path = str(tmp_path / "rank0.1.steps")
    made = StepTimesFile(path, lambda message: None)
    times = [1.0, 2.0, 3.0]
    made.write(times, enabled=False)
    assert times == [3.0] and made.written == 0 and not (tmp_path / "rank0.1.steps").exists()
    assert made.relative_to(str(tmp_path)) is None


def test_a_file_that_cannot_be_written_is_one_error_and_the_readings_go(tmp_path):
    (tmp_path / "blocker").write_text("a file, not a folder")
    path = str(tmp_path / "blocker" / "rank0.1.steps")
    errors: list[str] = []
    made = StepTimesFile(path, errors.append)
    times = [1.0, 2.0]
    made.write(times, enabled=True)
    assert times == [2.0] and made.written == 0
    assert len(errors) == 1 and errors[0].startswith(f"could not write the step times {path}: ")


def test_the_end_sums_up_the_file_and_leaves_the_window_out(tmp_path):
    path = str(tmp_path / "rank0.1.steps")
    made = StepTimesFile(path, lambda message: None)
    # Steps 2..21 take 0.1 s, but step 12 takes 5 s: it is the job's unless a window covers it.
    times = [0.0]
    for step in range(2, 22):
        times.append(times[-1] + (5.0 if step == 12 else 0.1))
    made.write(times, enabled=True)
    stats = made.stats([], 21, 0)
    assert stats["count"] == 20 and stats["median_s"] == pytest.approx(0.1)
    assert stats["max_step"] == 12 and [spike["step"] for spike in stats["spikes"]] == [12]
    windowed = made.stats([{"first_step": 12, "last_step": 12, "traces": []}], 21, 0)
    assert windowed["spikes"] == [] and windowed["count"] < 20, "the window's own steps are the tool's"


def test_stats_that_cannot_be_had_are_none(tmp_path):
    made = StepTimesFile(str(tmp_path / "rank0.1.steps"), lambda message: None)
    assert made.stats([], 0, 0) is None, "an empty file"
    made.written = 1
    assert made.stats([{"no first_step": True}], 3, 0) is None, "a malformed window: the report computes them"


class Points:
    """Safe everywhere; nothing is ever due in these sessions."""

    def run(self, action, *, inside_range):
        action()

    def pending(self) -> bool:
        return False

    def allowed_now(self) -> bool:
        return True

    def watch(self, on: bool) -> None:
        pass

    def quiet(self):
        return contextlib.nullcontext()


def test_a_session_spaces_its_checkpoints_by_the_measured_step_time(tmp_path, monkeypatch):
    """Steps 1, 2, 4, 8, ... at first, then every CHECKPOINT_S of steps at the measured step
    time; each checkpoint writes the durations since the last one, in order."""
    clock = types.SimpleNamespace(now=100.0)
    fake_time = types.SimpleNamespace(perf_counter=lambda: clock.now, time_ns=lambda: 1)
    monkeypatch.setattr(session_module, "time", fake_time)
    config, problems = options.resolve({"skip-first": "100000"}, {})
    assert not problems
    made = session_module.Session(
        config=config,
        output_dir=str(tmp_path),
        rank=0,
        rank_source=None,
        environ={},
        lifecycle=None,
        points=Points(),
        say=lambda message: None,
        backend=None,
    )
    made.clock_name = "optimizer.step"
    checkpoints = []
    for _ in range(600):
        clock.now += 0.03
        before = made._checkpoint_at
        made.step_ended(inside_range=True)
        if made._checkpoint_at != before:
            checkpoints.append(made.steps)
    # 5 s at 0.03 s a step is 166 steps: doubling until the step count passes that, then every 166.
    assert checkpoints == [1, 2, 4, 8, 16, 32, 64, 128, 256, 422, 588], checkpoints
    written = list(steptimes.read(made.step_times_file.path))
    assert written == pytest.approx([0.03] * 587), "steps 2 to 588, each written once"
    assert len(made.times) == 13, "the reading at step 588 and the 12 steps since"
    assert sessionrecord.to_record(made)["mean_step_s"] == pytest.approx(0.03)
