"""A session's HCCL operations and step times, read as torch_npu's parse writes them (the text
export's communication.json and step_trace_time.csv; the db export's analysis.db), for the judge."""

from __future__ import annotations

import json
import os
import sqlite3

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


def test_step_times_come_from_the_csv_or_from_analysis_db(tmp_path):
    text = session(tmp_path, "t_ascend_pt")
    with open(os.path.join(text, deliverables.ASCEND_OUTPUT, "step_trace_time.csv"), "w") as handle:
        handle.write(HEADER + "0,4,100,30,10,40,20\n0,5,100,20,10,30,30\n")
    assert hcclcollectives.step_times(text) == (2, 300.0, 70.0)
    db = session(tmp_path, "d_ascend_pt")
    with sqlite3.connect(os.path.join(db, deliverables.ASCEND_OUTPUT, "analysis.db")) as connection:
        connection.execute(
            "CREATE TABLE StepTraceTime (step TEXT, computing, communication_not_overlapped, communication, free)"
        )
        connection.execute("INSERT INTO StepTraceTime VALUES ('4', 100, 30, 40, 20)")
    assert hcclcollectives.step_times(db) == (1, 150.0, 40.0)
    assert hcclcollectives.step_times(session(tmp_path, "e_ascend_pt")) is None
    assert hcclcollectives.of_session(session(tmp_path, "f_ascend_pt")) is None
