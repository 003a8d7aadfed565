"""The costs a user meets because of the tool, told in the answer with what they are: the
profiler's own start and stop (the stand-in's start and parse made slow, as a real first start is
while it loads its libraries, and a real parse of a large window is)."""

from __future__ import annotations

from answers import check_json
from jobs import PYTHON, npuprof, script
from npu_standin import standin_env


def test_a_profiler_start_and_stop_past_a_second_are_told_with_what_they_are(tmp_path):
    """The user waits for them (a first start loads the profiler's libraries: 1.3-3.7 s seen with
    --target; the stop exports the window, its parse too unless async): the window records its
    start_s and stop_s, the answer tells them on the line of the tool's steps and in the note's text
    and evidence (under a second they are not told: unit tests)."""
    out = str(tmp_path / "out")
    job = [PYTHON, script("train_loop.py"), "--steps", "6"]
    env = standin_env(str(tmp_path / "calls.jsonl"), TORCH_NPU_STANDIN_START_S="1.2", TORCH_NPU_STANDIN_PARSE_S="1.2")
    result = npuprof(
        ["--output-dir", out, "--backend", "npu", "--skip-first", "1", "--active", "2", "--", *job], env=env
    )
    assert result.returncode == 0, result.stderr
    code, report = check_json(out)
    (window,) = report["processes"][0]["windows"]
    assert code == 0 and window["start_s"] >= 1.2
    (note,) = [n for n in report["notes"] if n["kind"] == "tool_steps"]
    assert note["evidence"]["profiler_starts"] == [
        {"rank": None, "first_step": window["first_step"], "start_s": window["start_s"]}
    ]
    assert "the profiler's own start took up to 1.2 s in 1 window" in note["text"]
    assert code == 0 and window["stop_s"] >= 1.2 and "stop_began_ns" not in window
    assert note["evidence"]["profiler_stops"] == [
        {"rank": None, "first_step": window["first_step"], "stop_s": window["stop_s"]}
    ]
    assert f"its stop, with the export, took up to {window['stop_s']:.1f} s in 1 window" in note["text"]
    told = f"(start: up to {window['start_s']:.1f} s; export: up to {window['stop_s']:.1f} s)"
    assert told in result.stderr, result.stderr
