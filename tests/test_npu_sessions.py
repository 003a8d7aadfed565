"""The paths only real NPU output reaches, end to end: the real launcher, real torchrun (gloo on the
CPU) and the torch_npu stand-in, which writes the session directories torch_npu writes (names,
profiler_info_{rank}.json, ASCEND_PROFILER_OUTPUT/ of the export type, logs/, analyse.done).

Each window is exported (the session directory found as the worker's), moved home from
--stage-dir whole, recorded and reported; --check passes. Until 2026-12-04 every one of these runs
failed on a real Ascend machine and no test saw it, because the stand-in wrote nothing.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time

import pytest
from answers import check_json, texts
from compare import profiled_against_bare, rank_lines
from jobs import PYTHON, assert_ok, clean_env, npuprof, script
from npu_standin import calls, standin_env
from outputs import status_records

from npuprof_launch.common import deliverables, hcclcollectives, keptreading, names
from npuprof_launch.inprocess import session as inprocess_session

DDP = script("ddp_train.py")
TRAIN = script("train_loop.py")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
RANKS = 4
DDP_STEPS = "8"


def sessions(out: str) -> list[str]:
    return sorted(glob.glob(os.path.join(out, "*" + names.ASCEND_DIR_SUFFIX)))


def window_steps_in(session: str) -> list[str]:
    """The ProfilerStep# events of a session's trace_view.json (text export)."""
    with open(os.path.join(session, deliverables.ASCEND_OUTPUT, deliverables.TRACE_VIEW)) as handle:
        events = json.load(handle)
    return sorted(e["name"] for e in events if str(e.get("name", "")).startswith(deliverables.STEP_PREFIX))


def aftercare_results(out: str) -> list[dict]:
    found = []
    for path in sorted(glob.glob(os.path.join(out, names.STATUS_DIR, "windows", "*.json"))):
        with open(path) as handle:
            found.append(json.load(handle))
    return found


@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory):
    """4 DDP ranks under torchrun, --backend npu, both export types, two windows a rank (steps 2
    and 5), staged on another folder and moved home."""
    base = tmp_path_factory.mktemp("npu4")
    out, stage = str(base / "out"), str(base / "stage")
    record = str(base / "torch_npu_calls.jsonl")
    flags = ["--backend", "npu", "--export-type", "text,db", "--stage-dir", stage]
    flags += ["--skip-first", "1", "--wait", "2", "--active", "1", "--repeat", "2"]
    job = [*TORCHRUN[1:], "--nproc_per_node", str(RANKS), DDP, "--steps", DDP_STEPS]
    # Each rank's results unchanged (the bare job runs without the stand-in on its path).
    runs = profiled_against_bare(
        job,
        ["--output-dir", out, *flags],
        env=standin_env(record),
        bare_env=clean_env(),
        compare=[("stdout", rank_lines)],
    )
    return out, stage, record, runs.profiled


@pytest.mark.xdist_group("npu_sessions")
def test_four_ranks_every_window_exported_moved_home_and_reported(four_ranks):
    out, stage, record, result = four_ranks
    assert "exporting a trace failed" not in result.stderr, result.stderr

    records = sorted(status_records(out), key=lambda r: r["rank"])
    assert [r["rank"] for r in records] == list(range(RANKS))
    found = sessions(out)
    assert len(found) == RANKS * 2, found
    for status in records:
        assert status["state"] == "done" and status["windows_completed"] == 2, status
        mine = [path for path in found if os.path.basename(path).startswith(status["worker"] + "_")]
        assert sorted(os.path.join(out, rel) for rel in status["traces"]) == mine, "each session the worker's own"
        for window, session in zip(status["windows"], mine):
            assert window["traces"] == [os.path.relpath(session, out)]
            assert window["staged"] and all(path.startswith(stage) for path in window["staged"])
            assert os.path.isfile(os.path.join(session, f"profiler_info_{status['rank']}.json"))
            assert deliverables.check_ascend_dir(session, ("text", "db")) == []
            assert glob.glob(os.path.join(session, deliverables.ASCEND_OUTPUT, "ascend_pytorch_profiler_*.db"))
        assert [window_steps_in(session) for session in mine] == [["ProfilerStep#4"], ["ProfilerStep#7"]]
    assert sessions(stage) == [], "nothing left in the stage directory"
    for care in aftercare_results(out):
        assert care["status"] == "done" and care["left"] == [] and care["errors"] == [], care
        (rel,) = care["traces"]
        session = os.path.join(out, rel)
        kept = keptreading.unchanged(session, care[keptreading.RESULT_KEY][os.path.basename(rel)])
        assert kept is not None, "read where the session ended up: --check takes it"
        assert kept.collectives == hcclcollectives.of_session(session) and kept.collectives
    assert len(calls(record, "trace_handler")) == RANKS * 2

    code, report = check_json(out)
    assert code == 0 and report["passed"], report["problems"]
    assert report["problems"] == [] and report["raw_kept"] is None
    assert [p["rank"] for p in report["processes"]] == list(range(RANKS))
    assert all(p["top_operators"] for p in report["processes"]), "the operators come from op_statistic.csv"
    assert f"{RANKS} processes profiled" in result.stderr and f"{RANKS * 2} of {RANKS * 2} windows" in result.stderr
    assert "no status record accounts for" not in result.stderr


