"""Shared helpers: run the real launcher in a subprocess and read what it wrote."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys

import pytest

from npuprof_launch.common import deliverables, names

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "scripts")
PYTHON = sys.executable

# A suite started in the background by a non-interactive shell (`.ci/run &`, nohup) inherits SIGINT
# ignored, and passes that on to every job it launches: the Ctrl-C tests would then find a job
# that cannot be interrupted. A handler of ours is reset to the default in each child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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


def suggestions(text: str) -> list[str]:
    """The commands a summary suggests (``npuprof: next: ...``), whole: a job's argument that holds a
    newline (``python -c 'CODE'``) is quoted over several lines, as a shell reads it pasted."""
    import shlex

    found, lines = [], text.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith(SUGGESTED):
            continue
        command = line[len(SUGGESTED) :]
        for more in lines[index + 1 :]:
            try:
                shlex.split(command)
                break
            except ValueError:  # a quotation still open: the argument goes on on the next line
                command += "\n" + more
        found.append(command)
    return found


#: How the summary prints a suggested next run.
SUGGESTED = f"{names.VOICE} next: "
EVAL = ('eval "$(', ')"')


def accepted(suggestion: str) -> tuple:
    """Read a suggested command with the tool's own parser and checks, as ``main`` would before it
    starts: ``npuprof-run OPTIONS -- COMMAND``, or the ``eval "$(npuprof-run --print-env ...)"``
    line of the variables' route. Returns (namespace, command, mode, config); fails the test with
    the tool's own words when the tool would refuse it (exit 2)."""
    import shlex

    from npuprof_launch.launcher import arguments

    text = suggestion
    if text.startswith(EVAL[0]) and text.endswith(EVAL[1]):
        text = text[len(EVAL[0]) : -len(EVAL[1])]
    argv = shlex.split(text)
    assert argv[0] == "npuprof-run", suggestion
    try:
        namespace, command, mode = arguments.parse(argv[1:])
        config = arguments.resolve_config(namespace, {})
    except (arguments.UsageError, SystemExit) as exc:
        raise AssertionError(f"the tool refuses the command it suggested: {suggestion}\n{exc}") from None
    assert (mode == "--print-env") if text is not suggestion else (mode is None and command), suggestion
    assert config.output_dir and namespace.output_dir, f"a suggestion without its run's --output-dir: {suggestion}"
    return namespace, command, mode, config


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


#: Where bare runs are kept for the whole suite (all xdist workers), set by the ``_bare_runs`` fixture.
_BARE_DIR: list[str] = []


def bare_run(args: list[str], cwd: str | None = None, env: dict[str, str] | None = None, timeout: float = 300):
    """The job without the launcher, for the bit-identical comparisons: run once per suite for the
    same command, folder and environment, and shared by every test (on any worker) that compares
    against it. A bare job's output does not depend on which test asks: the comparison itself holds
    it to that, since the profiled run must print the same. Of the suite's 99 bare runs that name no
    test's own folder, 17 repeated another's (benchmarks/suite.py --keep lists each test's commands)."""
    env = clean_env() if env is None else env
    if not _BARE_DIR:
        return python(args, cwd=cwd, env=env, timeout=timeout)
    import fcntl
    import hashlib

    # pytest's own variables name the test that asks (PYTEST_CURRENT_TEST), not the job.
    job_env = {k: v for k, v in env.items() if not k.startswith("PYTEST_")}
    key = hashlib.sha256(json.dumps([args, cwd, sorted(job_env.items())]).encode()).hexdigest()[:24]
    path = os.path.join(_BARE_DIR[0], key)
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


