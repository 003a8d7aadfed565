"""The aftercare processes of a session (aftercarejobs.py), with a stand-in for subprocess.Popen:
what is started for a saved window, what the record learns when it ends, the bounded wait."""

from __future__ import annotations

import os
import subprocess

from npuprof_launch.inprocess import aftercare
from npuprof_launch.inprocess.aftercarejobs import AftercareJobs


class Process:
    """Stands in for a Popen: running until ``done``; ``wait`` may raise like a timeout does."""

    def __init__(self, pid: int, raises: bool = False) -> None:
        self.pid, self.done, self.raises, self.waited = pid, False, raises, []

    def poll(self):
        return 0 if self.done else None

    def wait(self, timeout=None):
        self.waited.append(timeout)
        if self.raises:
            raise subprocess.TimeoutExpired("aftercare", timeout)
        self.done = True
        return 0


class Backend:
    def __init__(self, name: str = "torch", aftercare: bool = True) -> None:
        self.name, self.aftercare = name, aftercare


def jobs(tmp_path, stage_root=None) -> tuple[AftercareJobs, list[str]]:
    warnings: list[str] = []
    status = os.path.join(str(tmp_path), "npuprof_status", "rank0.1.json")
    return AftercareJobs(status, str(tmp_path), stage_root, warnings.append), warnings


def popen_standin(monkeypatch, started: list, error: Exception | None = None):
    def popen(args, **kwargs):
        if error is not None:
            raise error
        process = Process(pid=4000 + len(started))
        started.append((args, kwargs, process))
        return process

    monkeypatch.setattr(subprocess, "Popen", popen)


def test_a_saved_window_starts_one_detached_aftercare_and_names_its_result(tmp_path, monkeypatch):
    made, warnings = jobs(tmp_path)
    started: list = []
    popen_standin(monkeypatch, started)
    result = {"first_step": 3, "last_step": 4}
    trace = str(tmp_path / "w.pt.trace.json")
    care = made.start([trace], 2, result, backend=Backend(), gzip=True)
    assert care == (os.path.join("npuprof_status", "windows", "rank0.1.window2.json"), 4000)
    ((args, kwargs, process),) = started
    assert args == aftercare.command(
        traces=[trace],
        result=str(tmp_path / "npuprof_status" / "windows" / "rank0.1.window2.json"),
        kind="torch",
        gzip_traces=True,
        stage=None,
        home=str(tmp_path),
    )
    assert kwargs["start_new_session"] and kwargs["close_fds"] and kwargs["stdin"] == subprocess.DEVNULL
    assert made.started == [(process, result)] and made and not warnings


def test_only_a_torch_trace_is_compressed_and_a_stage_is_moved_home(tmp_path, monkeypatch):
    made, _ = jobs(tmp_path, stage_root="/stage")
    started: list = []
    popen_standin(monkeypatch, started)
    made.start(["/stage/w"], 1, {}, backend=Backend(name="npu"), gzip=True)
    args = started[0][0]
    assert "--gzip" not in args and args[args.index("--stage") + 1] == "/stage" and args[-1] == "/stage/w"


def test_nothing_starts_without_files_or_for_a_backend_without_aftercare(tmp_path, monkeypatch):
    made, warnings = jobs(tmp_path)
    started: list = []
    popen_standin(monkeypatch, started)
    assert made.start([], 1, {}, backend=Backend(), gzip=False) is None
    assert made.start(["t"], 1, {}, backend=Backend(aftercare=False), gzip=False) is None
    assert made.start(["t"], 1, {}, backend=None, gzip=False) is None
    assert started == [] and not made and not warnings


def test_an_aftercare_that_cannot_start_is_said_and_the_window_stays(tmp_path, monkeypatch):
    made, warnings = jobs(tmp_path)
    popen_standin(monkeypatch, [], error=OSError("no fork"))
    assert made.start(["t"], 1, {}, backend=Backend(), gzip=False) is None
    assert warnings == ["the window's aftercare (summary, compression, move) could not start: OSError('no fork')"]
    assert not made


def test_the_last_step_beside_an_aftercare_is_the_count_when_it_is_seen_ended(tmp_path):
    made, _ = jobs(tmp_path)
    first, second = Process(1), Process(2)
    running = {"aftercare_steps": [5, None]}
    ended = {"aftercare_steps": [9, None]}
    made.started = [(first, running), (second, ended)]
    second.done = True
    made.note_ended(12)
    assert running["aftercare_steps"] == [5, None] and ended["aftercare_steps"] == [9, 12]
    first.done = True
    made.note_ended(20)
    assert running["aftercare_steps"] == [5, 20] and ended["aftercare_steps"] == [9, 12], "set once"


def test_the_end_waits_a_bounded_time_for_each_and_a_slow_one_goes_on_alone(tmp_path):
    made, _ = jobs(tmp_path)
    slow, quick = Process(1, raises=True), Process(2)
    slow_result, quick_result = {"aftercare_steps": [3, None]}, {"aftercare_steps": [6, None]}
    made.started = [(slow, slow_result), (quick, quick_result)]
    made.wait(30.0, 40)
    assert 0 < slow.waited[0] <= 30.0 and 0 <= quick.waited[0] <= slow.waited[0], "one deadline for all"
    assert slow_result["aftercare_steps"] == [3, None] and quick_result["aftercare_steps"] == [6, 40]


def test_a_file_is_named_where_its_aftercare_will_leave_it(tmp_path):
    plain, _ = jobs(tmp_path)
    assert plain.home_of("/out/w.pt.trace.json", gzip=True) == "/out/w.pt.trace.json.gz"
    assert plain.home_of("/out/w.pt.trace.json", gzip=False) == "/out/w.pt.trace.json"
    assert plain.home_of("/out/x_ascend_pt", gzip=True) == "/out/x_ascend_pt", "only torch traces are compressed"
    staged, _ = jobs(tmp_path, stage_root="/stage")
    assert staged.home_of("/stage/rl/w.pt.trace.json", gzip=False) == str(tmp_path / "rl" / "w.pt.trace.json")