@pytest.fixture(scope="module")
def kept_raw(tmp_path_factory):
    """--no-analyse: raw data only, to parse later with --analyse DIR."""
    base = tmp_path_factory.mktemp("npuraw")
    out, record = str(base / "out"), str(base / "torch_npu_calls.jsonl")
    started = time.monotonic()
    flags = ["--backend", "npu", "--no-analyse", "--skip-first", "1", "--active", "2"]
    result = npuprof(["--output-dir", out, *flags, "--", PYTHON, TRAIN, "--steps", "6"], env=standin_env(record))
    return out, record, result, time.monotonic() - started


@pytest.mark.xdist_group("npu_sessions")
def test_raw_data_kept_ends_with_the_job_and_is_told_as_kept(kept_raw):
    """Nothing waits for a parse --no-analyse did not ask for: the aftercare waited 600 s for an
    analyse.done, the job's exit 120 s for the aftercare, and the launcher 120 s more."""
    out, record, result, took = kept_raw
    assert_ok(result)
    assert took < inprocess_session.AFTERCARE_WAIT_S, f"the run took {took:.0f} s"
    (care,) = aftercare_results(out)
    assert care["status"] == "done" and care["errors"] == []
    (session,) = sessions(out)
    assert deliverables.unparsed(session) and os.path.isfile(os.path.join(session, "profiler_info.json"))
    assert calls(record, "trace_handler")[0]["analyse_flag"] is False
    code, report = check_json(out)
    assert code == 0 and report["problems"] == [], report["problems"]
    assert report["raw_kept"] == {"sessions": 1, "command": f"npuprof-run --analyse {out}"}
    said = "npuprof: 1 NPU session kept as raw data, unparsed as --no-analyse asked; "
    said += f"npuprof-run --analyse {out} parses it"
    assert said in result.stderr.splitlines(), result.stderr
    with open(os.path.join(out, "npuprof_report.html")) as handle:
        page = handle.read()
    assert "<b>Raw NPU data</b>: 1 session kept unparsed" in page and f"npuprof-run --analyse {out}" in page


@pytest.mark.xdist_group("npu_sessions")
def test_raw_data_parsed_afterwards_with_analyse_dir(kept_raw):
    out, record, _, _ = kept_raw
    parsed = npuprof(["--analyse", out], env=standin_env(record))
    assert_ok(parsed)
    assert "analyse passed" in parsed.stdout
    (session,) = sessions(out)
    assert not deliverables.unparsed(session) and window_steps_in(session) == ["ProfilerStep#2", "ProfilerStep#3"]
    code, report = check_json(out)
    assert code == 0 and report["raw_kept"] is None, report


