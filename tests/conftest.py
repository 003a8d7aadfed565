"""pytest's hooks and fixtures for the suite: the number of xdist workers, the fast tier's mark,
the ``out`` folder, the folder of the bare runs shared by all workers, and the timeline
benchmarks/suite.py reads. The helpers the tests import are plain modules beside this file, on
sys.path as this file's folder is (pytest's rootdir conftest, imported in "prepend" mode):
``jobs`` (running jobs, with and without the launcher), ``compare`` (a profiled run held to the
bare job's), ``outputs`` (traces and status records), ``answers`` (``--check --json``) and
``suggestions`` (the commands the tool suggests)."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import jobs
import pytest

# A suite started in the background by a non-interactive shell (`.ci/run &`, nohup) inherits SIGINT
# ignored, and passes that on to every job it launches: the Ctrl-C tests would then find a job
# that cannot be interrupted. A handler of ours is reset to the default in each child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session", autouse=True)
def _bare_runs(tmp_path_factory) -> None:
    """The folder of ``bare_run``'s runs: beside the workers' own temporary folders under xdist (their
    common parent is this suite's alone, and pytest removes it with its old ones), in the session's
    otherwise."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "bare-runs"
    folder.mkdir(exist_ok=True)
    jobs.BARE_DIR[:] = [str(folder)]


UNIT_DIR = os.path.join(jobs.ROOT, "tests", "unit")


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto`` (pyproject's addopts): half as many workers again as cores, at least two.

    Most of a test's time is a job in a subprocess that waits (for torch's import to be read from
    disk, a window's export, a poll, a rank's peer): one worker per core left the CPU idle half
    the time (1,600 s of CPU in 1,660 s of wall on 2 cores, run serially)."""
    return max(2, (os.cpu_count() or 1) * 3 // 2)


def pytest_collection_modifyitems(items) -> None:
    """``tests/unit`` is the fast tier (``pytest -m fast``): in-process tests of the pure parts, no
    subprocess, no torch, under a minute in all; the inner loop of a change runs it first."""
    for item in items:
        if str(item.path).startswith(UNIT_DIR + os.sep):
            item.add_marker(pytest.mark.fast)


@pytest.fixture
def out(tmp_path) -> str:
    return str(tmp_path / "out")


#: ``benchmarks/suite.py`` sets it: each test's start, end and worker go to this file, one JSON a line.
TIMELINE = os.environ.get("NPUPROF_SUITE_TIMELINE")
#: The commands a test started (with the timeline): which jobs the suite runs more than once.
_CALLS: list = []
if TIMELINE:
    _popen_init = subprocess.Popen.__init__

    def _recording_init(self, args, *more, **kwargs):
        env = kwargs.get("env") or {}
        _CALLS.append(
            {
                "argv": [str(a) for a in args] if isinstance(args, (list, tuple)) else str(args),
                "cwd": str(kwargs.get("cwd") or ""),
                "env": {k: v for k, v in env.items() if k.startswith(("NPU_PROF", "PYTHONPATH"))},
            }
        )
        _popen_init(self, args, *more, **kwargs)

    subprocess.Popen.__init__ = _recording_init


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Where the suite's time goes (benchmarks/suite.py reads it): which worker ran which test
    from when to when, so that a long group on one worker or idle workers at the end show."""
    if not TIMELINE:
        yield
        return
    import resource
    import time

    def cpu() -> float:
        used = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return sum(usage.ru_utime + usage.ru_stime for usage in used)

    started, cpu_before = time.time(), cpu()
    _CALLS.clear()
    yield
    line = {
        "test": item.nodeid,
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "start": started,
        "end": time.time(),
        # The CPU of the test and of the processes it started and waited for (a loaded machine
        # stretches the wall time of a test, much less its CPU time).
        "cpu": cpu() - cpu_before,
        "group": next((m.args[0] for m in item.iter_markers("xdist_group") if m.args), None),
        "calls": list(_CALLS),
    }
    with open(TIMELINE, "a") as handle:
        handle.write(json.dumps(line) + "\n")
