"""--window-timeout in process (inprocess/windowtimeout.py): the timer thread asks the main thread,
through the interpreter's pending calls, to close an idle window; and the words and verdicts of a
window a process that stopped stepping left (common/outcomes.py, launcher/report.py)."""

from __future__ import annotations

import threading
import time
import types

from npuprof_launch.common import outcomes
from npuprof_launch.inprocess import windowtimeout
from npuprof_launch.launcher import reasons

LIMIT_S = 10.0  # a failure's limit only: every wait below ends on an event


class Idle:
    """A window's side as the timer sees it: the last step, whether torch may stop now, the close."""

    def __init__(self, may: bool = True) -> None:
        self.last = time.perf_counter()
        self.may = may
        self.asked = 0
        self.closed: list[tuple[float, threading.Thread]] = []
        self.said: list[str] = []
        self.done = threading.Event()

    def may_close(self) -> bool:
        self.asked += 1
        return self.may

    def close(self, idle_s: float) -> None:
        self.closed.append((idle_s, threading.current_thread()))
        self.done.set()

    def timeout(self, seconds: float | None = 0.2) -> windowtimeout.WindowTimeout:
        return windowtimeout.WindowTimeout(
            seconds, last_step=lambda: self.last, may_close=self.may_close, close=self.close, say=self.said.append
        )


def run_python_until(event: threading.Event, also=lambda: None) -> None:
    """The main thread idles in Python, as a server's loop does (its bytecode runs pending calls)."""
    deadline = time.monotonic() + LIMIT_S
    while not event.is_set() and time.monotonic() < deadline:
        also()
        time.sleep(0.01)


def test_an_idle_window_is_closed_on_the_main_thread_once_no_step_came_for_the_timeout():
    idle = Idle()
    timer = idle.timeout(0.2)
    assert timer.start(threading.main_thread()) is None
    run_python_until(idle.done)
    ((idle_s, thread),) = idle.closed
    assert thread is threading.main_thread() and idle_s >= 0.2
    timer.stop()


def test_steps_keep_it_open_and_a_moment_torch_refuses_is_tried_again():
    idle = Idle(may=False)
    timer = idle.timeout(0.2)
    timer.start(threading.main_thread())
    asked = threading.Event()
    run_python_until(asked, also=lambda: idle.asked >= 2 and asked.set())  # refused twice: asked again
    assert not idle.closed
    idle.may = True
    stepping_until = time.monotonic() + 0.6
    while time.monotonic() < stepping_until:  # steps come: nothing is closed however long it runs
        idle.last = time.perf_counter()
        time.sleep(0.01)
    assert not idle.closed
    run_python_until(idle.done)
    assert len(idle.closed) == 1
    timer.stop()


def test_a_window_on_another_thread_or_with_the_option_off_gets_no_timer():
    idle = Idle()
    before = threading.active_count()
    assert idle.timeout(None).start(threading.main_thread()) is None
    assert threading.active_count() == before, "the option off: no thread of ours"
    other = threading.Thread(target=lambda: None, name="trainer")
    why = idle.timeout(0.2).start(other)
    assert "trainer" in why and "the process's end saves the window" in why
    assert threading.active_count() == before


def test_a_failure_of_the_close_is_one_line_and_never_reaches_the_job():
    idle = Idle()

    def close(idle_s: float) -> None:
        idle.done.set()
        raise RuntimeError("boom")

    timer = windowtimeout.WindowTimeout(
        0.2, last_step=lambda: idle.last, may_close=idle.may_close, close=close, say=idle.said.append
    )
    timer.start(threading.main_thread())
    run_python_until(idle.done)
    assert idle.said == ["--window-timeout failed: RuntimeError: boom; the process's end saves the window"]


def frame(path: str, back=None):
    return types.SimpleNamespace(f_code=types.SimpleNamespace(co_filename=path), f_back=back)


def test_code_of_ours_under_way_is_the_innermost_frame_that_is_not_torchs():
    ours = frame(windowtimeout.__file__)
    job = frame("/home/u/serve.py", back=ours)  # our wrapper waits on the job's call: not under way
    assert not windowtimeout.ours_under_way(job)
    torch_inside_ours = frame("/venv/site-packages/torch/autograd/profiler.py", back=ours)
    assert windowtimeout.ours_under_way(torch_inside_ours)
    assert windowtimeout.ours_under_way(ours)
    assert not windowtimeout.ours_under_way(frame("/venv/site-packages/torch/x.py", back=job))


