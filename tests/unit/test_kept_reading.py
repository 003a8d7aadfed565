"""What a window's aftercare keeps of an NPU session (keptreading.py) is what ``--check`` would read
of the files: the same HCCL operations, step times, operator totals and deliverable problems, on
sessions written by the torch_npu stand-in's writer; a file changed since is read again, and a
deliverable that failed its check is never vouched for."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from npu_layout import STEP, output_files, session

from npuprof_launch.common import deliverables, files, hcclcollectives, keptreading
from npuprof_launch.launcher import lockstep, windowcheck

GROUP = "10.0.0.1%enp189s0f0_60000_0_1767268800000000"


def collectives(world: int = 4, rank: int = 1) -> list:
    """Six all-reduces in the session's one step: three queued one behind the other, three reached
    apart (both ways the reader takes a wait)."""
    start = STEP.start_ns + 100_000
    spans = [(0, 40), (40, 70), (70, 90), (300, 320), (500, 530), (800, 805)]  # us after start
    return [
        output_files.Comm("allReduce", GROUP, seq, start + a * 1000, start + b * 1000, 2_000_000, world, rank)
        for seq, (a, b) in enumerate(spans, 1)
    ]


def parsed(root: str, export: str) -> str:
    """A session as torch_npu's parse leaves it (Level1: op_statistic.csv too), with its collectives."""
    path = session(root, export=(export,))
    output = os.path.join(path, deliverables.ASCEND_OUTPUT)
    comms, found = collectives(), output_files.kernels([STEP])
    if export == "text":
        output_files.write_communication(output, comms, [STEP])
        output_files.write_step_trace_time(output, [STEP], found, 0, comms=comms)
    else:
        db = os.path.join(output, output_files.db_name(0))
        output_files.add_compute_tasks(db, found)
        output_files.add_db_tables(db, comms, [STEP])
        output_files.write_analysis_db(output, comms, [STEP], [STEP], found, 0)
    return path


def kept_as_written(path: str, tmp_path) -> object:
    """The session's reading as a window's aftercare result holds it: written as JSON, read back."""
    result = str(tmp_path / "result.json")
    files.write_json(result, {keptreading.RESULT_KEY: {os.path.basename(path): keptreading.read(path)}})
    with open(result) as handle:
        return json.load(handle)[keptreading.RESULT_KEY][os.path.basename(path)]


@pytest.mark.parametrize("export", ["text", "db"])
def test_a_kept_reading_gives_what_reading_the_files_gives(tmp_path, export):
    path = parsed(str(tmp_path), export)
    kept = keptreading.unchanged(path, kept_as_written(path, tmp_path))
    assert kept is not None, "the files are as they were: the reading holds"
    whole = hcclcollectives.of_session(path)  # communication.json decoded whole, or COMMUNICATION_OP
    assert whole and len(whole) == 6
    assert kept.collectives == whole and kept.collectives.source == whole.source
    now = keptreading.now(path)
    assert kept.step_times == now.step_times is not None
    assert kept.computing == now.computing is not None
    assert list(kept.operator_totals.items()) == list(now.operator_totals.items()) != []
    assert deliverables.check_ascend_dir(path, (export,), sound=kept.sound) == []
    assert kept.sound.passed or kept.sound.db_tables, "it vouched for what it read whole"


def test_a_file_changed_since_the_reading_is_read_again(tmp_path):
    path = parsed(str(tmp_path), "text")
    kept = kept_as_written(path, tmp_path)
    before = hcclcollectives.of_session(path)
    output = os.path.join(path, deliverables.ASCEND_OUTPUT)
    output_files.write_communication(output, collectives()[:4], [STEP])  # parsed again
    assert keptreading.unchanged(path, kept) is None
    again = keptreading.of_session(path, kept).collectives
    assert again == hcclcollectives.of_session(path) and again != before and again is not None and len(again) == 4


def test_a_reading_of_another_shape_is_not_taken(tmp_path):
    """Another version's reading, or columns of operations that do not agree, is read again."""
    path = parsed(str(tmp_path), "text")
    kept = kept_as_written(path, tmp_path)
    columns = kept["collectives"]
    assert keptreading.unchanged(path, {**kept, "version": keptreading.VERSION + 1}) is None
    for changed in (
        {"runs": [[step, group, count + 1] for step, group, count in columns["runs"]]},  # more than the keys
        {"runs": [[step, 1, count] for step, _, count in columns["runs"]]},  # a group not named
        {"runs": [[step, -1, count] for step, _, count in columns["runs"]]},
        {"keys": columns["keys"].rsplit("\n", 1)[0]},  # a key short
        {"waits": columns["waits"][:-4]},  # not a whole number of floats
        {"starts": "not base64!"},
        {"keys": None},
    ):
        assert keptreading.unchanged(path, {**kept, "collectives": {**columns, **changed}}) is None, changed
    assert keptreading.unchanged(path, None) is None


