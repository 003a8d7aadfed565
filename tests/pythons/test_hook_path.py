"""The launcher and the hook path without torch, on whichever interpreter runs pytest.

tests/pythons/run_all.sh runs this file on every CPython the package claims (3.9 to 3.13) that
the machine has; the main suite runs it on its own interpreter. Nothing here needs torch: each
test starts the real launcher (``python -m npuprof_launch``) or a real Python child with the hook
directory on ``PYTHONPATH``, and checks only facts the format changes leave alone (exit codes,
``passed``, the process count, the ``npuprof:`` prefix).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import npuprof_launch
from npuprof_launch.common import names, options, processlog, record

PYTHON = sys.executable
#: The hook directory as packaged (pyproject.toml's package-data), found without the launcher's code.
HOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(npuprof_launch.__file__)), "sitecustomize_pkg")
TIMEOUT = 120
USAGE_ERROR = 2
MARKER = "USER-SITECUSTOMIZE-RAN"
MODULES = "import sys, json; print(json.dumps(sorted(sys.modules)))"
HOOK_LOADED = "import sys; print('npuprof_launch.inprocess.hook' in sys.modules)"


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any variable of ours or PYTHONPATH, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith((names.ENV_PREFIX, "_" + names.ENV_PREFIX))}
    for name in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONNOUSERSITE", "PYTHONSAFEPATH"):
        env.pop(name, None)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run(argv: list[str], cwd, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv,
        cwd=str(cwd),
        env=clean_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def npuprof(args: list[str], cwd, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The real launcher, as a subprocess of this interpreter."""
    return run([PYTHON, "-m", "npuprof_launch", *args], cwd, env)


def python(args: list[str], cwd, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return run([PYTHON, *args], cwd, env)


def hooked_env(enable: str | None = "1", path: str = HOOK_DIR, **extra: str) -> dict[str, str]:
    """A job's environment as the launcher or ``--print-env`` makes it: the hook first on the path."""
    env = clean_env(PYTHONPATH=path, **extra)
    if enable is not None:
        env[names.ENABLE_VAR] = enable
    return env


def explain(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def npuprof_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(names.VOICE)]


def assert_one_npuprof_line(result: subprocess.CompletedProcess) -> str:
    """A refusal: exit 2 and exactly one line on stderr, ``npuprof:`` first."""
    assert result.returncode == USAGE_ERROR, explain(result)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(names.VOICE + " "), explain(result)
    return lines[0]


def test_interpreter_is_claimed():
    """The interpreter under test is one pyproject.toml's requires-python (>=3.9) claims."""
    assert sys.version_info >= (3, 9), sys.version


# (a) start-up ----------------------------------------------------------------------------------


def test_startup_with_switch_on_is_silent_and_arms_the_hook(tmp_path):
    out = tmp_path / "out"
    os.makedirs(names.status_dir(str(out)))  # as the launcher makes it: the hook then logs its load
    env = hooked_env(**{names.OUTPUT_DIR_VAR: str(out)})
    result = python(["-c", "pass"], tmp_path, env)
    assert result.returncode == 0 and result.stderr == "" and result.stdout == "", explain(result)

    loaded = [line for line in processlog.read(str(out)) if line.get("event") == processlog.LOADED]
    assert len(loaded) == 1, f"process log: {processlog.read(str(out))}"
    result = python(["-c", HOOK_LOADED], tmp_path, env)
    assert result.returncode == 0 and result.stderr == "", explain(result)
    assert result.stdout == "True\n", explain(result)


def test_a_torch_import_fires_the_hook_and_the_job_goes_on(tmp_path):
    """A stand-in ``torch`` (no optimizer, no profiler): the post-import watch fires, the hook's torch
    half is imported on this interpreter, cannot arm, says so in ``npuprof:`` lines, and the job runs."""
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("VERSION = 'stand-in'\n")
    env = hooked_env(path=os.pathsep.join([HOOK_DIR, str(fake)]), **{names.OUTPUT_DIR_VAR: str(tmp_path / "out")})
    result = python(["-c", "import torch; print('job', torch.VERSION)"], tmp_path, env)
    assert result.returncode == 0 and result.stdout == "job stand-in\n", explain(result)
    assert all(line.startswith(names.VOICE) for line in result.stderr.splitlines()), explain(result)


@pytest.mark.parametrize("enable", [None, "0"], ids=["unset", "zero"])
def test_startup_with_switch_off_loads_nothing_of_ours(tmp_path, enable):
    plain = python(["-c", MODULES], tmp_path)
    hooked = python(["-c", MODULES], tmp_path, hooked_env(enable))
    assert plain.returncode == 0 and plain.stderr == "", explain(plain)
    assert hooked.returncode == 0 and hooked.stderr == "", explain(hooked)
    without, with_hook = set(json.loads(plain.stdout)), set(json.loads(hooked.stdout))
    ours = sorted(name for name in with_hook if name.split(".")[0] == "npuprof_launch")
    assert not ours, f"loaded with the switch {enable!r}: {ours}"
    # The hook directory's sitecustomize itself is the only module the hook path may add.
    assert with_hook - without <= {"sitecustomize"}, sorted(with_hook - without)


# (b) --print-env -------------------------------------------------------------------------------


def test_print_env_prints_export_lines(tmp_path):
    out = tmp_path / "out"
    result = npuprof(["--print-env", "--output-dir", str(out)], tmp_path)
    assert result.returncode == 0 and result.stderr == "", explain(result)
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith("export ") for line in lines), explain(result)
    assert f"export {names.ENABLE_VAR}=1" in lines, explain(result)
    assert any(line.startswith("export PYTHONPATH=") and HOOK_DIR in line for line in lines), explain(result)
    assert any(line.startswith(f"export {names.OUTPUT_DIR_VAR}=") and str(out) in line for line in lines)
    assert not out.exists(), "--print-env runs nothing, so it creates no output directory"


