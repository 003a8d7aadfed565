"""For every way the chain breaks, its own one-line reason, and no advice that does not apply.

Each cause runs for real: a launch script that replaces PYTHONPATH, ``python -I``, a Python job that
never imports torch, a job that exits 3 or dies of SIGSEGV in the middle of its window, SIGINT in
the window, a --target called on a thread pool, ``--check`` on an empty directory. The reason is
asserted at the end of the run and from ``--check``; "--target" and "run more steps" advice
only where it applies.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time

import pytest
from answers import check_json, texts
from jobs import PYTHON, clean_env, npuprof, script
from outputs import status_records

TRAIN = script("train_loop.py")
WRONG = ("--target MOD:QUALNAME", "run more steps", "lower --skip-first")


def records(out: str) -> list[dict]:
    return status_records(out) if os.path.isdir(out) else []


def problems(result: subprocess.CompletedProcess) -> str:
    return result.stderr.split("npuprof: problems:", 1)[-1]


def assert_no_wrong_advice(text: str, *allowed: str) -> None:
    for advice in WRONG:
        if advice not in allowed:
            assert advice not in text, f"false advice {advice!r} in:\n{text}"


def test_a_launch_script_that_replaces_pythonpath(tmp_path, out):
    launcher = tmp_path / "launch.sh"
    launcher.write_text(f"#!/bin/sh\nPYTHONPATH=/somewhere exec {sys.executable} {TRAIN} --steps 4\n")
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    result = npuprof(["--output-dir", out, "--", str(launcher)])
    assert result.returncode == 0
    text = problems(result)
    assert "no Python process loaded the hook" in text and "replaces PYTHONPATH" in text
    assert_no_wrong_advice(text)
    code, report = check_json(out)
    assert code == 1 and any("no Python process loaded the hook" in p for p in texts(report["problems"]))


def test_python_isolated_mode(out):
    result = npuprof(["--output-dir", out, "--", sys.executable, "-I", TRAIN, "--steps", "4"])
    assert result.returncode == 0
    assert "no Python process loaded the hook (the command runs python -I (isolated mode))" in result.stderr
    assert_no_wrong_advice(result.stderr)


def test_a_python_job_that_never_imports_torch(out):
    result = npuprof(["--output-dir", out, "--", sys.executable, "-c", "pass"])
    assert result.returncode == 0
    assert "1 Python process loaded the hook, but none imported torch" in result.stderr
    assert_no_wrong_advice(result.stderr)


def test_a_command_that_fails_before_torch(out):
    result = npuprof(["--output-dir", out, "--", sys.executable, "no_such_script.py"])
    assert result.returncode == 2
    assert "the command exited with status 2; 1 Python process loaded the hook, but none imported torch" in (
        result.stderr
    )


CRASH_AT_STEP_3 = (
    "import os, signal, sys, torch\n"
    "m = torch.nn.Linear(4, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)\n"
    "for i in range(1, 9):\n"
    "    m(torch.ones(4)).sum().backward(); o.step(); o.zero_grad()\n"
    "    if i == 3:\n"
    "        {action}\n"
)


@pytest.mark.parametrize(
    ("action", "status", "says"),
    [
        ("sys.exit(3)", 3, "the command exited with status 3"),
        ("os.kill(os.getpid(), signal.SIGSEGV)", 128 + 11, "the command was killed by signal SIGSEGV"),
        ("raise ValueError('boom')", 1, "the process ended with an uncaught ValueError (boom) after step 3"),
    ],
    ids=["exit-3", "sigsegv", "raises"],
)
def test_a_job_that_fails_in_its_window_is_told_first(out, action, status, says):
    code = CRASH_AT_STEP_3.format(action=action)
    result = npuprof(["--skip-first", "1", "--active", "4", "--output-dir", out, "--", sys.executable, "-c", code])
    assert result.returncode == status
    text = problems(result)
    assert says in text, text
    assert_no_wrong_advice(text)
    code, report = check_json(out)
    assert code == 1 and any(says in p for p in texts(report["problems"])), report["problems"]


def test_a_job_that_exits_badly_after_its_window_is_told_so_and_passes(out):
    code = CRASH_AT_STEP_3.format(action="sys.exit(3)")
    result = npuprof(["--skip-first", "1", "--active", "1", "--output-dir", out, "--", sys.executable, "-c", code])
    assert result.returncode == 3
    code, report = check_json(out)
    assert code == 0, report["problems"]  # the window was complete: the profile is whole
    (ended,) = [one for one in report["notes"] if one["kind"] == "job_ended"]
    assert ended["text"] == "the command exited with status 3, after step 3" and ended["evidence"] == {"status": 3}
    assert "the command exited with status 3, after step 3" in result.stderr


def test_sigint_in_the_window_is_an_interruption_with_what_was_kept(out):
    launcher = subprocess.Popen(
        [PYTHON, "-m", "npuprof_launch", "--skip-first", "2", "--active", "1000", "--output-dir", out, "--"]
        + [sys.executable, TRAIN, "--steps", "2000", "--sleep", "0.01", "--announce"],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(
        r["state"] == "running" and r["steps"] >= 5 for r in status_records(out)
    ):
        time.sleep(0.1)
    (record,) = status_records(out)
    os.kill(record["pid"], signal.SIGINT)
    _, stderr = launcher.communicate(timeout=120)
    text = stderr.split("npuprof: problems:", 1)[-1]
    assert "interrupted by SIGINT at step" in text and "its trace keeps steps 3-" in text, text
    assert_no_wrong_advice(text)


#: A job that counts the SIGINTs it gets: it stops stepping at the first, waits a second for more,
#: then says how many came and exits 0 (a job that catches the interruption, saves and ends).
COUNTS_INTERRUPTS = (
    "import signal, sys, time, torch\n"
    "got = []\n"
    "signal.signal(signal.SIGINT, lambda *_: got.append(time.monotonic()))\n"
    "m = torch.nn.Linear(4, 1); opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
    "i = 0\n"
    "while not got and i < 3000:\n"
    "    i += 1; m(torch.ones(2, 4)).sum().backward(); opt.step(); opt.zero_grad(); time.sleep(0.01)\n"
    "time.sleep(1.0)\n"
    "print('interrupts', len(got), 'at step', i, flush=True)\n"
)


def started_in_a_terminal(out: str, job: str):
    """The launcher as a terminal's foreground job: a session of its own whose controlling terminal is
    a real pseudo-terminal (its stdin); writing Ctrl-C there is the kernel's SIGINT to the whole group."""
    import fcntl
    import termios

    controller, terminal = os.openpty()
    launcher = subprocess.Popen(
        [PYTHON, "-m", "npuprof_launch", "--skip-first", "2", "--active", "1000", "--output-dir", out, "--"]
        + [sys.executable, job],
        env=clean_env(),
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )
    os.close(terminal)
    return launcher, controller