def test_a_reading_kept_by_the_tool_before_is_read_again_never_misread(tmp_path):
    """Version 1 kept the operations as a list of lists (here made up, waits doubled): this tool
    reads that session's files instead."""
    path = parsed(str(tmp_path), "text")
    kept = kept_as_written(path, tmp_path)
    whole = hcclcollectives.of_session(path)
    items = [[key.rsplit("@", 1)[0], 0, step, 2 * wait, start] for key, _, step, wait, start in whole]
    older = {key: value for key, value in kept.items() if key != "collectives"}
    older.update(version=1, source=whole.source, groups=[GROUP], items=items)
    assert keptreading.unchanged(path, older) is None
    assert keptreading.of_session(path, older).collectives == whole


def test_the_columns_give_back_the_very_operations():
    """Every float back bit for bit (through JSON, as the aftercare result keeps them), each key,
    group and step in its place; a key that would split a column is not kept so."""
    ops = hcclcollectives.Read(
        [("a@g", "g", 3, 0.1 + 0.2, 1764936002.0338445), ("b@h", "h", 3, 5e-324, -0.0), ("c@g", "g", 4, 1e300, 2.5)]
    )
    ops.source = hcclcollectives.COMMUNICATION
    back = keptreading.unpacked(json.loads(json.dumps(keptreading.packed(ops))))
    assert back == ops and repr(back) == repr(ops) and back.source == ops.source
    none = keptreading.unpacked(json.loads(json.dumps(keptreading.packed(hcclcollectives.Read()))))
    assert none == []
    assert keptreading.packed(hcclcollectives.Read([("a\nb@g", "g", 3, 0.1, 0.2)])) is None


@pytest.mark.parametrize(
    ("content", "problem"),
    [("[]", "holds no events"), ('[{"ph": "X", "name": "a"}, {"ph": "X"', "not readable JSON")],
)
def test_a_trace_view_without_events_is_told_with_a_reading_kept_before_or_after(tmp_path, content, problem):
    """Empty or cut short when the aftercare read it: not vouched for, so read and told again;
    sound then and emptied since: the reading no longer holds."""
    path = parsed(str(tmp_path), "text")
    trace = os.path.join(path, deliverables.ASCEND_OUTPUT, deliverables.TRACE_VIEW)
    sound = kept_as_written(path, tmp_path)
    with open(trace, "w") as handle:
        handle.write(content)
    broken = kept_as_written(path, tmp_path)
    assert deliverables.TRACE_VIEW not in broken["passed"]
    for kept in (sound, broken):
        found = deliverables.check_ascend_dir(path, ("text",), sound=keptreading.of_session(path, kept).sound)
        assert found == deliverables.check_ascend_dir(path, ("text",))
        assert len(found) == 1 and found[0].startswith(f"{trace}: {problem}"), found


def test_a_db_lacking_a_table_or_not_sqlite_is_told_with_a_reading_kept(tmp_path):
    path = parsed(str(tmp_path), "db")
    db = os.path.join(path, deliverables.ASCEND_OUTPUT, output_files.db_name(0))
    with sqlite3.connect(db) as connection:
        connection.execute("DELETE FROM NPU_INFO")
    connection.close()
    kept = keptreading.of_session(path, kept_as_written(path, tmp_path)).sound
    assert kept.db_tables, "it passed PRAGMA quick_check: its tables are kept"
    found = deliverables.check_ascend_dir(path, ("db",), sound=kept)
    assert found == deliverables.check_ascend_dir(path, ("db",)) == [f"{db}: table NPU_INFO is missing or empty"]
    with open(db, "wb") as handle:
        handle.write(b"not a database, " * 512)
    reading = kept_as_written(path, tmp_path)
    assert reading["db_tables"] == {}
    found = deliverables.check_ascend_dir(path, ("db",), sound=keptreading.of_session(path, reading).sound)
    assert found == deliverables.check_ascend_dir(path, ("db",)) and len(found) == 1, found


def test_a_session_without_parse_output_keeps_nothing(tmp_path):
    path = session(str(tmp_path), parsed=False)
    assert keptreading.read(path) is None


def test_deep_reads_the_session_again_and_otherwise_the_kept_reading_is_what_is_judged(tmp_path):
    """The report's row takes the HCCL operations from the aftercare's reading while the files are
    unchanged (a reading made up here, to tell the two apart), and from the files under --deep."""
    path = parsed(str(tmp_path), "text")
    rel = os.path.basename(path)
    made_up = kept_as_written(path, tmp_path)
    found = keptreading.unpacked(made_up["collectives"])
    doubled = hcclcollectives.Read((key, group, step, wait * 2, start) for key, group, step, wait, start in found)
    doubled.source = found.source
    made_up["collectives"] = keptreading.packed(doubled)
    files.write_json(str(tmp_path / "care.json"), {"status": "done", keptreading.RESULT_KEY: {rel: made_up}})
    record = {"backend": "npu", "options": {}, "windows": [{"traces": [rel], "aftercare": "care.json"}]}
    taken = {}
    for reread in (False, True):
        process = {"profiler_steps": 0}
        problems, _, _ = windowcheck.check(record, str(tmp_path), process, {}, deep=True, reread=reread)
        assert problems == [] and process["collectives_read"] == [hcclcollectives.COMMUNICATION]
        taken[reread] = process[lockstep.COLLECTIVES]
    assert taken[True] == hcclcollectives.of_session(path)
    assert [wait for *_, wait, _ in taken[False]] == [2 * wait for *_, wait, _ in taken[True]]
