"""The windows --on-slowdown asked for, as the report tells them (onslowdown.asked_windows): one line
for the same window on every rank, never a window 'N-None', and a window the job ended before told
as such (outcomes.NOT_REACHED), not as a failure."""

from __future__ import annotations

from npuprof_launch.common import outcomes
from npuprof_launch.launcher import onslowdown

REASON = "a slowdown from step 40: the step took 61.0 ms against 20.9 ms before (2.92x), to the end"


def test_each_asked_window_is_told_once_with_its_steps_and_reason():
    rows = [{"windows": [{"first_step": 90, "last_step": 91, "reason": REASON}]}] * 2
    (told,) = onslowdown.asked_windows(rows, [])
    assert (told["kind"], told["severity"], told["steps"]) == ("slowdown_window", "note", [90, 91])
    assert told["evidence"] == {"reason": REASON}
    assert told["text"] == f"the window on steps 90-91 was asked for by --on-slowdown: {REASON}"


def test_a_window_that_recorded_no_step_is_never_told_as_n_none():
    rows = [{"windows": [{"first_step": 81, "last_step": None, "reason": REASON}]}]
    (told,) = onslowdown.asked_windows(rows, [])
    assert told["steps"] == [81]
    assert "None" not in told["text"] and told["text"].endswith("the job ended before it recorded a step")


def test_a_window_the_job_ended_before_is_told_once_for_every_rank():
    unreached = outcomes.make(outcomes.NOT_REACHED, 120, first=162, last=163, reason=REASON)
    records = [{"rank": rank, "outcomes": [unreached]} for rank in (0, 1)]
    (told,) = onslowdown.asked_windows([], records)
    assert (told["kind"], told["severity"], told["ranks"], told["steps"]) == (
        "window_not_reached",
        "note",
        [0, 1],
        [162, 163],
    )
    assert told["evidence"]["step"] == 120
    assert told["text"] == (
        "the window on steps 162-163 that --on-slowdown asked for was not reached: the job ended at step 120"
    )
