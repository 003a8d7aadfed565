"""Running the job: its environment, the command as given, its signals, and what the launcher saw.

The launcher never profiles anything itself. It runs the command as an argument vector (no
shell) with the resolved options exported as ``NPU_PROF_*`` variables and the hook directory
first on ``PYTHONPATH``, forwards SIGTERM/SIGHUP/SIGUSR1/SIGUSR2 and a SIGINT sent to it alone
(_wait_taking_interrupts tells a terminal's Ctrl-C apart: the job got that one itself), and returns the job's status
(128+N when it died of signal N). What it saw (the command, how it ended) is written to
``OUT/npuprof_status/runs/RUN_ID.json``, so that ``--check DIR`` later gives the same reasons as
the end of the run.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import threading
import time

import npuprof_launch
from npuprof_launch.common import files, names, options

HOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(npuprof_launch.__file__)), "sitecustomize_pkg")
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
RUNS_DIR = "runs"
#: A signal's ``si_code`` when the kernel sent it: a terminal's Ctrl-C, sent to its whole foreground
#: process group, the job's processes included. A program's kill() gives SI_USER (0) or another
#: code of zero or below (sigqueue, tgkill): a signal to the launcher alone.
SI_KERNEL = 0x80
#: How often the wait for the job looks at it between signals (SIGCHLD ends the wait sooner).
WAIT_POLL_S = 0.5


class Refused(Exception):
    """The job cannot be started as asked: one line for the user, exit status 2."""


def job_environment(config: options.Config, environ, output_dir: str, run_id: str) -> dict[str, str]:
    """The job's environment: the user's, plus the resolved options, the switch and the hook path."""
    env = dict(environ)
    env.update(config.to_env())
    env[names.OUTPUT_DIR_VAR] = output_dir
    env[names.ENABLE_VAR] = "1"
    env[names.RUN_ID_VAR] = run_id
    env["PYTHONPATH"] = hook_pythonpath(environ.get("PYTHONPATH", ""))
    return env


def hook_pythonpath(current: str) -> str:
    """The hook directory first, the user's own entries kept in order (an empty entry means cwd: kept)."""
    if not current:
        return HOOK_DIR
    entries = [entry for entry in current.split(os.pathsep) if not entry or os.path.abspath(entry) != HOOK_DIR]
    return os.pathsep.join([HOOK_DIR, *entries])


def export_lines(config: options.Config, environ) -> str:
    """Export lines for an existing launch script: what the prefix would export, as few lines as that takes.

    An option at its default is left out, unless its variable is set in this environment: the
    script would inherit that value, where the prefix exports the resolved one (flags win).
    """
    lines = [
        f"export {names.ENABLE_VAR}=1",
        f'export PYTHONPATH={shlex.quote(HOOK_DIR)}"${{PYTHONPATH:+:$PYTHONPATH}}"',
        # A run id made each time the lines are evaluated (never when they were printed: a script they
        # were pasted into runs many times): --check DIR tells runs apart by it.
        f'export {names.RUN_ID_VAR}="env-$(date +%Y%m%d-%H%M%S)-$$"',
    ]
    for option in options.OPTIONS:
        value = config.get(option.name)
        if option.name == "output-dir":
            value = os.path.abspath(config.output_dir)
        elif (value == option.default or value is None) and not environ.get(option.env):
            continue
        lines.append(f"export {option.env}={shlex.quote(option.format(value))}")
    return "\n".join(lines)


def refusal_for_eval(message: str) -> str:
    """What ``--print-env`` prints instead of export lines when it refuses: shell that says why
    on stderr and ends the script, as the prefix would refuse to start the job; an ``eval`` that
    printed nothing would let the job run unprofiled as if all were well. At an interactive prompt
    it only fails (``exit`` would close the user's shell)."""
    lines = "".join(f"printf '%s\\n' {shlex.quote(f'npuprof: {line}')} >&2; " for line in message.splitlines())
    return f"{lines}case $- in *i*) false ;; *) exit 2 ;; esac"


def prepare_output_dir(path: str) -> str:
    """Create the output directory (and its status folder) now, or refuse to start."""
    absolute = os.path.abspath(path)
    try:
        files.make_dirs(names.status_dir(absolute))
    except OSError as exc:
        raise Refused(f"--output-dir {path!r}: cannot be created ({exc.strerror or exc})") from None
    if not os.access(names.status_dir(absolute), os.W_OK | os.X_OK):
        raise Refused(f"--output-dir {path!r}: not writable by this user")
    return absolute


def find_command(command: list[str]) -> list[str]:
    if not command:
        raise Refused("no command given: npuprof-run [OPTIONS] -- COMMAND [ARG ...]")
    program = command[0]
    if os.sep in program:
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            raise Refused(f"command {program!r}: not an executable file")
    elif shutil.which(program) is None:
        raise Refused(f"command {program!r}: not found on PATH")
    return command