def wait_for_steps(out: str, steps: int = 5) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(r["steps"] >= steps for r in status_records(out)):
        time.sleep(0.1)


def test_ctrl_c_in_a_terminal_reaches_the_job_once_and_is_still_an_interruption(out, tmp_path):
    """The terminal sends SIGINT to the whole foreground group: the job gets its own and npuprof-run
    does not send it another; the job catches it, saves and exits 0: the reason is the interruption,
    not "run more steps"."""
    job = tmp_path / "counts.py"
    job.write_text(COUNTS_INTERRUPTS)
    launcher, controller = started_in_a_terminal(out, str(job))
    try:
        wait_for_steps(out)
        os.write(controller, b"\x03")  # Ctrl-C, as typed
        stdout, stderr = launcher.communicate(timeout=120)
    finally:
        os.close(controller)
    assert launcher.returncode == 0 and "interrupts 1 at step" in stdout, (stdout, stderr)
    text = stderr.split("npuprof: problems:", 1)[-1]
    assert "interrupted by SIGINT at step" in text and "its trace keeps steps 3-" in text, text
    assert_no_wrong_advice(text)


def test_sigint_to_npuprof_run_alone_reaches_the_job_once(out, tmp_path):
    """``kill -INT`` of the launcher (a supervisor, a scheduler's preemption hook): the job gets it, as
    it gets SIGTERM, and ends; the answer says the run was interrupted."""
    job = tmp_path / "counts.py"
    job.write_text(COUNTS_INTERRUPTS)
    launcher = subprocess.Popen(
        [PYTHON, "-m", "npuprof_launch", "--skip-first", "2", "--active", "1000", "--output-dir", out, "--"]
        + [sys.executable, str(job)],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    wait_for_steps(out)
    launcher.send_signal(signal.SIGINT)
    stdout, stderr = launcher.communicate(timeout=120)
    assert launcher.returncode == 0 and "interrupts 1 at step" in stdout, (stdout, stderr)
    (step,) = [int(line.split()[-1]) for line in stdout.splitlines() if line.startswith("interrupts")]
    assert step < 3000, "interrupted, not run to its end"
    text = stderr.split("npuprof: problems:", 1)[-1]
    assert "interrupted by SIGINT at step" in text, text
    _, report = check_json(out)
    assert "SIGINT" in report["run"]["forwarded"], report["run"]


def test_a_target_called_on_a_thread_pool_without_range(out):
    code = (
        "import concurrent.futures, torch\n"
        "import target_lib\n"
        "with concurrent.futures.ThreadPoolExecutor(1) as pool:\n"
        "    for _ in range(6):\n"
        "        pool.submit(target_lib.step, torch.ones(2, 16)).result()\n"
    )
    env = clean_env(PYTHONPATH=os.path.dirname(TRAIN))
    result = npuprof(
        ["--target", "target_lib:step", "--skip-first", "1", "--output-dir", out, "--", sys.executable, "-c", code],
        env=env,
    )
    assert result.returncode == 0
    text = problems(result)
    assert "not on the main thread" in text and "--range records single calls on any thread" in text, text
    assert_no_wrong_advice(text)


def test_check_on_an_empty_directory_says_what_it_is(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = npuprof(["--check", str(empty)])
    assert result.returncode == 1
    assert "an empty directory (no npuprof_status/ folder)" in result.stderr
    assert_no_wrong_advice(result.stderr)
    (tmp_path / "other" / "sub").mkdir(parents=True)
    result = npuprof(["--check", str(tmp_path / "other")])
    assert "a directory with no npuprof output in it" in result.stderr


# -- arguments are never silently ignored ------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--print-env", "--", "python", "x.py"], "--print-env prints export lines"),
        (["--check", "{out}", "--", "python", "x.py"], "--check runs no command"),
        (["--trigger", "{out}", "--", "python", "x.py"], "--trigger runs no command"),
        (["--json"], "--json goes with --check DIR"),
        (["--check", "{out}", "--active", "2"], "--active: not used by --check"),
        (["--activ", "2", "--", "true"], "did you mean --active"),
        (["--active", "2", "python", "--", "true"], "unexpected argument 'python' before --"),
    ],
)
def test_an_argument_that_would_be_ignored_is_refused(out, args, says):
    os.makedirs(os.path.join(out, "npuprof_status"), exist_ok=True)
    result = npuprof([arg.format(out=out) for arg in args])
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("npuprof: ") and says in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_dash_v_is_the_version():
    result = npuprof(["-V"])
    assert result.returncode == 0 and result.stdout.startswith("npuprof-launch ")


def test_eval_of_a_refused_print_env_ends_the_script(tmp_path):
    """The refusal reaches the script: its eval fails as a prefix run would refuse to start."""
    launch_script = f'eval "$({PYTHON} -m npuprof_launch --print-env --active abc)"\necho the job ran unprofiled\n'
    result = subprocess.run(["bash", "-c", launch_script], env=clean_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "the job ran unprofiled" not in result.stdout
    assert "npuprof: --active='abc': expected a whole number >= 1" in result.stderr


def test_a_refused_print_env_says_why_once_and_spares_an_interactive_shell(tmp_path):
    """The reason is printed once (by the eval'd shell); typed at a prompt, the eval only fails."""
    launch_script = f'eval "$({PYTHON} -m npuprof_launch --print-env --active abc)"\necho status $?\n'
    result = subprocess.run(
        ["bash", "-i", "-c", launch_script], env=clean_env(), capture_output=True, text=True, timeout=120
    )
    assert "status 1" in result.stdout, result
    assert result.stderr.count("npuprof: --active='abc'") == 1, result.stderr
