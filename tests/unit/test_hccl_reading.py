"""A session's HCCL operations and step times, read as torch_npu's parse writes them (the text
export's communication.json and step_trace_time.csv; the db export's analysis.db), for the judge."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from npuprof_launch.common import deliverables, hcclcollectives

HEADER = "Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free\n"


def session(tmp_path, name: str = "s_ascend_pt") -> str:
    path = tmp_path / name / deliverables.ASCEND_OUTPUT
    path.mkdir(parents=True)
    return str(tmp_path / name)


def test_communication_json_gives_each_op_its_wait_step_and_group(tmp_path):
    path = session(tmp_path)
    op = {"Communication Time Info": {"Wait Time(ms)": 2.5, "Elapse Time(ms)": 3.0, "Start Timestamp(us)": 1e6}}
    data = {
        "step4": {"collective": {"hcom_allReduce__87_1_1@g0": op, "Total Op Info": {}}, "p2p": {}},
        "step5": {"collective": {"hcom_allReduce__87_2_1@g0": op}, "p2p": {}},
    }
    with open(os.path.join(path, deliverables.ASCEND_OUTPUT, "communication.json"), "w") as handle:
        json.dump(data, handle)
    assert hcclcollectives.of_session(path) == [
        ("hcom_allReduce__87_1_1@g0", "g0", 4, 0.0025, 1.0),
        ("hcom_allReduce__87_2_1@g0", "g0", 5, 0.0025, 1.0),
    ]


def test_an_op_queued_behind_the_ones_before_it_on_the_stream_waits_from_when_they_began(tmp_path):
    """A step's ops run one after another on the rank's stream: one that starts as the one before it
    ends was reached when that one was, so its wait runs from there; one that starts later is where
    the rank reached it (text export: Wait Time; db export: the op's duration)."""

    def op(start_ms: float, elapse_ms: float, wait_ms: float) -> dict:
        times = {"Start Timestamp(us)": start_ms * 1e3, "Elapse Time(ms)": elapse_ms, "Wait Time(ms)": wait_ms}
        return {"Communication Time Info": times}

    text = session(tmp_path, "t_ascend_pt")
    ops = {"a@g": op(1000, 10, 9), "b@g": op(1010, 5, 4), "c@g": op(1020, 2, 1)}
    with open(os.path.join(text, deliverables.ASCEND_OUTPUT, "communication.json"), "w") as handle:
        json.dump({"step4": {"collective": ops, "p2p": {}}}, handle)
    assert hcclcollectives.of_session(text) == [
        ("a@g", "g", 4, 0.009, 1.0),
        ("b@g", "g", 4, pytest.approx(0.014), 1.0),  # queued behind a: 10 ms there, 4 its own
        ("c@g", "g", 4, 0.001, 1.02),  # 5 ms after b ended: reached then
    ]
    db = session(tmp_path, "d_ascend_pt")
    with sqlite3.connect(os.path.join(db, deliverables.ASCEND_OUTPUT, "ascend_pytorch_profiler_0.db")) as connection:
        connection.execute("CREATE TABLE STRING_IDS (id INTEGER, value TEXT)")
        names = [(1, "a"), (2, "b"), (3, "c"), (9, "g"), (5, "hcom_send__1_0_1"), (6, "hcom_receive__1_0_1")]
        connection.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", names)
        connection.execute("CREATE TABLE STEP_TIME (id INTEGER, startNs INTEGER, endNs INTEGER)")
        connection.execute("INSERT INTO STEP_TIME VALUES (4, 900000000, 1100000000)")
        connection.execute("CREATE TABLE COMMUNICATION_OP (opName, groupName, startNs, endNs)")
        spans = [(1, 1000, 1010), (2, 1010, 1015), (5, 1016, 1017), (3, 1020, 1022), (6, 1023, 1030)]  # ms
        # ... a pipeline's send and receive among them: no collectives (tracecollectives.POINT_TO_POINT)
        connection.executemany(
            "INSERT INTO COMMUNICATION_OP VALUES (?, 9, ?, ?)", [(n, a * 10**6, b * 10**6) for n, a, b in spans]
        )
    assert hcclcollectives.of_session(db) == [
        ("a@g", "g", 4, 0.01, 1.0),
        ("b@g", "g", 4, pytest.approx(0.015), 1.0),
        ("c@g", "g", 4, pytest.approx(0.002), 1.02),
    ]


def test_step_times_come_from_the_csv_or_from_analysis_db(tmp_path):
    text = session(tmp_path, "t_ascend_pt")
    with open(os.path.join(text, deliverables.ASCEND_OUTPUT, "step_trace_time.csv"), "w") as handle:
        handle.write(HEADER + "0,4,100,30,10,40,20\n0,5,100,20,10,30,30\n")
    assert hcclcollectives.totals(hcclcollectives.step_rows(text)) == (2, 300.0, 70.0)
    # the device's computing time by ProfilerStep number, in seconds: the judge of its own work
    assert hcclcollectives.computing(hcclcollectives.step_rows(text)) == [(4, 0.0001), (5, 0.0001)]
    db = session(tmp_path, "d_ascend_pt")
    with sqlite3.connect(os.path.join(db, deliverables.ASCEND_OUTPUT, "analysis.db")) as connection:
        connection.execute(
            "CREATE TABLE StepTraceTime (step TEXT, computing, communication_not_overlapped, communication, free)"
        )
        connection.execute("INSERT INTO StepTraceTime VALUES ('4', 100, 30, 40, 20)")
    assert hcclcollectives.totals(hcclcollectives.step_rows(db)) == (1, 150.0, 40.0)
    assert hcclcollectives.computing(hcclcollectives.step_rows(db)) == [(4, 0.0001)]
    assert hcclcollectives.computing([("", "100", "0", "0", "0")]) is None, "a window of no ProfilerStep"
    assert hcclcollectives.totals(hcclcollectives.step_rows(session(tmp_path, "e_ascend_pt"))) is None
    assert hcclcollectives.of_session(session(tmp_path, "f_ascend_pt")) is None


def test_a_db_export_gives_the_device_time_of_each_operator_type(tmp_path):
    """COMPUTE_TASK_INFO joined to TASK on globalTaskId, types from STRING_IDS, as msprof-analyze
    joins them; a db without compute tasks (Level_none) gives nothing."""
    path = session(tmp_path)
    db = os.path.join(path, deliverables.ASCEND_OUTPUT, "ascend_pytorch_profiler_0.db")
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT)")
        connection.execute("CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, globalTaskId INTEGER)")
        assert deliverables.npu_operator_totals(path) == {}
        connection.execute("CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER, opType INTEGER)")
        connection.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", [(1, "MatMul"), (2, "Add")])
        connection.executemany("INSERT INTO TASK VALUES (?, ?, 0, ?)", [(0, 1500, 7), (2000, 2500, 8), (3000, 3250, 9)])
        connection.executemany("INSERT INTO COMPUTE_TASK_INFO VALUES (?, ?, ?)", [(1, 7, 1), (1, 8, 1), (2, 9, 2)])
    connection.close()
    assert deliverables.npu_operator_totals(path) == {"MatMul": 2.0, "Add": 0.25}