def new_run_id() -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def run(command: list[str], env: dict[str, str]) -> dict:
    """Run the command, forward signals to it, and return what happened: ``status`` the shell's
    way, ``signal`` when a signal ended it, the signals the launcher forwarded, and those it only
    received (SIGINT, which the terminal sends the job too)."""
    started = time.time_ns()
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:
        return {"status": 127, "signal": None, "start_error": f"{exc.strerror or exc}", "forwarded": []}
    forwarded: list[str] = []

    def forward(signum, frame):
        forwarded.append(signal.Signals(signum).name)
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    received: list[str] = []

    def note(signum, frame):
        received.append(signal.Signals(signum).name)

    # SIGINT from a terminal reaches the whole process group: the job gets its own, and we wait for
    # it, noting that it came (a job that catches KeyboardInterrupt may still end with status 0).
    handlers = {**dict.fromkeys(FORWARDED_SIGNALS, forward), signal.SIGINT: note}
    # A signal ignored when we started (nohup: SIGHUP; a shell's `&`: SIGINT) was ignored on purpose,
    # and the job inherited that: forwarding it would hand a hang-up to a job that installs its own
    # handler (torchrun's ends the training), which the user's nohup meant to keep running.
    previous = {
        sig: signal.signal(sig, handler)
        for sig, handler in handlers.items()
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    taken = signal.SIGINT in previous and _can_take_interrupts()
    if taken:  # after the child started: its own signal mask is the one we had
        signal.pthread_sigmask(signal.SIG_BLOCK, TAKEN)
    try:
        returncode = _wait_taking_interrupts(child, forward, received) if taken else child.wait()
    finally:
        if taken:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, TAKEN)  # a SIGINT still pending: note()'s
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    died_of = -returncode if returncode < 0 else None
    return {
        "status": 128 + died_of if died_of else returncode,
        "signal": signal.Signals(died_of).name if died_of else None,
        "start_error": None,
        "forwarded": forwarded,
        "received": received,
        "started_ns": started,
        "ended_ns": time.time_ns(),
    }


#: The signals the wait takes itself (_wait_taking_interrupts), blocked in the launcher's threads meanwhile.
TAKEN = {signal.SIGINT, signal.SIGCHLD}


def _can_take_interrupts() -> bool:
    """Whether SIGINT's sender can be read here: Linux's sigtimedwait, on the main thread."""
    return (
        hasattr(signal, "sigtimedwait")
        and hasattr(signal, "pthread_sigmask")
        and threading.current_thread() is threading.main_thread()
    )


def block_interrupts_here() -> None:
    """For a thread of the launcher's that runs while the job does (stallview.Watcher): leave SIGINT
    to the main thread's wait, which reads who sent it (a signal a thread takes is read by nobody)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _wait_taking_interrupts(child: subprocess.Popen, forward, received: list[str]) -> int:
    """Wait for the job, taking each SIGINT as it comes: a terminal's (SI_KERNEL) reached the job's
    process group too and is only noted; one a program sent to the launcher alone (``kill -INT``, a
    supervisor's ``send_signal``) is forwarded, as SIGTERM is. A program that sends SIGINT to the
    whole process group (killpg) reaches the job twice: it cannot be told from one sent to us alone."""
    while True:
        returncode = child.poll()
        if returncode is not None:
            return returncode
        info = signal.sigtimedwait(TAKEN, WAIT_POLL_S)
        if info is None or info.si_signo != signal.SIGINT:
            continue
        if info.si_code == SI_KERNEL:
            received.append(signal.SIGINT.name)
        else:
            forward(signal.SIGINT, None)


def run_path(output_dir: str, run_id: str) -> str:
    return os.path.join(names.status_dir(output_dir), RUNS_DIR, f"{run_id}.json")


def write_run(output_dir: str, run_id: str, command: list[str], outcome: dict, given: dict | None = None) -> dict:
    """What the launcher saw, for the report now and ``--check DIR`` later; ``given``: the options
    given as flags (text), so that a suggested next run keeps them. Returns the run's record, also
    when it could not be written (a full disk): its report is then told from it."""
    run = {"run_id": run_id, "command": list(command), "options": dict(given or {}), **outcome}
    try:
        files.write_json(run_path(output_dir, run_id), run)
    except OSError as exc:
        names.say(
            f"could not write the run's record into {output_dir} ({exc.strerror or exc}): --check DIR will lack it"
        )
    return run


def read_runs(output_dir: str) -> dict[str, dict]:
    """The launchers' accounts of their runs into this directory, by run id."""
    import json

    folder = os.path.join(names.status_dir(output_dir), RUNS_DIR)
    runs: dict[str, dict] = {}
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return runs
    for entry in entries:
        try:
            with open(os.path.join(folder, entry)) as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("run_id"), str):
            runs[data["run_id"]] = data
    return runs
