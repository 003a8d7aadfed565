"""The answer as items (launcher/answer.py) and told on one screen (launcher/summary.py): the schema
the package ships is the one the table of kinds makes; items hold kinds, severities and numbers;
the summary folds what the tool told apart into one line of counts and wraps at its width."""

from __future__ import annotations

import json
import os
import re

import jsonschema
import pytest

from npuprof_launch.launcher import answer, summary


def test_the_shipped_schema_is_the_one_the_table_of_kinds_makes():
    with open(answer.SCHEMA_FILE) as handle:
        shipped = handle.read()
    assert shipped == answer.schema_text(), "run: python -c 'from npuprof_launch.launcher import answer; ...'"
    jsonschema.Draft202012Validator.check_schema(json.loads(shipped))


def test_every_kind_has_one_severity_and_a_meaning():
    assert set(answer.SEVERITIES) == {answer.FINDING, answer.PROBLEM, answer.NOTE}
    for name, kind in answer.KINDS.items():
        assert kind.name == name and kind.severity in answer.SEVERITIES and kind.means, kind
        assert re.fullmatch(r"[a-z_]+", name), name


def test_an_item_carries_its_kind_severity_and_the_job_numbers_it_is_about():
    one = answer.item("spike", "step 7: rank 1, 4.0x the median", [1, None, 1], [7], step_s=0.4, stage=None)
    assert one == {
        "kind": "spike",
        "severity": "finding",
        "ranks": [1],
        "steps": [7],
        "evidence": {"step_s": 0.4},
        "text": "step 7: rank 1, 4.0x the median",
    }
    with pytest.raises(KeyError):
        answer.item("no_such_kind", "words")


def report_of(findings=(), problems=(), notes=(), **more) -> dict:
    return {
        "schema_version": answer.SCHEMA_VERSION,
        "passed": not problems,
        "findings": list(findings),
        "problems": list(problems),
        "notes": list(notes),
        "job": {"suggestions": [], "step_time_s": {"median": 0.02, "p90": 0.021, "max": 0.09}, "hosts": 1},
        "processes": [],
        "output_dir": "/out",
        **more,
    }


def validate(report: dict) -> None:
    with open(answer.SCHEMA_FILE) as handle:
        jsonschema.validate(report, json.load(handle))


def test_the_schema_refuses_a_sentence_where_an_item_goes_and_a_kind_under_the_wrong_severity():
    spike = answer.item("spike", "step 7", [0], [7])
    validate(report_of(findings=[spike]))
    with pytest.raises(jsonschema.ValidationError):
        validate(report_of(findings=["step 7: all 4 ranks"]))
    with pytest.raises(jsonschema.ValidationError):
        validate(report_of(problems=[spike]))
    with pytest.raises(jsonschema.ValidationError):
        validate(report_of(findings=[{**spike, "severity": "note"}]))
    with pytest.raises(jsonschema.ValidationError):
        validate(report_of(findings=[{**spike, "kind": "spikes"}]))


def test_what_the_tool_told_apart_is_one_line_of_counts_each_step_once():
    notes = [
        answer.item("tool_steps", "steps 2-5 ...", steps=[2, 3, 4, 5]),
        answer.item("aftercare_steps", "steps 5-12 ...", steps=range(5, 13)),
        answer.item("cpu_wait", "step 14 ...", [0], [14]),
        answer.item("cpu_wait", "step 10 ...", [1], [10]),
    ]
    assert summary.told_apart(notes) == ("steps told apart: 4 profiler, 7 aftercare, 1 CPU waits (--explain)"), (
        "step 10 waited for a CPU beside the aftercare: counted once, under the aftercare"
    )
    assert summary.told_apart([answer.item("windows_differ", "the ranks' windows ...", [0], [3])]) is None


def test_the_summary_leads_with_the_findings_folds_the_notes_and_wraps_long_lines():
    long_reason = "a slowdown from step 40: " + "rank 1's step took 61.0 ms against 20.9 ms before, " * 4
    report = report_of(
        findings=[answer.item("slowdown", long_reason, [1], [40])],
        notes=[
            answer.item("tool_steps", "steps 2-5 (the windows ...)", steps=[2, 3, 4, 5]),
            answer.item("no_rank_stands_out", "the ranks' step times overlap"),
            answer.item("windows_differ", "the ranks' windows cover different steps: rank 0: steps 3-4", [0], [3, 4]),
        ],
    )
    lines = summary.format_table(report).splitlines()
    assert lines[1] == f"{summary.names.VOICE} findings:", lines
    assert all(len(line) <= summary.WIDTH for line in lines), [line for line in lines if len(line) > summary.WIDTH]
    assert lines[2].startswith("  - a slowdown from step 40:") and re.match(r"      \S", lines[3]), lines
    assert "  steps told apart: 4 profiler (--explain)" in lines
    assert any(line.endswith("; no rank stands out") for line in lines), lines
    assert "  - the ranks' windows cover different steps: rank 0: steps 3-4" in lines, "a note of its own: told whole"
    explained = summary.format_table(report, explain=True)
    assert "the tool's own steps: steps 2-5 (the windows ...)" in explained
    assert "no rank stands out: the ranks' step times overlap" in explained
    assert "steps told apart:" not in explained


