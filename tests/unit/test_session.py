"""The session's state machine, driven in-process: a recording profiler, points that are always safe
(or that make the action wait), no torch. What the subprocess tests check end to end, in microseconds."""

from __future__ import annotations

import contextlib

import pytest

from npuprof_launch.common import names, options, record, stepmark
from npuprof_launch.inprocess import cpuwait, process
from npuprof_launch.inprocess.session import Session


class Recorder:
    """Stands in for torch.profiler.profile built with schedule(warmup=W, active=A, repeat=1): it
    saves through on_trace_ready at its (W + A)-th step, or at stop() if it never got there."""

    def __init__(self, calls: list, window, on_trace_ready) -> None:
        self.calls, self.window, self.on_trace_ready = calls, window, on_trace_ready
        self.stepped = 0
        self.saved = False

    def start(self) -> None:
        self.calls.append(("start", self.window.first))

    def step(self) -> None:
        self.stepped += 1
        self.calls.append(("step", self.stepped))
        if self.stepped == self.window.warmup + self.window.active:
            self.saved = True
            self.on_trace_ready(self)

    def stop(self) -> None:
        self.calls.append(("stop", self.stepped))
        if not self.saved:
            self.on_trace_ready(self)


class Backend:
    """Numbers each window's steps from its first, as torch's and torch_npu's (2.6+) do for us."""

    name = "recording"

    def __init__(self) -> None:
        self.calls: list = []
        self.exports = 0
        self.steps_from = 0

    def build(self, *, config, window, on_trace_ready, output_dir, worker):
        self.calls.append(("build", window.first, window.warmup, window.active))
        self.steps_from = window.first
        return Recorder(self.calls, window, on_trace_ready)

    def stop(self, prof, *, unfinished=()):
        if unfinished:
            self.calls.append(("unfinished", *unfinished))
        prof.stop()

    def export(self, prof, output_dir, worker):
        self.exports += 1
        return [f"{output_dir}/window{self.exports}.pt.trace.json"]


class Points:
    """Safe everywhere, unless ``defer``: then actions wait until ``release()``."""

    def __init__(self, defer: bool = False) -> None:
        self.defer = defer
        self.waiting = None

    def run(self, action, *, inside_range):
        if self.defer:
            self.waiting = action
            return False
        action()
        return True

    def release(self) -> None:
        action, self.waiting = self.waiting, None
        if action is not None:
            action()

    def pending(self) -> bool:
        return self.waiting is not None

    def run_pending_now(self) -> None:
        self.release()

    def allowed_now(self) -> bool:
        return True

    def watch(self, on: bool) -> None:
        pass

    def quiet(self):
        return contextlib.nullcontext()

    def open_label(self, name: str):
        return name

    def close_label(self, label) -> None:
        pass


class Lifecycle:
    def __init__(self) -> None:
        self.slot = process.Slot()

    def window_opened(self) -> None:
        pass

    def window_closed(self) -> None:
        pass


def session(tmp_path, points=None, **values) -> tuple[Session, Backend]:
    config, problems = options.resolve({"gzip": "0", **{name: str(value) for name, value in values.items()}}, {})
    assert not problems
    backend = Backend()
    made = Session(
        config=config,
        output_dir=str(tmp_path),
        rank=0,
        rank_source="RANK",
        environ={},
        lifecycle=Lifecycle(),
        points=points or Points(),
        say=lambda message: None,
        backend=backend,
    )
    made.clock_name = "optimizer.step"
    return made, backend


def steps(made: Session, count: int) -> None:
    for _ in range(count):
        made.step_ended(inside_range=True)


def test_a_window_starts_before_its_first_step_and_saves_after_its_last(tmp_path):
    made, backend = session(tmp_path, **{"skip-first": 2, "active": 2})
    steps(made, 2)
    assert backend.calls == [("build", 3, 0, 2), ("start", 3)]
    steps(made, 2)
    assert backend.calls[2:] == [("step", 1), ("step", 2), ("stop", 2)]
    assert made.results[0].pop("start_s") >= 0.0  # the profiler's start, timed (a cost told past a second)
    assert made.results[0].pop("stop_s") >= 0.0 and "stop_began_ns" not in made.results[0]  # its stop too
    assert made.results == [
        {
            "first_step": 3,
            "last_step": 4,
            "complete": True,
            "traces": ["window1.pt.trace.json"],
            "profiler_steps_from": 3,
        }
    ]
    assert made.windows_completed == 1 and made.window is None
    steps(made, 3)
    assert len(backend.calls) == 5, "after the last window the session only counts"
    assert made.steps == 7


