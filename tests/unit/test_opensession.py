"""Opening a process's session from the environment (opensession.py): what makes it off before its
first step, and what a working one has done by the time the clock gets it."""

from __future__ import annotations

import os

from npuprof_launch.common import names, record
from npuprof_launch.common.record import State
from npuprof_launch.inprocess import opensession, session


class Lifecycle:
    def __init__(self, steps_before_exec: int = 0) -> None:
        self.added: list = []
        self._steps = steps_before_exec

    def add(self, made) -> None:
        self.added.append(made)

    def steps_before_exec(self, environ) -> int:
        return self._steps


def opened(tmp_path, lifecycle=None, stage_text=None, **variables):
    said: list[str] = []
    environ = {names.OUTPUT_DIR_VAR: str(tmp_path / "out"), "RANK": "1", **variables}
    made = opensession.open_session(
        environ,
        lifecycle=lifecycle or Lifecycle(),
        points=None,
        say=said.append,
        armed_ns=0,
        stage_text=stage_text,
    )
    return made, said


def records(tmp_path) -> list[dict]:
    return record.read_all(names.status_dir(str(tmp_path / "out")))


def test_a_path_that_cannot_be_written_is_named_and_nothing_is_created(tmp_path):
    assert opensession.writable_problem(str(tmp_path / "a" / "b")) is None
    assert not (tmp_path / "a").exists()
    (tmp_path / "file").write_text("x")
    assert opensession.writable_problem(str(tmp_path / "file" / "out")) == f"{tmp_path / 'file'} is not a directory"
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        if not os.access(locked, os.W_OK):  # root writes anywhere
            assert opensession.writable_problem(str(locked / "out")) == f"{locked} is not writable"
    finally:
        locked.chmod(0o700)


def test_a_working_session_is_added_counted_on_after_an_exec_and_recorded(tmp_path):
    lifecycle = Lifecycle(steps_before_exec=7)
    made, said = opened(tmp_path, lifecycle=lifecycle, NPU_PROF_SKIP_FRIST="3")
    assert lifecycle.added == [made] and made.state == State.WAITING and made.steps == 7
    assert (made.rank, made.rank_source, made.output_dir) == (1, "RANK", str(tmp_path / "out"))
    assert said == [made.warnings[-1]] and "NPU_PROF_SKIP_FRIST is not a variable" in said[0]
    (found,) = records(tmp_path)
    assert found["steps"] == 7 and found["warnings"] == made.warnings
    assert "re-executed itself after step 7" in made.warnings[0]


def test_bad_options_turn_it_off_with_one_line_each_and_write_nothing(tmp_path):
    lifecycle = Lifecycle()
    made, said = opened(tmp_path, lifecycle=lifecycle, NPU_PROF_ACTIVE="many")
    assert made.off and lifecycle.added == [] and made.call_at == float("inf")
    assert len(said) == 1 and said[0].endswith("; this process runs unprofiled")
    assert made.warnings[0].startswith("bad options: ") and records(tmp_path) == []


def test_an_unusable_output_directory_turns_it_off(tmp_path):
    (tmp_path / "out").write_text("a file")
    made, said = opened(tmp_path)
    assert made.off and made.warnings == [f"output directory unusable: {tmp_path / 'out'} is not a directory"]
    assert said == [
        f"{names.OUTPUT_DIR_VAR}={str(tmp_path / 'out')!r}: {tmp_path / 'out'} is not a directory; "
        "this process runs unprofiled"
    ]


def test_a_rank_outside_ranks_is_off_and_says_so_in_its_record(tmp_path):
    made, _ = opened(tmp_path, NPU_PROF_RANKS="0,2-3")
    assert made.off and made.warnings == ["rank 1 (from RANK) not in --ranks 0,2,3"]
    (found,) = records(tmp_path)
    assert found["state"] == "off" and found["warnings"] == made.warnings


def test_on_demand_watches_for_requests_from_the_session_start(tmp_path):
    made, _ = opened(tmp_path, NPU_PROF_ON_DEMAND="1")
    assert made.on_demand and made._watcher.since_ns == made.started_ns
    (found,) = records(tmp_path)
    assert found["on_demand"] and found["windows_planned"] == 0


def test_a_stage_takes_its_own_values_and_a_session_without_one_does_not(tmp_path):
    made, _ = opened(tmp_path, stage_text="rollout=lib:gen,active=4")
    assert made.stage == "rollout" and made.config.active == 4
    assert made.trace_dir == str(tmp_path / "out" / "rollout")
    again = opensession.open_session(
        {names.OUTPUT_DIR_VAR: str(tmp_path / "out")}, lifecycle=Lifecycle(), points=None, say=print, armed_ns=0
    )
    assert isinstance(again, session.Session) and again.stage is None and not again.off
