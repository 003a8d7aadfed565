"""The costs a user meets because of the tool, told in the answer with what they are: the
profiler's own start (the stand-in's start made slow, as a real first start is while it loads
its libraries)."""

from __future__ import annotations

from answers import check_json
from jobs import PYTHON, npuprof, script
from npu_standin import standin_env


def test_a_profiler_start_past_a_second_is_told_with_what_it_is(tmp_path):
    """The user waits for it (a first start loads the profiler's libraries: 1.3-3.7 s seen with
    --target): the window records its start_s, the answer tells it on the line of the tool's steps
    and in the note's text and evidence (a start under a second is not told: unit tests)."""
    out = str(tmp_path / "out")
    job = [PYTHON, script("train_loop.py"), "--steps", "6"]
    env = standin_env(str(tmp_path / "calls.jsonl"), TORCH_NPU_STANDIN_START_S="1.2")
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
    assert f"(its start: up to {window['start_s']:.1f} s)" in result.stderr