def test_each_window_has_a_profiler_of_its_own(tmp_path):
    made, backend = session(tmp_path, **{"skip-first": 1, "wait": 1, "warmup": 1, "active": 1, "repeat": 2})
    steps(made, 8)
    assert [call for call in backend.calls if call[0] == "build"] == [("build", 3, 1, 1), ("build", 6, 1, 1)]
    assert [(r["first_step"], r["last_step"], r["complete"]) for r in made.results] == [(4, 4, True), (7, 7, True)]


def test_an_action_that_waited_does_what_the_count_asks_when_it_runs(tmp_path):
    points = Points(defer=True)
    made, backend = session(tmp_path, points=points, **{"skip-first": 1, "active": 3})
    steps(made, 1)
    points.release()  # the safe point after step 1: the window starts before step 2
    assert backend.calls == [("build", 2, 0, 3), ("start", 2)]
    steps(made, 2)  # steps 2 and 3 end while the action waits (inside backward, say)
    points.release()
    assert backend.calls[2:] == [("step", 1), ("step", 2)], "one profiler step per boundary passed"
    steps(made, 1)
    points.release()
    assert made.results[0]["complete"] and made.results[0]["last_step"] == 4


def test_a_start_that_comes_late_moves_the_window_and_says_so(tmp_path):
    points = Points(defer=True)
    made, backend = session(tmp_path, points=points, **{"skip-first": 1, "active": 2})
    steps(made, 2)  # the start due before step 2 could not run until step 2 ended
    points.release()
    assert backend.calls[0] == ("build", 3, 0, 2)
    assert any("could start only at step 3" in warning for warning in made.warnings)


def test_a_window_cut_short_keeps_its_whole_steps(tmp_path):
    made, backend = session(tmp_path, **{"skip-first": 1, "active": 5})
    steps(made, 4)
    made.flush("SIGTERM")
    assert made.results[0].pop("start_s") >= 0.0
    made.results[0].pop("stop_s", None)
    assert made.results[0] == {
        "first_step": 2,
        "last_step": 4,
        "complete": False,
        "traces": ["window1.pt.trace.json"],
        "profiler_steps_from": 2,
    }
    assert made.partial_traces == 1 and made.windows_completed == 0
    assert any("cut short by SIGTERM at step 4; its trace keeps steps 2-4" in w for w in made.warnings)


def test_the_step_under_way_when_a_window_is_cut_short_is_stopped_as_unfinished(tmp_path):
    """Steps 2-4 ended; the profiler's ProfilerStep#5 and our iteration#5, opened at the last
    boundary, belong to a step the process never finished (a rank out of data, as with uneven inputs)."""
    made, backend = session(tmp_path, **{"skip-first": 1, "active": 5})
    steps(made, 4)
    made.flush("the end of the process")
    assert backend.calls[-2:] == [("unfinished", "ProfilerStep#5", "iteration#5"), ("stop", 3)]
    assert made._label is None


def test_a_window_stopped_at_a_boundary_has_no_unfinished_step(tmp_path):
    """--max-window-mb stops a window where a step has just ended, before the profiler is stepped:
    the open ranges are that step's, which is whole."""
    made, backend = session(tmp_path, **{"skip-first": 1, "active": 5})
    steps(made, 3)
    made.steps += 1  # step 4 ended; the session has not acted on its boundary yet
    made._close_window(complete=False, cause="size_cap", limit_mb=1, grown_mb=2)
    assert not [call for call in backend.calls if call[0] == "unfinished"]


def test_a_profiler_without_a_counter_names_the_unfinished_step_by_its_own_count(tmp_path):
    made, backend = session(tmp_path, **{"skip-first": 1, "active": 5})
    backend.build = lambda **kw: Recorder(backend.calls, kw["window"], kw["on_trace_ready"])  # steps_from stays 0
    steps(made, 4)
    made.flush("the end of the process")
    assert ("unfinished", "ProfilerStep#3", "iteration#5") in backend.calls
    assert made.results[0]["profiler_steps_from"] == 0


def test_a_taken_back_step_leaves_the_count_one_lower(tmp_path):
    made, _ = session(tmp_path, **{"skip-first": 8})
    steps(made, 3)
    made.retract()
    assert made.steps == 2