@pytest.mark.parametrize("version", ["2.14.0", "2.4.0"])
def test_an_async_parse_is_waited_for_before_the_session_moves(tmp_path, version):
    """--async-mode: torch_npu parses in a process of its own after the window's step; the aftercare
    waits for it (analyse.done, or every deliverable in releases without the marker) and moves the
    whole parsed session home. 2.4.0 has no async_mode: it parses in the step, said once."""
    out, stage, record = str(tmp_path / "out"), str(tmp_path / "stage"), str(tmp_path / "calls.jsonl")
    flags = ["--backend", "npu", "--async-mode", "--stage-dir", stage, "--skip-first", "1", "--active", "2"]
    env = standin_env(record, version=version, TORCH_NPU_STANDIN_PARSE_S="1")
    result = npuprof(["--output-dir", out, *flags, "--", PYTHON, TRAIN, "--steps", "6"], env=env)
    assert_ok(result)
    (session,) = sessions(out)
    assert sessions(stage) == []
    assert deliverables.check_ascend_dir(session, ("text",)) == []
    done = os.path.join(session, deliverables.ASCEND_OUTPUT, deliverables.ANALYSE_DONE)
    assert os.path.exists(done) == (version != "2.4.0"), "analyse.done came with 2.7.1.post11 and later"
    # 2.4.0 has no step offset either: its steps are numbered from 0 in each window, as it does alone.
    steps = ["ProfilerStep#0", "ProfilerStep#1"] if version == "2.4.0" else ["ProfilerStep#2", "ProfilerStep#3"]
    assert window_steps_in(session) == steps
    said = [line for line in result.stderr.splitlines() if line.startswith("npuprof: --async-mode:")]
    assert len(said) == (1 if version == "2.4.0" else 0), result.stderr
    code, report = check_json(out)
    assert code == 0, report["problems"]


def test_a_parse_that_logs_an_error_fails_check_with_its_line(out, tmp_path):
    """torch_npu's parse workers log to the session's logs/; an [ERROR] there is the parse's failure."""
    record = str(tmp_path / "calls.jsonl")
    problem = "Failed to parsing profiling data: CANN's msprof exited with 1"
    env = standin_env(record, TORCH_NPU_STANDIN_ERROR=problem)
    result = npuprof(["--output-dir", out, "--backend", "npu", "--", PYTHON, TRAIN, "--steps", "4"], env=env)
    assert_ok(result)
    (session,) = sessions(out)
    assert deliverables.npu_log_errors(session), "the stand-in logged it where torch_npu does"
    code, report = check_json(out)
    assert code == 1
    told = [p for p in texts(report["problems"]) if problem in p]
    assert len(told) == 1 and "torch_npu logged:" in told[0], "told once, as the parse's log has it"


def test_a_restarted_worker_has_sessions_of_its_own(out, tmp_path):
    """A torchelastic restart: the new attempt's worker (its own pid, ``_restart1``) finds its own
    session directories, never the failed attempt's."""
    record = str(tmp_path / "calls.jsonl")
    command = [*TORCHRUN, "--nproc_per_node", "1", "--max-restarts", "1", DDP, "--fail-once"]
    result = npuprof(["--output-dir", out, "--backend", "npu", "--", *command], env=standin_env(record))
    assert_ok(result)
    records = sorted(status_records(out), key=lambda r: r["attempt"])
    assert [r["attempt"] for r in records] == [0, 1]
    assert records[1]["worker"].endswith("_restart1")
    found = sessions(out)
    assert len(found) == 2
    for status in records:
        (rel,) = status["traces"]
        assert os.path.basename(rel).startswith(status["worker"] + "_")
    code, report = check_json(out)
    assert code == 0, report["problems"]
    assert [(p["attempt"], p["rank"]) for p in report["processes"]] == [(0, 0), (1, 0)]


def test_a_parse_without_its_marker_is_waited_for_until_its_session_stands_still(tmp_path):
    """A session whose deliverables are there but whose parse still writes (its later steps' logs,
    no analyse.done yet, or a release that writes none): the aftercare moves it only once it stood
    still (aftercare.PARSE_QUIET_S), never under a writer; seen under a loaded suite, the stage kept
    logs/ of two parse steps that came after the move."""
    import threading

    from npu_layout import session

    from npuprof_launch.inprocess import aftercare

    path = session(str(tmp_path))
    assert deliverables.parsed_enough(path)
    late = os.path.join(path, "logs", "profiler_20260101120001_4243_CommunicationParser.log")
    started = threading.Event()

    def later_step() -> None:
        started.wait()
        time.sleep(0.5)
        os.makedirs(os.path.dirname(late), exist_ok=True)
        with open(late, "w") as handle:
            handle.write("2026-01-01 12:00:01 [INFO] CommunicationParser done\n")

    writer = threading.Thread(target=later_step)
    writer.start()
    started.set()
    aftercare._wait_for_parse(path)
    assert os.path.exists(late), "the wait returned while the parse still wrote"
    writer.join()
