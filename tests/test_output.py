"""Big jobs' output without risk: compressed traces, local staging, size guards, the
profiler's own errors. Real runs, a real tmpfs where the test may mount one, real signals."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from answers import answer_json, check_json
from compare import profiled_against_bare
from jobs import assert_ok, clean_env, npuprof, script
from outputs import status_records, torch_traces

from npuprof_launch.common import deliverables
from npuprof_launch.inprocess import aftercare
from npuprof_launch.inprocess.backends.torch import kineto_lines

TRAIN = script("train_loop.py")


def test_traces_are_compressed_off_the_step_and_still_hold_the_asked_for_steps(out):
    profiled_against_bare([TRAIN, "--steps", "8"], ["--skip-first", "2", "--active", "3"], out=out)
    (trace,) = torch_traces(out)
    assert trace.endswith(".pt.trace.json.gz")
    assert deliverables.count_profiler_steps(trace) == 3
    (record,) = status_records(out)
    assert record["traces"] == [os.path.relpath(trace, out)]
    code, report = check_json(out)
    assert code == 0, report["problems"]
    (process,) = report["processes"]
    plain = subprocess.run(["gzip", "-dc", trace], capture_output=True).stdout
    assert process["window_bytes"] == [os.path.getsize(trace)] and os.path.getsize(trace) < 0.2 * len(plain)


def test_no_gzip_keeps_plain_json(out):
    assert_ok(npuprof(["--no-gzip", "--output-dir", out, "--", sys.executable, TRAIN, "--steps", "4"]))
    (trace,) = torch_traces(out)
    assert trace.endswith(".pt.trace.json")


@pytest.fixture
def other_filesystem(tmp_path):
    """An output directory on another filesystem: a tmpfs mounted here when allowed, else a plain folder."""
    target = tmp_path / "home"
    target.mkdir()
    mounted = (
        os.geteuid() == 0
        and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(target)]).returncode == 0
    )
    yield str(target), mounted
    if mounted:
        subprocess.run(["umount", str(target)])


def test_stage_dir_moves_every_window_home_and_the_record_says_where(tmp_path, other_filesystem):
    home, _ = other_filesystem
    stage = tmp_path / "stage"
    out = os.path.join(home, "out")
    result = npuprof(
        ["--stage-dir", str(stage), "--skip-first", "1", "--active", "1", "--repeat", "2", "--wait", "1"]
        + ["--output-dir", out, "--", sys.executable, TRAIN, "--steps", "8"]
    )
    assert_ok(result)
    assert len(torch_traces(out)) == 2, "both windows are home"
    assert torch_traces(str(stage)) == [], "nothing is left in the stage directory"
    (record,) = status_records(out)
    for window in record["windows"]:
        assert all(path.startswith(str(stage)) for path in window["staged"]), window
        assert all(os.path.isfile(os.path.join(out, trace)) for trace in window["traces"]), window
    code, report = check_json(out)
    assert code == 0, report["problems"]


def test_sigterm_during_a_move_leaves_every_file_whole_in_one_place(tmp_path, other_filesystem):
    """An NPU session directory of many files moved home by a real aftercare process, stopped by
    SIGTERM as soon as the first file arrived: each file is whole in the stage or at home, once."""
    home_dir, mounted = other_filesystem
    stage, home = tmp_path / "stage", tmp_path / home_dir
    session = stage / "host_rank0_pid1_1_ascend_pt"
    (session / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (session / "ASCEND_PROFILER_OUTPUT" / "analyse.done").write_text("")
    contents = {}
    for index in range(600):
        path = session / "PROF_1" / f"data{index}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = os.urandom(64 * 1024)
        path.write_bytes(data)
        contents[os.path.relpath(path, stage)] = hashlib.sha256(data).hexdigest()
    command = aftercare.command(
        traces=[str(session)],
        result=str(tmp_path / "result.json"),
        kind="npu",
        gzip_traces=False,
        stage=str(stage),
        home=str(home),
    )
    child = subprocess.Popen(command, env=clean_env())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any((home / "host_rank0_pid1_1_ascend_pt").rglob("data*.bin")):
        time.sleep(0.001)
    child.send_signal(signal.SIGTERM)
    child.wait(timeout=60)
    found = {"home": 0, "stage": 0}
    for relative, digest in contents.items():
        places = [
            (name, base / relative) for name, base in (("home", home), ("stage", stage)) if (base / relative).exists()
        ]
        assert len(places) == 1, f"{relative} is in {places}"
        name, path = places[0]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"{relative} is not whole"
        found[name] += 1
    assert [p for p in home.rglob("*") if p.name.startswith(aftercare.PARTIAL_PREFIX)] == []
    if mounted:  # copies across filesystems take long enough for the signal to land mid-move
        assert found["home"] and found["stage"], found


def test_kineto_lines_go_to_the_record_and_the_jobs_own_lines_stay():
    noted = []
    read, write = os.pipe()
    saved = os.dup(2)
    os.dup2(write, 2)
    try:
        with kineto_lines(lambda kind, text: noted.append((kind, text))):
            os.write(2, b"USDT:2026-12-01 1:1 SyncActivityProfilerHandler.cpp:52] profiler_start\n")
            os.write(2, b"[W1201 10:00:00.000 collection.cpp:664] Warning: Optimizer.step#SGD.step\n")
            os.write(2, b"ERROR:2026-12-01 1:1 CuptiActivityApi.cpp:123] CUPTI_ERROR_NOT_INITIALIZED\n")
            os.write(2, b"the job's own line\n")
    finally:
        os.dup2(saved, 2)
        os.close(write)
    passed_through = os.read(read, 4096)
    os.close(read)
    assert [kind for kind, _ in noted] == ["warning", "error"]
    assert passed_through == b"the job's own line\n"


def test_check_over_a_big_output_shows_progress_on_stderr_and_keeps_json_clean(tmp_path):
    """200 ranks of 1 MB traces read again (deep) take several seconds: a progress line says how
    many processes are read and about how long is left, on stderr only."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    import synthetic_output

    synthetic_output.write_output(str(tmp_path), 200, 1.0)
    result = npuprof(["--check", str(tmp_path), "--json", "--deep"])
    assert result.returncode == 0, result.stderr
    report = answer_json(result.stdout)
    assert len(report["processes"]) == 200
    lines = [line for line in result.stderr.splitlines() if "processes" in line]
    assert lines, result.stderr
    assert re.fullmatch(r"npuprof: reading the output and every trace: 200/200 processes in \d+ s", lines[-1])
    if len(lines) > 1:
        assert re.fullmatch(r"npuprof: .*: \d+/200 processes, about \d+ (s|min) left", lines[0]), lines


def test_a_training_loop_on_a_thread_is_profiled_without_a_false_profiler_error(out, tmp_path):
    """Kineto prints "ERROR: External init callback must run in same thread as registerClient"
    when a profiler starts on another thread than the one that imported torch (a hand-written
    one does too); the trace is whole, so it is no error of the profiler's, and --check passes."""
    job = tmp_path / "thread_train.py"
    job.write_text(
        "import threading, torch\n"
        "def train():\n"
        "    m = torch.nn.Linear(16, 1); opt = torch.optim.SGD(m.parameters(), lr=0.01)\n"
        "    for _ in range(8):\n"
        "        m(torch.randn(8, 16)).pow(2).mean().backward(); opt.step(); opt.zero_grad()\n"
        "t = threading.Thread(target=train); t.start(); t.join()\n"
        "print('done')\n"
    )
    result = npuprof(["--skip-first", "2", "--active", "2", "--output-dir", out, "--", sys.executable, str(job)])
    assert_ok(result)
    assert "External init callback" not in result.stderr
    code, report = check_json(out)
    assert code == 0, report["problems"]
    (process,) = report["processes"]
    assert [(w["first_step"], w["last_step"], w["complete"]) for w in process["windows"]] == [(3, 4, True)]
