"""No window is lost to a rank that stops stepping.

An inference rank (tests/scripts/idle_rank.py) serves two requests inside a window of three
(``--target __main__:handle``), then idles. Without --window-timeout the window is saved, cut
short, when the process ends, and the record and the report say the process stopped stepping.
With ``--window-timeout 2`` it is saved while the process still idles: the job waits for a file
that this test writes only once it has seen the trace, so the trace cannot come from the end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from answers import check_json, texts
from jobs import PYTHON, ROOT, clean_env, npuprof, script
from outputs import status_records, step_spans, torch_traces

IDLE = script("idle_rank.py")
WINDOW = ["--skip-first", "0", "--active", "3", "--target", "__main__:handle"]
#: A failure's limit only: the test waits for the trace, never for a time.
LIMIT_S = 300


def cut_short(record: dict) -> dict:
    (cut,) = [o for o in record["outcomes"] if o["kind"] == "cut_short"]
    return cut


def test_an_idle_ranks_window_is_saved_at_its_end_with_the_reason(out):
    result = npuprof([*WINDOW, "--output-dir", out, "--", PYTHON, IDLE, "--idle", "2"])
    assert result.returncode == 0, result.stderr
    (record,) = status_records(out)
    (window,) = record["windows"]
    assert (window["first_step"], window["last_step"], window["complete"]) == (1, 2, False)
    (trace,) = torch_traces(out)
    spans = step_spans(trace, ("ProfilerStep#", "handle#"))
    assert spans == ["ProfilerStep#1", "handle#1", "ProfilerStep#2", "handle#2"]
    cut = cut_short(record)
    assert cut["by"] == "exit" and cut["kept"] == [1, 2] and cut["idle_s"] >= 1.5, cut
    assert "at step 2, " in result.stderr and "s after its last step" in result.stderr
    code, report = check_json(out)
    assert code == 1
    (problem,) = texts(report["problems"])
    assert "stopped stepping after step 2, inside a window" in problem and "--window-timeout" in problem, problem
    assert "run more steps" not in problem


def test_window_timeout_saves_the_window_while_the_rank_idles_and_a_later_step_does_not_reopen_it(out):
    stop = os.path.join(os.path.dirname(out), "stop")
    launcher = subprocess.Popen(
        [PYTHON, "-m", "npuprof_launch", *WINDOW, "--window-timeout", "2", "--output-dir", out, "--"]
        + [PYTHON, IDLE, "--queue", "--until", stop, "--more", "2"],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + LIMIT_S
        while not torch_traces(out) and launcher.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert torch_traces(out) and launcher.poll() is None, "the trace is saved while the rank still idles"
        with open(stop, "w"):
            pass
        stdout, stderr = launcher.communicate(timeout=LIMIT_S)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
    assert launcher.returncode == 0, stderr
    assert stdout.splitlines() == ["served 2, idling", "served 4 in all"]
    (record,) = status_records(out)
    assert record["steps"] == 4 and len(record["windows"]) == 1, "the window is not reopened"
    cut = cut_short(record)
    assert cut["by"] == "window_timeout" and cut["kept"] == [1, 2] and cut["limit_s"] == 2.0, cut
    assert cut["idle_s"] >= 2.0
    again = [o for o in record["outcomes"] if o["kind"] == "stepped_after_timeout"]
    assert again == [{"kind": "stepped_after_timeout", "step": 3, "closed_at": 2}]
    assert "window cut short by --window-timeout 2 (no step for" in stderr
    _, report = check_json(out)
    assert any("cut short by --window-timeout 2" in problem for problem in texts(report["problems"])), report[
        "problems"
    ]


def test_window_timeout_under_the_optimizer_clock_closes_when_a_long_call_returns_and_the_next_window_runs(out):
    """A training job pauses 4 s in one call (examples/stuck.py --pause) inside the first of two
    windows: no Python runs during it, so the window is closed as soon as the call returns, before
    the next step; the second window opens at its own steps and completes."""
    stuck = os.path.join(ROOT, "examples", "stuck.py")
    schedule = ["--skip-first", "2", "--active", "2", "--repeat", "2", "--window-timeout", "2", "--output-dir", out]
    result = npuprof([*schedule, "--", PYTHON, stuck, "--after", "3", "--pause", "4", "--steps", "8"])
    assert result.returncode == 0, result.stderr
    (record,) = status_records(out)
    spans = [(w["first_step"], w["last_step"], w["complete"]) for w in record["windows"]]
    assert spans == [(3, 3, False), (5, 6, True)]
    cut = cut_short(record)
    assert cut["by"] == "window_timeout" and cut["step"] == 3 and cut["idle_s"] >= 3.5, cut
    assert [o["step"] for o in record["outcomes"] if o["kind"] == "stepped_after_timeout"] == [4]
    assert [step_spans(trace) for trace in torch_traces(out)] == [
        ["ProfilerStep#3", "iteration#3"],
        ["ProfilerStep#5", "iteration#5", "ProfilerStep#6", "iteration#6"],
    ]