@pytest.mark.skipif(shutil.which("bash") is None, reason="--print-env is eval'd by a shell: bash, not found on PATH")
def test_print_env_refuses_a_bad_value(tmp_path):
    """The refusal is for the shell that evals it: exit 2, and there one ``npuprof:`` line and the end."""
    result = npuprof(["--print-env", "--active", "abc"], tmp_path)
    assert result.returncode == USAGE_ERROR, explain(result)
    script = f'eval "$("{PYTHON}" -m npuprof_launch --print-env --active abc)"\necho the job ran unprofiled\n'
    evaluated = run(["bash", "-c", script], tmp_path)
    assert evaluated.returncode == USAGE_ERROR and "the job ran unprofiled" not in evaluated.stdout, explain(evaluated)
    lines = evaluated.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(names.VOICE + " ") and "active" in lines[0], explain(evaluated)


# (c) env-only ----------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("bash") is None, reason="env-only mode is tested through bash, not found on PATH")
def test_env_only_leaves_the_jobs_output_unchanged(tmp_path):
    out = tmp_path / "out"
    job = "import sys; print(sys.flags)"
    script = tmp_path / "launch.sh"
    script.write_text(
        "set -euo pipefail\n"
        f'eval "$("$PY" -m npuprof_launch --print-env --output-dir "$OUT")"\n'
        f'"$PY" -c "{job}"\n'
        f'"$PY" -c "{HOOK_LOADED}" >"$OUT_LOADED"\n'
    )
    loaded = tmp_path / "loaded.txt"
    env = clean_env(PY=PYTHON, OUT=str(out), OUT_LOADED=str(loaded))
    result = run(["bash", str(script)], tmp_path, env)
    plain = python(["-c", job], tmp_path)
    assert plain.returncode == 0, explain(plain)
    assert result.returncode == 0 and result.stderr == "", explain(result)
    assert result.stdout == plain.stdout, explain(result)
    assert loaded.read_text() == "True\n", "the exported lines did not put the hook in the job"


# (d) a user's own sitecustomize ------------------------------------------------------------------


@pytest.fixture
def user_site(tmp_path) -> str:
    folder = tmp_path / "user_site"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(f"import os\nprint({MARKER!r}, os.getpid())\n")
    return str(folder)


@pytest.mark.parametrize("enable", ["1", None], ids=["on", "off"])
def test_users_sitecustomize_still_runs_under_the_hook(tmp_path, user_site, enable):
    path = os.pathsep.join([HOOK_DIR, user_site])
    extra = {names.OUTPUT_DIR_VAR: str(tmp_path / "out")}
    code = "import sys; print(sys.modules['sitecustomize'].__file__)"
    result = python(["-c", code], tmp_path, hooked_env(enable, path, **extra))
    assert result.returncode == 0 and result.stderr == "", explain(result)
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[0].split()[0] == MARKER, explain(result)
    assert os.path.dirname(os.path.abspath(lines[1])) == user_site, explain(result)


