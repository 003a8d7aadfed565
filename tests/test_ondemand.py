"""On-demand windows of a running job, asked for with npuprof-run --trigger."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from compare import profiled_against_bare
from jobs import PYTHON, assert_ok, clean_env, npuprof, script
from outputs import status_records, step_counts

from npuprof_launch.common import names, ondemand

SERVE = script("serve.py")


def start_server(out: str, stop: str, *launcher_args: str, command: list[str] | None = None) -> subprocess.Popen:
    command = command or [sys.executable, SERVE, "--stop-file", stop]
    return subprocess.Popen(
        [
            PYTHON,
            "-m",
            "npuprof_launch",
            "--on-demand",
            "--target",
            "__main__:handle",
            "--output-dir",
            out,
            *launcher_args,
            "--",
            *command,
        ],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(predicate, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def stop_server(server: subprocess.Popen, stop: str) -> tuple[str, str]:
    with open(stop, "w"):
        pass
    return server.communicate(timeout=120)


@pytest.fixture
def stop(tmp_path) -> str:
    return str(tmp_path / "stop")


def test_nothing_until_triggered_then_one_trace_per_trigger(out, stop):
    server = start_server(out, stop)
    try:
        wait_for(lambda: status_records(out), "the server's first step")
        time.sleep(2)
        assert step_counts(out) == [], "no window opens by itself"
        first = npuprof(["--trigger", out, "--active", "3"])
        assert_ok(first)
        assert "taken by pid" in first.stdout
        wait_for(lambda: step_counts(out) == [3], "the first trace")
        second = npuprof(["--trigger", out, "--active", "2"])
        assert_ok(second)
        wait_for(lambda: sorted(step_counts(out)) == [2, 3], "the second trace")
        assert server.poll() is None, "the job keeps running"
    finally:
        stdout, stderr = stop_server(server, stop)
    assert server.returncode == 0, stderr
    assert stdout == "served\nstopped\n"
    (record,) = status_records(out)
    assert record["on_demand"] and len(record["requests"]) == 2
    assert record["windows_completed"] == 2 and record["state"] == "waiting"


def test_job_results_are_unchanged(out, stop, tmp_path):
    job = [SERVE, "--stop-file", stop, "--requests", "60"]

    def triggered_once() -> subprocess.CompletedProcess:
        """The server under the launcher, one window asked for while it serves its 60 requests."""
        server = start_server(out, stop, command=[sys.executable, *job])
        wait_for(lambda: status_records(out), "the server's first step")
        npuprof(["--trigger", out, "--active", "2"])
        stdout, stderr = server.communicate(timeout=120)
        return subprocess.CompletedProcess(server.args, server.returncode, stdout, stderr)

    profiled_against_bare(job, out=out, profiled=triggered_once)


def test_trigger_without_a_job_fails(out, tmp_path):
    os.makedirs(names.status_dir(out))
    result = npuprof(["--trigger", out, "--timeout", "1"])
    assert result.returncode == 1
    assert "no process took request" in result.stderr and "withdrawn" in result.stderr
    assert os.listdir(ondemand.requests_dir(out)) == []


def test_trigger_on_a_directory_no_job_writes_to(tmp_path):
    result = npuprof(["--trigger", str(tmp_path)])
    assert result.returncode == 2 and result.stderr.startswith("npuprof: --trigger")


def write_raw_request(out: str, name: str, content: str, uid: int | None = None, mode: int = 0o600) -> str:
    folder = ondemand.requests_dir(out)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ondemand.REQUEST_SUFFIX)
    with open(path, "w") as handle:
        handle.write(content)
    os.chmod(path, mode)
    if uid is not None:
        os.chown(path, uid, -1)
    return path


def request_text(**fields) -> str:
    request = {"id": "x", "active": 2, "warmup": 0, "wait": 0, "ranks": None, "created_ns": time.time_ns()}
    request.update(fields)
    return json.dumps(request)


def test_foreign_unsafe_and_malformed_requests_are_refused(out, stop):
    server = start_server(out, stop)
    try:
        wait_for(lambda: status_records(out), "the server's first step")
        if os.getuid() == 0:
            write_raw_request(out, "foreign", request_text(id="foreign"), uid=65534)
        write_raw_request(out, "groupwritable", request_text(id="groupwritable"), mode=0o660)
        write_raw_request(out, "malformed", '{"id": "malformed", "active": "lots"}')
        expected = ["writable by other users", "is malformed (active must be a whole number"]
        if os.getuid() == 0:
            expected.append("belongs to uid 65534")

        def refused_all():
            warnings = " ".join(status_records(out)[0]["warnings"])
            return all(text in warnings for text in expected)

        wait_for(refused_all, "the refusals in the status record", timeout=30)
        time.sleep(1)
        assert step_counts(out) == []
        assert status_records(out)[0]["requests"] == []
        assert_ok(npuprof(["--trigger", out, "--active", "1"]))
        wait_for(lambda: step_counts(out) == [1], "a good request still works after bad ones")
    finally:
        _, stderr = stop_server(server, stop)
    assert server.returncode == 0
    assert "belongs to uid" in stderr or os.getuid() != 0


def test_trigger_reaches_only_the_ranks_asked_for(out, stop):
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", SERVE, "--stop-file", stop]
    server = start_server(out, stop, command=torchrun)
    try:
        wait_for(lambda: len(status_records(out)) == 2, "both ranks' first steps")
        result = npuprof(["--trigger", out, "--active", "2", "--ranks", "1"])
        assert_ok(result)
        assert "taken by rank 1 " in result.stdout and "rank 0" not in result.stdout
        wait_for(lambda: step_counts(out) == [2], "rank 1's trace")
        time.sleep(1)
        assert step_counts(out) == [2]
    finally:
        _, stderr = stop_server(server, stop)
    assert server.returncode == 0, stderr
    by_rank = {record["rank"]: record for record in status_records(out)}
    assert by_rank[1]["windows_completed"] == 1 and by_rank[0]["requests"] == []


def test_on_demand_training_job(out, stop):
    """The optimizer clock under --on-demand: iterations are the steps of a triggered window."""
    train = [sys.executable, script("train_loop.py"), "--steps", "400", "--sleep", "0.02"]
    server = subprocess.Popen(
        [PYTHON, "-m", "npuprof_launch", "--on-demand", "--output-dir", out, "--", *train],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: status_records(out), "the first iteration")
    assert_ok(npuprof(["--trigger", out, "--active", "4", "--warmup", "1"]))
    wait_for(lambda: step_counts(out) == [4], "the triggered window")
    server.terminate()
    server.communicate(timeout=120)


def _windows_complete(out: str, count: int) -> bool:
    records = status_records(out)
    return len(records) == count and all(r["windows"] and r["windows"][0].get("complete") for r in records)


def test_a_trigger_to_ranks_of_different_speeds_records_the_same_steps_on_each(out, tmp_path):
    """The trigger picks a step no rank has reached (from their records): both windows cover it."""
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import os, signal, subprocess, sys\n"
        f"train = {script('train_loop.py')!r}\n"
        "children = [subprocess.Popen([sys.executable, train, '--steps', '3000', '--sleep', sleep],\n"
        "                              env={**os.environ, 'RANK': str(rank)})\n"
        "            for rank, sleep in ((0, '0.01'), (1, '0.02'))]\n"
        "# As torchrun does: a SIGTERM ends the workers too, which would otherwise hold the pipes open.\n"
        "signal.signal(signal.SIGTERM, lambda *_: [child.terminate() for child in children])\n"
        "sys.exit(max(child.wait() for child in children))\n"
    )
    launcher = subprocess.Popen(
        [PYTHON, "-m", "npuprof_launch", "--on-demand", "--output-dir", out, "--", sys.executable, str(driver)],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: len([r for r in status_records(out) if r["steps"] >= 16]) == 2, "both ranks stepping")
        taken = npuprof(["--trigger", out, "--active", "2"])
        assert_ok(taken)
        assert "opens its window at step" in taken.stdout
        wait_for(lambda: len(step_counts(out)) == 2, "a trace from each rank", timeout=120)
        # The trace is on disk a moment before the record says its window is complete: wait for the
        # record (a SIGTERM in between left rank 1's window recorded incomplete, its trace whole).
        wait_for(lambda: _windows_complete(out, 2), "both records' windows complete", timeout=120)
    finally:
        launcher.terminate()
        launcher.communicate(timeout=120)
    windows = [r["windows"][0] for r in sorted(status_records(out), key=lambda r: r["rank"])]
    assert windows[0]["first_step"] == windows[1]["first_step"] and windows[0]["last_step"] == windows[1]["last_step"]
    assert all(w["complete"] for w in windows), windows


def test_trigger_to_ranks_no_process_has_names_the_ranks_there(out, stop):
    """A job whose one process has no rank (it takes requests as rank 0): --ranks 1 would wait out
    its timeout and blame the job; it says at once which ranks there are."""
    server = start_server(out, stop)
    try:
        wait_for(lambda: status_records(out), "the server's first step")
        result = npuprof(["--trigger", out, "--ranks", "1", "--timeout", "60"])
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("npuprof: --ranks 1: no running process of this job has that rank; ")
        assert "the ranks it has: 0 (its processes have no rank: they take a request as rank 0)" in result.stderr
        assert not os.path.isdir(ondemand.requests_dir(out)) or os.listdir(ondemand.requests_dir(out)) == []
    finally:
        stop_server(server, stop)
    assert server.returncode == 0
