"""Outcomes as data (common/outcomes.py): one closed table of kinds, one sentence each, and the
report's verdicts decided on kinds, never on the words."""

from __future__ import annotations

import pytest

from npuprof_launch.common import outcomes
from npuprof_launch.launcher import reasons

#: One outcome of every kind, with the fields a process records.
EXAMPLES = [
    outcomes.make(outcomes.CUT_SHORT, 6, by="exit", kept=[5, 6]),
    outcomes.make(outcomes.CUT_SHORT, 4, by="SIGTERM", kept=None),
    outcomes.make(outcomes.CUT_SHORT, 9, by="size_cap", kept=[3, 9], limit_mb=256, grown_mb=400),
    outcomes.make(outcomes.LOST_ON_THREAD, 5, by="SIGINT"),
    outcomes.make(outcomes.OFF_MAIN_THREAD, None, function="lib:serve", thread="worker-1"),
    outcomes.make(outcomes.OTHER_THREADS, None, function="lib:serve", thread="MainThread"),
    outcomes.make(outcomes.LATE_START, 2, due=1, first=2, last=3, why="step_one"),
    outcomes.make(outcomes.SLOT_BUSY, 7, clock="lib:f", holder="optimizer.step"),
    outcomes.make(outcomes.JOB_PROFILER, 3),
    outcomes.make(outcomes.UNCAUGHT, 3, type="ValueError", message="boom"),
    outcomes.make(outcomes.FROM_STEP_PASSED, 6, first=3, last=4, began=6, source="optimizer_state"),
    outcomes.make(outcomes.NUMBERING_UNKNOWN, None, from_step=4, source="no_count"),
    outcomes.make(outcomes.NOTE, None, text="the profiler logged a warning: x"),
    outcomes.make(outcomes.CUT_SHORT, 2, by="window_timeout", kept=[1, 2], limit_s=2.0, idle_s=2.1),
    outcomes.make(outcomes.STEPPED_AFTER_TIMEOUT, 3, closed_at=2),
    outcomes.make(outcomes.NOT_REACHED, 80, first=81, last=88, reason="a slowdown from step 40"),
    outcomes.make(outcomes.RPC_AGENT, 3),
]


def test_every_kind_of_the_table_has_an_example_and_a_sentence():
    assert {example["kind"] for example in EXAMPLES} == set(outcomes.KINDS)
    for example in EXAMPLES:
        assert outcomes.sentence(example), example


def test_a_kind_or_a_field_off_the_table_is_refused():
    with pytest.raises(KeyError):
        outcomes.make("cut", 1)
    with pytest.raises(ValueError, match="fields off the table"):
        outcomes.make(outcomes.CUT_SHORT, 1, by="exit", reason="words")
    with pytest.raises(ValueError, match="off the table"):
        outcomes.sentence({"kind": "cut", "step": 1})


def test_the_sentences_say_what_the_fields_hold():
    assert (
        outcomes.sentence(EXAMPLES[0])
        == "window cut short by the end of the process at step 6; its trace keeps steps 5-6"
    )
    assert outcomes.sentence(EXAMPLES[1]) == "window cut short by SIGTERM at step 4; it had recorded no whole step"
    assert "--max-window-mb 256 (the process grew by 400 MB" in outcomes.sentence(EXAMPLES[2])
    assert outcomes.sentence(EXAMPLES[6]).startswith(
        "the window due at step 1 could start only at step 2 (the optimizer"
    )


@pytest.mark.parametrize(
    "example",
    [e for e in EXAMPLES if e["kind"] in (outcomes.CUT_SHORT, outcomes.LOST_ON_THREAD) and "idle_s" not in e],
)
def test_an_older_records_sentence_reads_back_as_the_same_outcome(example):
    """A record written before outcomes existed holds only the sentences: read back, the report
    decides on the same kind and fields."""
    back = outcomes.of_record({"warnings": [outcomes.sentence(example)]})
    assert back == [{key: value for key, value in example.items() if key not in ("limit_mb", "grown_mb")}] or (
        example["by"] == "size_cap" and back[0]["kind"] == outcomes.CUT_SHORT and back[0]["by"] == "size_cap"
    )


def test_an_older_records_uncaught_exception_and_other_sentences():
    back = outcomes.of_record({"warnings": ["the process ended with an uncaught ValueError (boom) after step 3", "x"]})
    assert back[0]["kind"] == outcomes.UNCAUGHT and back[0]["type"] == "ValueError" and back[0]["step"] == 3
    assert back[1] == {"kind": outcomes.NOTE, "step": None, "text": "x"}
    assert outcomes.of_record({"warnings": ["y"], "outcomes": [EXAMPLES[0]]}) == [EXAMPLES[0]], "outcomes win"


def row(**record) -> tuple[dict, dict]:
    base = {"steps": 6, "options": {"skip-first": 4, "active": 4}, "warnings": ["words nobody decides on"]}
    base.update(record)
    return base, {"windows_completed": 0, "windows_planned": 1}


def test_the_reports_verdict_follows_the_kind_not_the_words():
    record, process = row(outcomes=[outcomes.make(outcomes.CUT_SHORT, 6, by="SIGTERM", kept=[5, 6])])
    assert reasons.why_incomplete(record, process, None, False) == (
        "interrupted by SIGTERM at step 6; its trace keeps steps 5-6 (partial)"
    )
    record, process = row(outcomes=[outcomes.make(outcomes.CUT_SHORT, 6, by="exit", kept=[5, 6])])
    assert reasons.why_incomplete(record, process, {"status": 0}, False).startswith(
        "0 of 1 windows completed: the job ran 6 steps, the schedule needs"
    )
    record, process = row(outcomes=[outcomes.make(outcomes.CUT_SHORT, 6, by="exit", kept=[5, 6])])
    assert "interrupted by SIGINT" in reasons.why_incomplete(record, process, {"status": 130}, False)
    record, process = row(outcomes=[outcomes.make(outcomes.OFF_MAIN_THREAD, None, function="f", thread="t")])
    assert "its calls run on t, not on the main thread" in reasons.why_incomplete(record, process, None, False)
    record, process = row(outcomes=[outcomes.make(outcomes.UNCAUGHT, 6, type="KeyError", message=None)])
    assert reasons.why_incomplete(record, process, {"status": 1}, False) == (
        "0 of 1 windows completed: the process ended with an uncaught KeyError after step 6, before the schedule "
        "completed"
    )