def test_call_at_lets_the_clock_count_alone_until_the_window(tmp_path, monkeypatch):
    """The lean hook calls the session only at call_at: a checkpoint (steps 1, 2, 4, 8, ...) or
    the boundary one before the window's first (to watch the job's ranges), never later. Steps of
    a microsecond on a clock of the test's: on a loaded machine a record's writing between two real
    readings took seconds, and the checkpoints spaced by that step time came at 1, 2, 3, 4."""
    import types

    from npuprof_launch.inprocess import session as session_module

    clock = types.SimpleNamespace(now=100.0)

    def perf_counter() -> float:
        clock.now += 1e-6
        return clock.now

    monkeypatch.setattr(session_module, "time", types.SimpleNamespace(perf_counter=perf_counter, time_ns=lambda: 1))
    made, _ = session(tmp_path, **{"skip-first": 40, "active": 1})
    seen = []
    while made.steps < 42:
        seen.append(made.call_at)
        made.steps = max(made.steps, int(made.call_at) - 1)  # what the lean hook counts alone
        made.step_ended(inside_range=True)
    assert seen[:4] == [0, 2, 4, 8] and [at for at in seen if 8 < at < 23] == [16], seen
    before = cpuwait.RAN_BEFORE
    assert set(range(41 - 2 - before, 40)) <= set(seen), "each step's time on a CPU before the window (cpuwait.py)"


def test_each_checkpoint_notes_what_it_took_of_the_step_after_it(tmp_path, monkeypatch):
    """The record's writing at steps 1, 2, 4, ... lands in steps 2, 3, 5, ...: the report takes it off them."""
    import time

    from npuprof_launch.inprocess import sessionrecord, steptiming

    made, _ = session(tmp_path, **{"skip-first": 100, "active": 1})
    writes = made.write_safely
    monkeypatch.setattr(made, "write_safely", lambda: (time.sleep(0.002), writes()))
    steps(made, 5)
    assert [step for step, _ in made.step_times_file.checkpoints.kept] == [2, 3, 5]
    assert all(seconds >= 0.002 for _, seconds in made.step_times_file.checkpoints.kept)
    assert sessionrecord.to_record(made)["checkpoint_s"] == made.step_times_file.checkpoints.kept

    kept = steptiming.CheckpointTimes()
    for step in range(1, 71):
        kept.note(step, 0.001 * step)
    kept.note(71, 0.0009)
    assert len(kept.kept) == steptiming.CHECKPOINTS_KEPT and kept.kept[0] == [7, 0.007], "the costliest 64, in order"


def test_the_cpu_wait_is_read_at_the_boundaries_of_each_profiled_step(tmp_path):
    """Between readings every 0.1 s of steps, a window's steps each get a block of their own: the
    report takes what a profiled step waited for a CPU off that step alone (lockstep.waited_for)."""
    made, _ = session(tmp_path, **{"skip-first": 10, "active": 2})
    reads = iter(range(0, 10**12, 10**7))  # 10 ms more at each reading
    made.cpu_wait = cpuwait.CpuWait(read=lambda: (0, next(reads)))
    while made.steps < 16:
        made.steps = max(made.steps, int(made.call_at) - 1)  # what the lean hook counts alone
        made.step_ended(inside_range=True)
    blocks = made.cpu_wait.record()["blocks"]
    assert [11, 11, 0.01] in blocks and [12, 12, 0.01] in blocks, blocks
    assert not [block for block in blocks if block[0] <= 10 < block[1] or block[0] <= 12 < block[1]], blocks
    ran = [step for step, _ in made.cpu_wait.record()["ran"]]
    assert ran == [*range(2, 10), 11, 12, 14, 15, 16], "time on a CPU before (not 10), in, after (not 13) the window"


class OneRequest:
    """A request watcher that hands over one request, once."""

    def __init__(self, request: dict) -> None:
        self.request: dict | None = request

    def poll(self):
        found, self.request = self.request, None
        return found