def test_a_window_too_short_to_judge_a_slow_rank_is_not_told_as_alike_ranks():
    """The default window records one step: no slow-rank rule judges from it, and a 4-rank DDP rank
    sleeping 30 % of a step more was told "no rank stands out" under it. The summary says what the
    window could not tell, and the window that can; judged ranks stay "no rank stands out"."""
    reason = "in lockstep ..., rank 1 waited least, 28 ms against 51-70 ms ..., and is no finding: its window held 1"
    short = answer.item("no_rank_stands_out", reason, rule="total_time", recorded_steps=1, window_steps_needed=3)
    told = " ".join(summary.format_table(report_of(notes=[short])).split())  # its wrapped lines joined
    assert "slowest step 90.00 ms; 1 recorded step cannot tell a slow rank (--active 3 or more can)" in told, told
    assert "no rank stands out" not in told, told
    validate(report_of(notes=[short]))
    # a window of 3 steps whose collectives held too few rounds: the time in them judged the ranks
    judged = answer.item(
        "no_rank_stands_out", "...", rule="total_time", rounds=3, rounds_needed=13, window_steps_needed=13
    )
    judged_lines = summary.format_table(report_of(notes=[judged])).splitlines()
    assert any(line.endswith("; no rank stands out") for line in judged_lines), judged_lines


def test_a_path_is_never_broken_by_the_wrap():
    path = "/home/you/" + "a-very-long-folder-name/" * 6 + "npuprof_report.html"
    wrapped = summary.wrapped(f"  the page is at {path} and the traces beside it, in the same folder as always")
    assert path in wrapped.splitlines()[0] or any(path in line for line in wrapped.splitlines())


def test_docs_answer_md_documents_every_kind_with_its_severity():
    with open(os.path.join(os.path.dirname(answer.SCHEMA_FILE), "..", "..", "docs", "answer.md")) as handle:
        documented = dict(re.findall(r"^\| `([a-z_]+)` \| (finding|problem|note) \|", handle.read(), re.M))
    assert documented == {name: kind.severity for name, kind in answer.KINDS.items()}


def test_the_line_of_what_was_told_apart_fits_the_width_with_every_kind():
    notes = [
        answer.item("tool_steps", "...", steps=range(1, 10000)),
        answer.item("aftercare_steps", "...", steps=range(10000, 19999)),
        answer.item("record_steps", "...", steps=range(20000, 29999)),
        answer.item("cpu_wait", "...", [0], range(30000, 39999)),
    ]
    line = f"  {summary.told_apart(notes)}"
    assert len(line) <= summary.WIDTH, line


def test_a_row_s_operators_fit_the_width_with_long_names():
    name = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"
    process = {"rank": 1, "pid": 18071, "backend": "torch", "steps": 20, "windows_completed": 1}
    process["top_operators"] = [{"name": name, "self_us": 70.0}, {"name": "c10d::allreduce_", "self_us": 4130.0}] * 2
    (_, operators) = summary._row(process)
    assert len(operators) <= summary.WIDTH and "c10d::allreduce_ 4.13 ms" in operators, operators


def test_the_lines_that_say_how_to_open_the_output_fit_the_width():
    for line in (summary.OPEN_TORCH, summary.OPEN_NPU.format(command="msprof-analyze cluster -d ")):  # the path aside
        assert len(f"{summary.names.VOICE} {line}") <= summary.WIDTH, line


def test_a_profiler_start_and_stop_are_told_past_a_second_and_only_where_the_line_has_room():
    from npuprof_launch.launcher import jobview

    windows = [{"first_step": 3, "start_s": 0.9}, {"first_step": 9, "start_s": 2.46, "stop_s": 1.0}, {"first_step": 15}]
    assert jobview._slow_edges([{"rank": 1, "windows": windows}], "start_s") == [
        {"rank": 1, "first_step": 9, "start_s": 2.46}
    ]
    assert jobview._slow_edges([{"rank": 1, "windows": windows}], "stop_s") == [
        {"rank": 1, "first_step": 9, "stop_s": 1.0}
    ]
    stop = answer.item("tool_steps", "steps 3-5", steps=[3, 4, 5], profiler_stops=[{"stop_s": 1.04}])
    assert summary.told_apart([stop]) == "steps told apart: 3 profiler (its export: up to 1.0 s) (--explain)"
    both = answer.item(
        "tool_steps", "steps 3-5", steps=[3, 4, 5], profiler_starts=[{"start_s": 2.46}], profiler_stops=[{"stop_s": 1}]
    )
    assert summary.told_apart([both]) == (
        "steps told apart: 3 profiler (start: up to 2.5 s; export: up to 1.0 s) (--explain)"
    )
    note = answer.item("tool_steps", "steps 3-5", steps=[3, 4, 5], profiler_starts=[{"start_s": 2.46}])
    assert summary.told_apart([note]) == "steps told apart: 3 profiler (its start: up to 2.5 s) (--explain)"
    quiet = answer.item("tool_steps", "steps 3-5", steps=[3, 4, 5], profiler_starts=[])
    assert summary.told_apart([quiet]) == "steps told apart: 3 profiler (--explain)"
    crowded = [
        note,
        answer.item("aftercare_steps", "", steps=range(10, 10009)),
        answer.item("record_steps", "", steps=range(20000, 29999)),
        answer.item("cpu_wait", "", steps=range(40000, 49999)),
    ]
    assert "(its start" not in summary.told_apart(crowded) and len(summary.told_apart(crowded)) + 2 <= summary.WIDTH


def test_a_one_step_window_on_a_warm_up_step_is_not_told_as_a_spike_run():
    """The default window records step 2, a warm-up step where no spike is found: its time (the
    profiler's start, the job's warm-up) is not told in the summary; a spike's run, on step 7, is."""

    def told(step: int, warmup: bool) -> list[str]:
        spike = {"step": step, "step_s": 0.26, "vs_median": 3.4, "rank": 2, "window_steps": 1, "warmup": warmup}
        return summary.recorded_spikes([answer.item("tool_steps", "...", steps=[step], recorded_spike=spike)])

    assert told(2, True) == []
    assert told(7, False) == [
        "step 7 on rank 2, its window's one step: 260.00 ms, 3.4x the median step (less the profiler's start)"
    ]
