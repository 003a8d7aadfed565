"""The progress line of the launcher's long work, driven by a fake clock."""

from __future__ import annotations

import io

from npuprof_launch.launcher import progress
from npuprof_launch.launcher.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_short_work_shows_nothing():
    clock, stream = Clock(), io.StringIO()
    work = Progress("reading the output", 10, "processes", stream=stream, clock=clock)
    for done in range(11):
        clock.now += 0.1
        work.set(done)
    work.finish()
    assert stream.getvalue() == ""


def test_a_log_gets_a_plain_line_now_and_then_with_what_is_left():
    clock, stream = Clock(), io.StringIO()
    work = Progress("reading the output", 100, "processes", stream=stream, clock=clock)
    for done in range(100):
        clock.now += 0.5
        work.set(done)
    work.set(100)
    work.finish()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    # 50 s of work: a line at 2 s, then one every LOG_EVERY_S, and the closing line.
    assert len(lines) == 1 + int((50 - progress.SHOW_AFTER_S) // progress.LOG_EVERY_S) + 1, lines
    assert lines[0] == "npuprof: reading the output: 3/100 processes, about 65 s left"  # 3 in 2 s
    assert lines[-1] == "npuprof: reading the output: 100/100 processes in 50 s"


def test_a_terminal_gets_one_line_rewritten_in_place_and_ended():
    clock, stream = Clock(), Terminal()
    work = Progress("torch_npu parsing", 3, "sessions parsed", stream=stream, clock=clock)
    for done in (0, 1, 2, 3):
        clock.now += 60
        work.set(done)
    work.finish()
    text = stream.getvalue()
    assert text.count("\r\033[K") == 4  # three updates and the closing line, all in place
    assert text.endswith("npuprof: torch_npu parsing: 3/3 sessions parsed in 4 min\n")
    assert "1/3 sessions parsed, about 4 min left" in text


def test_a_closed_stream_is_never_an_error():
    clock, stream = Clock(), io.StringIO()
    work = Progress("moving", 2, "windows done", stream=stream, clock=clock)
    stream.close()
    clock.now += 5
    work.set(1)
    work.finish()