def test_a_requested_window_the_job_ended_before_is_told_and_not_planned(tmp_path):
    """--on-slowdown asked for a window at a step the job never reached: an outcome of its own,
    not a window the schedule failed to record (the check failed on '1 of 2 windows completed')."""
    from npuprof_launch.common import outcomes, record
    from npuprof_launch.inprocess import requesttaking, sessionrecord

    made, _ = session(tmp_path, **{"skip-first": 2, "active": 1, "on-slowdown": 1})
    made._watcher = requesttaking.Requests(str(tmp_path), 0, 0, made.note_warning)
    reason = "a slowdown from step 40: the step took 61.0 ms against 20.9 ms before (2.92x), to the end"
    request = {"id": "r1", "wait": 0, "warmup": 0, "active": 2, "start_step": 162, "align": None, "reason": reason}
    made._watcher.watcher = OneRequest(request)
    steps(made, 100)
    made._take_request(made._watcher)
    steps(made, 20)
    made.end(record.ENDED_EXIT)
    written = sessionrecord.to_record(made)
    assert written["windows_planned"] == 1 and written["windows_completed"] == 1
    (outcome,) = outcomes.of_kind(written["outcomes"], outcomes.NOT_REACHED)
    assert outcome == {"kind": "not_reached", "step": 120, "first": 162, "last": 163, "reason": reason}
    assert outcomes.sentence(outcome) == (
        "the window on steps 162-163 that --on-slowdown asked for was not reached: the job ended at step 120"
    )


def test_every_step_stores_its_count_where_the_launcher_reads_it_between_checkpoints(tmp_path):
    made, _ = session(tmp_path, **{"skip-first": 100})
    assert isinstance(made.marked, list) and stepmark.read(made._status_path) is None, "no file before a checkpoint"
    steps(made, 3)  # checkpoints at steps 1 and 2, none at 3
    (written,) = record.read_all(names.status_dir(str(tmp_path)))
    assert stepmark.read(made._status_path) == 3
    assert (written["steps"], written["marked"]) == (3, True), "the record says 2; the mark, 3"
    made.retract()
    assert stepmark.read(made._status_path) == 2
    made.after_fork()  # a forked child's steps are its own: the parent's mark stays as it was
    steps(made, 5)
    assert stepmark.read(made._status_path) == 2 and made.marked[0] == 7


def test_an_ended_process_is_read_at_its_records_count_not_its_mark(tmp_path):
    made, _ = session(tmp_path, **{"skip-first": 100})
    steps(made, 3)
    made.end(record.ENDED_EXIT)
    (ended,) = record.read_all(names.status_dir(str(tmp_path)))
    assert ended["steps"] == 3 and "marked" not in ended


def test_a_mark_too_short_to_hold_a_count_reads_as_none(tmp_path):
    status = str(tmp_path / "x.json")
    with open(stepmark.path_of(status), "wb") as file:
        file.write(b"\x01\x02")
    assert stepmark.read(status) is None


class EndingBackend(Backend):
    """Its export runs ``within`` first: a signal's handler that comes while the stop exports."""

    def __init__(self, within) -> None:
        super().__init__()
        self.within = within

    def export(self, prof, output_dir, worker):
        self.within()
        return super().export(prof, output_dir, worker)


def test_a_window_closed_by_a_signal_s_handler_within_its_stop_keeps_the_stop_on_record(tmp_path):
    """SIGTERM's handler flushes the window while the stop exports it: where the process ends there,
    its last record still says the stop was under way (the answer tells it ended in that stop, not a
    partial trace it never finished); where the job's own handler lets it go on, the stop ends as
    any does, with its time."""
    made, _ = session(tmp_path, **{"skip-first": 2, "active": 2})
    seen: list[dict] = []

    def ends_there() -> None:
        made.end(record.ENDED_SIGNAL)
        seen.append(made.to_record())

    made.backend = EndingBackend(ends_there)
    steps(made, 4)
    (last,) = seen
    assert isinstance(last["windows"][0]["stop_began_ns"], int) and "stop_s" not in last["windows"][0]

    made, _ = session(tmp_path / "on", **{"skip-first": 2, "active": 2})
    made.backend = EndingBackend(lambda: made.flush("SIGTERM"))
    steps(made, 5)
    (window,) = made.results
    assert "stop_began_ns" not in window and window["stop_s"] >= 0.0


def test_a_keyboard_interrupt_in_the_export_reaches_the_job_and_leaves_no_stop_counted(tmp_path):
    """Ctrl-C while the export runs (a user who takes a long parse for a hang) is the job's: it goes
    up to the job, and a job that catches it and goes on has its later windows' stops told as theirs."""

    def interrupted() -> None:
        raise KeyboardInterrupt

    made, _ = session(tmp_path, **{"skip-first": 2, "active": 2})
    made.backend = EndingBackend(interrupted)
    steps(made, 3)
    with pytest.raises(KeyboardInterrupt):
        steps(made, 1)
    assert made._stops.depth == 0 and "stop_began_ns" in made.results[0], "that stop never returned"
