"""Running jobs from the tests: the real launcher (``npuprof``), the same Python without it (``python``,
and ``bare_run``, kept once per suite), the job scripts of tests/scripts, and one real run shared by
the tests that assert on it (``once``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from suggestions import accepted, suggestions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "scripts")
PYTHON = sys.executable


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without any NPU_PROF_* variable or hook path of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPU_PROF_", "_NPU_PROF_"))}
    env.pop("PYTHONPATH", None)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def npuprof(
    args: list[str], cwd: str | None = None, env: dict[str, str] | None = None, timeout: float = 300, **kwargs
) -> subprocess.CompletedProcess:
    """Run ``npuprof-run ARGS`` (the real launcher, as a subprocess) and capture its output; every
    command it suggests (``npuprof: next: ...``) must be one the tool accepts."""
    result = subprocess.run(
        [PYTHON, "-m", "npuprof_launch", *args],
        cwd=cwd,
        env=clean_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )
    if isinstance(result.stdout, str) and isinstance(result.stderr, str):
        for suggestion in suggestions(result.stdout + result.stderr):
            accepted(suggestion)
    return result


def python(args: list[str], cwd: str | None = None, env: dict[str, str] | None = None, timeout: float = 300):
    """Run the same Python without the launcher (a probe, or a job whose output is compared)."""
    return subprocess.run(
        [PYTHON, *args],
        cwd=cwd,
        env=clean_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


#: Where bare runs are kept for the whole suite (all xdist workers), set by conftest's ``_bare_runs`` fixture.
BARE_DIR: list[str] = []


def bare_run(args: list[str], cwd: str | None = None, env: dict[str, str] | None = None, timeout: float = 300):
    """The job without the launcher, for the bit-identical comparisons: run once per suite for the
    same command, folder and environment, and shared by every test (on any worker) that compares
    against it. A bare job's output does not depend on which test asks: the comparison itself holds
    it to that, since the profiled run must print the same. Of the suite's 99 bare runs that name no
    test's own folder, 17 repeated another's (benchmarks/suite.py --keep lists each test's commands)."""
    env = clean_env() if env is None else env
    if not BARE_DIR:
        return python(args, cwd=cwd, env=env, timeout=timeout)
    import fcntl
    import hashlib

    # pytest's own variables name the test that asks (PYTEST_CURRENT_TEST), not the job.
    job_env = {k: v for k, v in env.items() if not k.startswith("PYTEST_")}
    key = hashlib.sha256(json.dumps([args, cwd, sorted(job_env.items())]).encode()).hexdigest()[:24]
    path = os.path.join(BARE_DIR[0], key)
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second worker asking for the same job waits for the first
        if os.path.exists(path + ".json"):
            with open(path + ".json") as handle:
                kept = json.load(handle)
            return subprocess.CompletedProcess([PYTHON, *args], kept["returncode"], kept["stdout"], kept["stderr"])
        result = python(args, cwd=cwd, env=env, timeout=timeout)
        with open(path + ".tmp", "w") as handle:
            json.dump({"returncode": result.returncode, "stdout": result.stdout, "stderr": result.stderr}, handle)
        os.replace(path + ".tmp", path + ".json")
        return result


def script(name: str) -> str:
    return os.path.join(SCRIPTS, name)


def assert_ok(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


_ONCE: dict = {}


def once(key, make):
    """``make()``, made once per test process for ``key``: one real run shared by the tests that
    assert on it. A parametrized module fixture is set up again each time the order of the tests
    (xdist's, not the file's) comes back to a parameter: a 4-rank torchrun job ran 4 times for 2."""
    if key not in _ONCE:
        _ONCE[key] = make()
    return _ONCE[key]
