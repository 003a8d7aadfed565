"""The status record a session writes (sessionrecord.py): exactly the schema's fields, in its
order, with the session's values, copied so that a later change of the session leaves it be."""

from __future__ import annotations

import json
import os
import sys
import types

from npuprof_launch.common import names, options, record
from npuprof_launch.common.record import State
from npuprof_launch.inprocess import sessionrecord
from npuprof_launch.inprocess.session import Session


def real_session(tmp_path, environ=None, **values) -> Session:
    config, problems = options.resolve({name: str(value) for name, value in values.items()}, {})
    assert not problems
    return Session(
        config=config,
        output_dir=str(tmp_path),
        rank=3,
        rank_source="RANK",
        environ=environ or {},
        lifecycle=None,
        points=None,
        say=lambda message: None,
    )


def test_a_new_sessions_record_has_the_schemas_fields_in_order(tmp_path):
    made = real_session(tmp_path, environ={names.RUN_ID_VAR: "run-7"}, **{"skip-first": 4, "active": 2, "repeat": 3})
    made.clock_name = "optimizer.step"
    built = sessionrecord.to_record(made)
    assert list(built) == list(record.FIELDS)
    assert built["pid"] == os.getpid() and built["host"] == names.host() and built["argv"] == sys.argv
    assert (built["rank"], built["rank_source"], built["worker"], built["run_id"]) == (3, "RANK", made.worker, "run-7")
    assert (built["state"], built["clock"], built["steps"], built["on_demand"]) == (
        "waiting",
        "optimizer.step",
        0,
        False,
    )
    assert built["schedule_steps"] == 4 + 2 * 3 and built["windows_planned"] == 3
    assert built["window_steps"] is None and built["windows"] == [] and built["step_times"] is None
    assert built["mean_step_s"] is None and built["options"] == made.config.as_dict()
    assert built["started_ns"] == made.started_ns and built["updated_ns"] >= made.started_ns
    assert made.to_record().keys() == built.keys(), "the session's own name for it"


def test_the_record_written_is_the_one_built(tmp_path):
    made = real_session(tmp_path)
    made.note_warning("a warning")
    made.write_safely()
    (found,) = record.read_all(names.status_dir(str(tmp_path)))
    expected = json.loads(json.dumps(sessionrecord.to_record(made)))
    assert found.pop("file") == os.path.basename(made._status_path)
    assert {**found, "updated_ns": 0} == {**expected, "updated_ns": 0}
    assert found["warnings"] == ["a warning"]


def standin(**fields) -> types.SimpleNamespace:
    """What to_record reads of a session, with values a running session could have."""
    values = {
        "rank": 0,
        "rank_source": None,
        "worker": "rank0",
        "run_id": "",
        "state": State.RUNNING,
        "clock_name": "f",
        "target": "lib:f",
        "stage": "rollout",
        "config": options.resolve({"range": "1"}, {})[0],
        "on_demand": False,
        "requests": [],
        "backend": types.SimpleNamespace(name="torch"),
        "steps": 9,
        "step_offset": 0,
        "numbered_by": "fresh",
        "first_time": 1.0,  # the first step ended at 1.0 s, the 9th at 5.0 s: 0.5 s a step
        "times": [5.0],
        "results": [],
        "schedule": types.SimpleNamespace(length=lambda: 12, windows=lambda: ("w1", "w2")),
        "windows_before_exec": 0,
        "windows_completed": 1,
        "partial_traces": 0,
        "traces": ["a.pt.trace.json"],
        "warnings": [],
        "outcomes": [],
        "errors": ["e"],
        "declined": None,
        "step_times_file": types.SimpleNamespace(
            relative_to=lambda output_dir: f"rel-to:{output_dir}", checkpoints=types.SimpleNamespace(kept=[[2, 0.5]])
        ),
        "output_dir": "/out",
        "step_stats": {"count": 8},
        "profiler_messages": {"error": 1},
        "notes": types.SimpleNamespace(profiler_errors=["msprof exited 1"]),
        "started_ns": 5,
        "ended": "exit",
        "hang": types.SimpleNamespace(record=lambda output_dir: None, found=[]),
        "cpu_wait": types.SimpleNamespace(
            record=lambda: {"blocks": [[2, 3, 0.04]], "covered": [[2, 9]], "at_most_s": 0.005}
        ),
    }
    values.update(fields)
    return types.SimpleNamespace(**values)


def test_the_window_steps_run_from_the_first_window_to_the_last_or_to_the_count():
    first = {"first_step": 3, "last_step": 4, "complete": True, "traces": ["w1"]}
    open_one = {"first_step": 7, "last_step": None, "complete": False, "traces": []}
    built = sessionrecord.to_record(standin(results=[first, open_one]))
    assert built["window_steps"] == [3, 9], "a window with no whole step yet ends at the count"
    resumed = sessionrecord.to_record(standin(results=[open_one], step_offset=5, numbered_by="optimizer_state"))
    assert resumed["window_steps"] == [7, 14], "a resumed job's count is the job's step 14, its 9th here"
    assert (resumed["steps"], resumed["step_offset"], resumed["numbered_by"]) == (9, 5, "optimizer_state")
    assert built["windows"] == [first, open_one]
    assert (built["clock"], built["target"], built["stage"], built["range"]) == ("f", "lib:f", "rollout", True)
    assert (built["backend"], built["mean_step_s"], built["state"], built["ended"]) == ("torch", 0.5, "running", "exit")
    assert built["step_times"] == "rel-to:/out" and built["step_stats"] == {"count": 8}
    assert built["checkpoint_s"] == [[2, 0.5]]
    assert built["cpu_wait"] == {"blocks": [[2, 3, 0.04]], "covered": [[2, 9]], "at_most_s": 0.005}
    assert sessionrecord.to_record(standin(backend=None))["backend"] is None


def test_the_record_holds_copies_of_the_sessions_lists():
    window = {"first_step": 3, "last_step": 4, "complete": True, "traces": ["w1"]}
    outcome = {"kind": "note", "step": None, "text": "w"}
    made = standin(results=[window], warnings=["w"], outcomes=[outcome], requests=["r1"])
    built = sessionrecord.to_record(made)
    window["traces"].append("w2")
    made.warnings.append("later")
    outcome["text"] = "changed"
    made.outcomes.append({"kind": "note", "step": None, "text": "later"})
    made.requests.append("r2")
    made.profiler_messages["error"] = 2
    made.step_times_file.checkpoints.kept[0][1] = 9.0
    assert built["windows"][0]["traces"] == ["w1"] and built["warnings"] == ["w"] and built["requests"] == ["r1"]
    assert built["outcomes"] == [{"kind": "note", "step": None, "text": "w"}]
    assert built["profiler_messages"] == {"error": 1} and built["checkpoint_s"] == [[2, 0.5]]


def test_the_windows_planned_come_from_the_schedule_or_from_the_requests():
    assert sessionrecord.windows_planned(standin()) == 2
    assert sessionrecord.windows_planned(standin(on_demand=True, requests=["a", "b", "c"])) == 3
    assert sessionrecord.windows_planned(standin(state=State.OFF, on_demand=True, requests=["a"])) == 0
    assert sessionrecord.windows_planned(standin(windows_before_exec=1)) == 1  # the old image of an exec took one