@pytest.fixture(scope="session", autouse=True)
def _bare_runs(tmp_path_factory) -> None:
    """The folder of ``bare_run``'s runs: beside the workers' own temporary folders under xdist (their
    common parent is this suite's alone, and pytest removes it with its old ones), in the session's
    otherwise."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "bare-runs"
    folder.mkdir(exist_ok=True)
    _BARE_DIR[:] = [str(folder)]


def script(name: str) -> str:
    return os.path.join(SCRIPTS, name)


def torch_traces(out: str) -> list[str]:
    """Every Chrome trace the torch backend wrote under ``out``, at any depth, plain or compressed."""
    found = []
    for suffix in names.TORCH_TRACE_SUFFIXES:
        found += glob.glob(os.path.join(out, "**", "*" + suffix), recursive=True)
    return sorted(found)


def windows(record: dict) -> list[dict]:
    """A record's (or a report row's) windows, the documented fields only (docs/answer.md's report JSON)."""
    keys = ("first_step", "last_step", "complete", "traces")
    return [{key: window.get(key) for key in keys} for window in record["windows"]]


def read_trace(path: str) -> dict:
    with deliverables.open_trace(path) as handle:
        return json.load(handle)


def write_trace(path: str, data) -> None:
    """Write a trace as the tool would have left it: gzip when its name says so."""
    import gzip

    text = data if isinstance(data, str) else json.dumps(data)
    with gzip.open(path, "wt") if path.endswith(".gz") else open(path, "w") as handle:
        handle.write(text)


def step_counts(out: str) -> list[int]:
    return [deliverables.count_profiler_steps(path) for path in torch_traces(out)]


def step_spans(path: str, prefixes: tuple[str, ...] = ("ProfilerStep#", "iteration#")) -> list[str]:
    """The names of a torch trace's step spans on the CPU's timeline, in order (``ProfilerStep#3``,
    ``iteration#3``, ...): what msprof-analyze, HTA and Perfetto take for its steps."""
    events = read_trace(path)["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith(prefixes)]
    return [e["name"] for e in sorted(spans, key=lambda e: (e["ts"], e["name"])) if "gpu" not in e.get("cat", "")]


def status_records(out: str) -> list[dict]:
    records = []
    for path in sorted(glob.glob(os.path.join(out, "**", names.STATUS_DIR, "*.json"), recursive=True)):
        with open(path) as handle:
            records.append(json.load(handle))
    return records


def check_json(out: str, *extra: str) -> tuple[int, dict]:
    """``--check OUT --json`` (and ``extra`` arguments): its exit status and report, valid against
    the schema the package ships; every command the report suggests must be one the tool accepts."""
    result = npuprof(["--check", out, "--json", *extra])
    report = answer_json(result.stdout)
    for suggestion in report["job"]["suggestions"]:
        accepted(suggestion)
    return result.returncode, report


def answer_json(text: str) -> dict:
    """The report ``--check DIR --json`` printed, after validating it against answer.schema.json
    (every JSON the suite makes is held to the schema a tool reading it relies on)."""
    import jsonschema

    from npuprof_launch.launcher import answer

    report = json.loads(text)
    with open(answer.SCHEMA_FILE) as handle:
        jsonschema.validate(report, json.load(handle))
    return report


def texts(items: list[dict]) -> list[str]:
    """The sentences of the answer's items (findings, problems, notes), for a failing assertion's message
    and for the few tests that hold the words themselves."""
    return [item["text"] for item in items]


def slow_rank_evidence(report: dict) -> dict:
    """What a slow-rank assertion prints when it fails: the verdict and reason, and each rank's time
    in collectives, window and median step (the numbers the lockstep rules judged)."""
    waits = {
        process.get("rank"): [process.get(key) for key in ("collective_s", "window_s", "median_step_s")]
        for process in report["processes"]
    }
    return {"verdict": report["job"].get("slow_rank_verdict"), "found": report["job"]["slow_ranks"], "waits": waits}


def assert_ok(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


UNIT_DIR = os.path.join(ROOT, "tests", "unit")
_ONCE: dict = {}


def once(key, make):
    """``make()``, made once per test process for ``key``: one real run shared by the tests that
    assert on it. A parametrized module fixture is set up again each time the order of the tests
    (xdist's, not the file's) comes back to a parameter: a 4-rank torchrun job ran 4 times for 2."""
    if key not in _ONCE:
        _ONCE[key] = make()
    return _ONCE[key]


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
