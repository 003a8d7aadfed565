"""The stand-in's communication outputs against the real torch_npu 2.14.0 sources.

The names the stand-in writes (tests/standin/torch_npu/profiler/analysis/_standin_output.py) are
read out of the wheel's parse code: communication.json's and communication_matrix.json's file
names and keys (prof_view/_communication_parser.py), step_trace_time.csv's header and the timeline
events it counts (prof_view/_trace_step_time_parser.py), the db tables and their columns
(prof_common_func/_constant.py's DbConstant and TableColumnsManager; COMMUNICATION_OP's columns as
prof_view/prof_db_parse/_trace_step_time_db_parser.py reads them) and when analysis.db is written
(prof_view/prof_db_parse/_db_parser.py). Skipped, saying so, when the wheel cannot be downloaded.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re

import pytest
from npu_wheels import release_source

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = "torch_npu/profiler/analysis/"
COMM_PARSER = ANALYSIS + "prof_view/_communication_parser.py"
STEP_PARSER = ANALYSIS + "prof_view/_trace_step_time_parser.py"
CONSTANT = ANALYSIS + "prof_common_func/_constant.py"
STEP_DB_PARSER = ANALYSIS + "prof_view/prof_db_parse/_trace_step_time_db_parser.py"
DB_PARSER = ANALYSIS + "prof_view/prof_db_parse/_db_parser.py"
STEP_INFO_DB_PARSER = ANALYSIS + "prof_view/prof_db_parse/_step_info_db_parser.py"
COMM_DB_PARSER = ANALYSIS + "prof_view/prof_db_parse/_communication_db_parser.py"


def _load_output():
    path = os.path.join(HERE, "standin", "torch_npu", "profiler", "analysis", "_standin_output.py")
    spec = importlib.util.spec_from_file_location("standin_output_comm", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


files = _load_output()


@pytest.fixture(scope="module")
def source():
    return release_source("2.14.0")


def _text(source, name: str) -> str:
    data = source.read(name)
    assert data is not None, f"{name} is not in the wheel"
    return data.decode("utf-8")


def _class_constants(text: str, cls: str) -> dict:
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            found = {}
            for item in node.body:
                if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                    try:
                        found[item.targets[0].id] = ast.literal_eval(item.value)
                    except ValueError:
                        pass
            return found
    raise AssertionError(f"no class {cls}")


def _table_columns(text: str) -> dict:
    """TableColumnsManager.TableColumns, keyed by table name (DbConstant's values)."""
    db_constant = _class_constants(text, "DbConstant")
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "TableColumnsManager":
            for item in node.body:
                if isinstance(item, ast.Assign) and item.targets[0].id == "TableColumns":
                    found = {}
                    for key, value in zip(item.value.keys, item.value.values):
                        table = db_constant[key.attr]
                        found[table] = [(elt.elts[0].value, elt.elts[1].attr) for elt in value.elts]
                    return found
    raise AssertionError("no TableColumns")


def _sql_type(text: str, attr: str) -> str:
    return _class_constants(text, "Constant")[attr]


def _sample():
    """A window of two steps with two all-reduces and a broadcast on rank 1 of 4."""
    steps = [files.Step(3, 1_000_000_000, 1_100_000_000), files.Step(4, 1_100_000_000, 1_200_000_000)]
    group = "127.0.0.1%lo_29500_0_0"
    comms = [
        files.Comm("allReduce", group, 7, 1_010_000_000, 1_030_000_000, 4_000_000, 4, 1),
        files.Comm("broadcast", group, 8, 1_040_000_000, 1_041_000_000, 400, 4, 1),
        files.Comm("allReduce", group, 9, 1_150_000_000, 1_151_000_000, 4_000_000, 4, 1),
    ]
    return steps, comms


def test_communication_json_keys_are_the_parsers(source):
    parser = _class_constants(_text(source, COMM_PARSER), "CommunicationParser")
    assert files.COMMUNICATION == parser["COMMUNICATION"]
    assert files.COMMUNICATION_MATRIX == parser["COMMUNICATION_MATRIX"]
    assert files.TIME_INFO == parser["COMMUNICATION_TIME_INFO"]
    assert files.BANDWIDTH_INFO == parser["COMMUNICATION_BANDWIDTH_INFO"]
    assert files.HCCL_PATTERN == parser["HCCL_PATTERN"]
    steps, comms = _sample()
    output = files.communication(comms, steps)
    assert list(output) == ["step3", "step4"], "step keys as 'step' + step_id"
    for split in output.values():
        assert set(split) == {parser["P2P"], parser["COLLECTIVE"]}
        ops = split[parser["COLLECTIVE"]]
        assert "Total Op Info" in ops and "'Total Op Info'" in _text(source, COMM_PARSER)
        for name, info in ops.items():
            time_info = info[parser["COMMUNICATION_TIME_INFO"]]
            for key in ("START_TIMESTAMP", "WAIT_TIME_MS", "TRANSIT_TIME_MS", "SYNCHRONIZATION_TIME_MS"):
                if name != "Total Op Info" or key != "START_TIMESTAMP":
                    assert parser[key] in time_info, (name, key)
            assert parser["WAIT_TIME_RATIO"] in time_info and parser["SYNCHRONIZATION_TIME_RATIO"] in time_info
            for transport in info[parser["COMMUNICATION_BANDWIDTH_INFO"]].values():
                for key in ("TRANSIT_TIME_MS", "TRANSIT_SIZE_MB", "SIZE_DISTRIBUTION"):
                    assert parser[key] in transport, key
            if name != "Total Op Info":
                # the op's name as the parser splits it (name@group) and types it (the pattern)
                assert re.search(parser["HCCL_PATTERN"], name.split("@")[0].lower())
                for transport in info[parser["COMMUNICATION_BANDWIDTH_INFO"]].values():
                    assert parser["BANDWIDTH_GB_S"] in transport
    # the db's elapse and idle columns are the text's "Elapse Time(ms)", "Idle Time(ms)"
    columns = [name for name, _ in _table_columns(_text(source, CONSTANT))["CommAnalyzerTime"]]
    time_info = output["step3"]["collective"][comms[0].key]["Communication Time Info"]
    for column in ("elapse_time", "idle_time"):
        assert column in columns
        assert column.split("_")[0].capitalize() + " Time(ms)" in time_info


def test_matrix_names_are_the_parsers_integration(source):
    parser_text = _text(source, COMM_PARSER)
    parser = _class_constants(parser_text, "CommunicationParser")
    steps, comms = _sample()
    matrix = files.communication_matrix(comms, steps)
    suffixes = set(re.findall(r"f'\{new_comm_op_name\[0\]\}-(\w+)@", parser_text))
    assert suffixes >= {"top1", "middle", "bottom1", "bottom2", "bottom3", "total"}
    for split in matrix.values():
        assert set(split) == {parser["P2P"], parser["COLLECTIVE"]}
        for name, links in split[parser["COLLECTIVE"]].items():
            kind, rest = name.split("-", 1)
            assert re.fullmatch(parser["HCCL_PATTERN"], kind) and rest.split("@")[0] in suffixes, name
            for link, info in links.items():
                assert re.fullmatch(r"\d+-\d+", link)
                for key in ("TRANSPORT_TYPE", "TRANSIT_SIZE_MB", "TRANSIT_TIME_MS", "BANDWIDTH_GB_S"):
                    assert parser[key] in info


def test_step_trace_time_and_the_timeline_events_it_counts(source):
    text = _text(source, STEP_PARSER)
    parser = _class_constants(text, "TraceStepTimeParser")
    assert files.STEP_TRACE_TIME == parser["STEP_TRACE"]
    assert files.STEP_TRACE_TIME_HEADER == parser["title"]
    assert set(files.OVERLAP_THREADS) == {"Communication", "Computing", "Free", "Communication(Not Overlapped)"}
    assert set(files.OVERLAP_THREADS) <= set(parser["timeflag"])
    steps, comms = _sample()
    events = files.trace_events([], comms, steps, 1)
    labels = {e["pid"]: e["args"]["labels"] for e in events if e["name"] == "process_labels"}
    assert all(label == "NPU 1" for label in labels.values()), "the pid -> device map reads 'NPU {id}'"
    counted = [e for e in events if e["ph"] == "X" and e["name"] in parser["timeflag"]]
    assert counted and all(e["pid"] in labels for e in counted)
    hccl = [e for e in events if e["ph"] == "X" and e["name"].startswith("hcom_")]
    assert [e["name"] for e in hccl] == [c.name for c in comms]


def test_db_tables_and_columns_are_the_sources(source):
    constant_text = _text(source, CONSTANT)
    db = _class_constants(constant_text, "DbConstant")
    columns = _table_columns(constant_text)
    types = {attr: _sql_type(constant_text, attr) for attr in ("SQL_TEXT_TYPE", "SQL_INTEGER_TYPE", "SQL_NUMERIC_TYPE")}

    def real(table):
        return [(name, types[kind]) for name, kind in columns[table]]

    assert files.DB_ANALYSIS == db["DB_ANALYSIS"]
    assert real(db["TABLE_STEP_TIME"]) == files.STEP_TIME_COLUMNS
    assert real(db["TABLE_STEP_TRACE_TIME"]) == files.STEP_TRACE_TIME_COLUMNS
    assert real(db["TABLE_ANALYZER_TIME"]) == files.ANALYZER_TIME_COLUMNS
    assert real(db["TABLE_ANALYZER_BANDWIDTH"]) == files.ANALYZER_BANDWIDTH_COLUMNS
    assert real(db["TABLE_ANALYZER_MATRIX"]) == files.ANALYZER_MATRIX_COLUMNS
    # COMMUNICATION_OP is CANN's table: the columns torch_npu reads from it are the stand-in's.
    step_db = _text(source, STEP_DB_PARSER)
    assert db["TABLE_COMMUNICATION_OP"] == "COMMUNICATION_OP" and "FROM COMMUNICATION_OP c" in step_db
    read = set(re.findall(r"\bc\.(\w+)", step_db)) | {"startNs", "endNs", "connectionId"}
    assert read <= {name for name, _ in files.COMMUNICATION_OP_COLUMNS}, read
    assert "SELECT value FROM STRING_IDS WHERE id = c.opName" in step_db, "opName is a STRING_IDS id"
    assert "TABLE_STEP_TIME" in _text(source, STEP_INFO_DB_PARSER)
    # analysis.db: written by DbParser's ANALYSIS_DB_MAP, only with CANN data above Level_none.
    db_parser = _text(source, DB_PARSER)
    assert "AnalysisDb().init(os.path.join(self._output_path, DbConstant.DB_ANALYSIS))" in db_parser
    assert "get_cann_path(self._profiler_path) and ProfilerConfig().get_level() != Constant.LEVEL_NONE" in db_parser
    assert "TABLE_ANALYZER_TIME" in _text(source, COMM_DB_PARSER)


def test_written_dbs_hold_the_tables(tmp_path):
    import sqlite3

    steps, comms = _sample()
    db = str(tmp_path / files.db_name(1))
    files.make_db(db)
    files.add_db_tables(db, comms, steps)
    connection = sqlite3.connect(db)
    names = connection.execute(
        "SELECT (SELECT value FROM STRING_IDS WHERE id = c.opName), startNs, endNs FROM COMMUNICATION_OP c"
    ).fetchall()
    assert [n[0] for n in names] == [c.name for c in comms]
    assert connection.execute("SELECT id, startNs, endNs FROM STEP_TIME").fetchall() == [tuple(s) for s in steps]
    files.write_analysis_db(str(tmp_path), comms, steps, steps, [], 1)
    analysis = sqlite3.connect(str(tmp_path / files.DB_ANALYSIS))
    tables = {row[0] for row in analysis.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"StepTraceTime", "CommAnalyzerTime", "CommAnalyzerBandwidth", "CommAnalyzerMatrix"}
    rows = analysis.execute("SELECT hccl_op_name, step, type FROM CommAnalyzerTime").fetchall()
    assert rows == [(comms[0].name, "step3", "collective"), (comms[1].name, "step3", "collective")] + [
        (comms[2].name, "step4", "collective")
    ]


def test_analysis_db_columns_of_2_4_0():
    """2.4.0's StepTraceTime has no deviceId (its step_trace_time.csv no Device_id); the rest alike."""
    old = release_source("2.4.0")
    constant_text = _text(old, CONSTANT)
    db = _class_constants(constant_text, "DbConstant")
    columns = _table_columns(constant_text)
    types = {attr: _sql_type(constant_text, attr) for attr in ("SQL_TEXT_TYPE", "SQL_INTEGER_TYPE", "SQL_NUMERIC_TYPE")}

    def real(table):
        return [(name, types[kind]) for name, kind in columns[table]]

    assert real(db["TABLE_STEP_TRACE_TIME"]) == files.STEP_TRACE_TIME_COLUMNS_BY_RELEASE["2.4.0"]
    assert real(db["TABLE_STEP_TIME"]) == files.STEP_TIME_COLUMNS
    assert real(db["TABLE_ANALYZER_TIME"]) == files.ANALYZER_TIME_COLUMNS
    assert real(db["TABLE_ANALYZER_BANDWIDTH"]) == files.ANALYZER_BANDWIDTH_COLUMNS
    assert real(db["TABLE_ANALYZER_MATRIX"]) == files.ANALYZER_MATRIX_COLUMNS
    assert files.DB_ANALYSIS == db["DB_ANALYSIS"]