def test_the_sentences_of_an_idle_window():
    timed = outcomes.make(outcomes.CUT_SHORT, 2, by="window_timeout", kept=[1, 2], limit_s=2.0, idle_s=2.1)
    assert outcomes.sentence(timed) == (
        "window cut short by --window-timeout 2 (no step for 2.1 s) at step 2; its trace keeps steps 1-2"
    )
    ended = outcomes.make(outcomes.CUT_SHORT, 2, by="exit", kept=[1, 2], idle_s=3.0)
    assert outcomes.sentence(ended) == (
        "window cut short by the end of the process at step 2, 3.0 s after its last step; its trace keeps steps 1-2"
    )
    soon = outcomes.make(outcomes.CUT_SHORT, 2, by="exit", kept=[1, 2], idle_s=0.2)
    assert outcomes.sentence(soon) == "window cut short by the end of the process at step 2; its trace keeps steps 1-2"
    again = outcomes.make(outcomes.STEPPED_AFTER_TIMEOUT, 3, closed_at=2)
    assert "stepped again (step 3)" in outcomes.sentence(again) and "not reopened" in outcomes.sentence(again)


def test_an_idle_rank_is_told_apart_from_a_job_that_ran_short():
    idle = outcomes.make(outcomes.CUT_SHORT, 2, by="exit", kept=[1, 2], idle_s=3.0)
    assert outcomes.stopped_stepping(idle, 0.03)
    assert outcomes.stopped_stepping(idle, None)
    assert not outcomes.stopped_stepping(idle, 0.5), "3 s is six steps of 0.5 s: a job that ran short"
    assert not outcomes.stopped_stepping(outcomes.make(outcomes.CUT_SHORT, 2, by="exit", kept=[1, 2], idle_s=0.4), None)
    record = {"steps": 2, "options": {"skip-first": 0, "active": 3}, "outcomes": [idle]}
    process = {"windows_completed": 0, "windows_planned": 1, "median_step_s": 0.03}
    why = reasons.why_incomplete(record, process, None, False)
    assert why.startswith("0 of 1 windows completed: the process stopped stepping after step 2, inside a window")
    assert "--window-timeout SECONDS" in why
    process["median_step_s"] = 0.5
    assert "the schedule needs" in reasons.why_incomplete(record, process, None, False)
    timed = outcomes.make(outcomes.CUT_SHORT, 2, by="window_timeout", kept=[1, 2], limit_s=2.0, idle_s=2.1)
    record["outcomes"] = [timed]
    assert reasons.why_incomplete(record, process, None, False) == (
        "0 of 1 windows completed: window cut short by --window-timeout 2 (no step for 2.1 s) at step 2; "
        "its trace keeps steps 1-2 (partial)"
    )


def test_an_interpreter_without_pending_calls_gets_one_line_and_no_thread(monkeypatch):
    def unavailable(run):
        raise AttributeError("Py_AddPendingCall")

    monkeypatch.setattr(windowtimeout, "_pending_call", unavailable)
    before = threading.active_count()
    timer = Idle().timeout(0.2)
    why = timer.start(threading.main_thread())
    assert why.startswith("--window-timeout is not available here") and "the process's end saves" in why
    assert threading.active_count() == before
    assert timer.start(threading.main_thread()) is None, "said once"


def test_inside_backward_the_close_waits_for_the_first_moment_after_it():
    """A backward hook that idles in Python runs the pending calls, and safepoints.py refuses them
    there: the window is closed only once backward has returned."""
    import torch

    from npuprof_launch.inprocess.safepoints import SafePoints

    points = SafePoints(torch, say=print)
    idle = Idle()
    closed_in_backward = []

    def close(idle_s: float) -> None:
        closed_in_backward.append(points.in_backward())
        idle.close(idle_s)

    timer = windowtimeout.WindowTimeout(
        0.2,
        last_step=lambda: idle.last,
        may_close=lambda: idle.may_close() and points.may_stop_idle(),
        close=close,
        say=idle.said.append,
    )
    refused = threading.Event()

    def hook(grad):
        # The window's last step and the timer start inside backward: started before it, a loaded
        # machine's main thread was slower to reach backward than the timeout, and closed it there.
        idle.last = time.perf_counter()
        timer.start(threading.main_thread())
        run_python_until(refused, also=lambda: idle.asked >= 2 and refused.set())  # asked, refused, asked again
        return grad

    weight = torch.ones(2, requires_grad=True)
    loss = weight * 2
    loss.register_hook(hook)
    loss.sum().backward()
    assert refused.is_set() and not idle.closed, "nothing closed inside backward"
    run_python_until(idle.done)
    assert closed_in_backward == [False]
    timer.stop()