def test_users_sitecustomize_runs_in_a_job_started_by_the_launcher(tmp_path, user_site):
    out = tmp_path / "out"
    # The launcher's own interpreter runs the user's sitecustomize too: the pids tell the two apart.
    env = clean_env(PYTHONPATH=user_site)
    job = "import os; print('job', os.getpid())"
    result = npuprof(["--output-dir", str(out), "--", PYTHON, "-c", job], tmp_path, env)
    assert result.returncode == 0, explain(result)
    lines = [line.split() for line in result.stdout.splitlines()]
    jobs = [words[1] for words in lines if words[0] == "job"]
    assert len(jobs) == 1 and [MARKER, jobs[0]] in lines, explain(result)
    assert npuprof_lines(result.stderr), "the launcher printed no npuprof: report line"
    assert os.path.isdir(names.status_dir(str(out)))
    loaded = [line for line in processlog.read(str(out)) if line.get("event") == processlog.LOADED]
    assert len(loaded) == 1, f"the job's one process did not log the hook's load: {processlog.read(str(out))}"


def test_launcher_returns_the_jobs_exit_status(tmp_path):
    result = npuprof(["--output-dir", str(tmp_path / "out"), "--", PYTHON, "-c", "raise SystemExit(3)"], tmp_path)
    assert result.returncode == 3, explain(result)


# (e) bad input ---------------------------------------------------------------------------------


def test_unknown_option_says_did_you_mean(tmp_path):
    line = assert_one_npuprof_line(npuprof(["--actve=3", "--", PYTHON, "-c", "pass"], tmp_path))
    assert "did you mean" in line and "--active" in line, line


def test_missing_command_is_refused(tmp_path):
    assert_one_npuprof_line(npuprof(["--output-dir", str(tmp_path / "out")], tmp_path))


@pytest.mark.parametrize("kind", ["file", "absent"])
def test_check_on_a_non_directory_is_refused(tmp_path, kind):
    target = tmp_path / "not_a_dir"
    if kind == "file":
        target.write_text("{}\n")
    assert_one_npuprof_line(npuprof(["--check", str(target)], tmp_path))


# (f) --check on a saved output -----------------------------------------------------------------


def _ended_pid() -> int:
    """The pid of a process that has ended: a record's process is then not mistaken for a live one."""
    child = subprocess.Popen([PYTHON, "-c", "pass"])
    child.wait(timeout=TIMEOUT)
    return child.pid


def saved_output(directory: str, step_event: bool = True) -> str:
    """A one-process torch-backend output written by hand: one status record and its Chrome trace."""
    host, pid, started_ns = names.host(), _ended_pid(), 1_700_000_000_000_000_000
    worker = names.worker_name(None, pid, environ={})
    trace = names.torch_trace_name(worker, started_ns + 1)
    name = "ProfilerStep#0" if step_event else "aten::add"
    event = {"ph": "X", "name": name, "cat": "user_annotation", "ts": 0, "dur": 1000, "pid": pid, "tid": pid}
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, trace), "w") as handle:
        json.dump({"traceEvents": [event]}, handle)
    config, problems = options.resolve({}, {})
    assert not problems, problems
    fields = {
        "host": host,
        "pid": pid,
        "worker": worker,
        "state": record.State.DONE.value,
        "backend": "torch",
        "options": config.as_dict(),
        "steps": 20,
        "windows": [{"first_step": 1, "last_step": 1, "complete": True, "traces": [trace]}],
        "windows_planned": 1,
        "windows_completed": 1,
        "traces": [trace],
        "started_ns": started_ns,
        "updated_ns": started_ns + 2,
        "ended": record.ENDED_EXIT,
    }
    record.write(names.status_path(directory, worker, started_ns), record.normalized(fields))
    return directory


def test_check_on_a_saved_output_passes(tmp_path):
    out = saved_output(str(tmp_path / "saved"))
    result = npuprof(["--check", out, "--json"], tmp_path)
    assert result.returncode == 0, explain(result)
    report = json.loads(result.stdout)
    assert report["passed"] is True, explain(result)
    assert len(report["processes"]) == 1, explain(result)

    table = npuprof(["--check", out], tmp_path)
    assert table.returncode == 0, explain(table)
    assert npuprof_lines(table.stdout), explain(table)


def test_check_on_a_saved_output_without_steps_fails(tmp_path):
    out = saved_output(str(tmp_path / "saved"), step_event=False)
    result = npuprof(["--check", out, "--json"], tmp_path)
    assert result.returncode == 1, explain(result)
    report = json.loads(result.stdout)
    assert report["passed"] is False and report["problems"], explain(result)
    assert len(report["processes"]) == 1, explain(result)
