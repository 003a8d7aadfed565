"""``npuprof-run``: prepare the environment, run the job as given, report what was collected.

The launcher never profiles anything itself. It resolves the options (flags over ``NPU_PROF_*``
variables over defaults, all from the one table in options.py), refuses a bad configuration
before starting (exit 2), runs the command as an argument vector (no shell) with the hook
directory first on ``PYTHONPATH``, forwards SIGTERM/SIGHUP/SIGUSR1/SIGUSR2, and exits with the
job's status (128+N when it died of signal N).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import npuprof_launch
from npuprof_launch import names, options, report

HOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(npuprof_launch.__file__)), "sitecustomize_pkg")
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
USAGE_ERROR = 2
TRIGGER_TIMEOUT = 30.0

GROUP_TITLES = {
    "output": "output",
    "schedule": "schedule (counted in steps of the job)",
    "steps": "step source and processes",
    "profiler": "profiler",
    "npu": "Ascend NPU (torch_npu only)",
}
#: The one option that is also a mode: --analyse/--no-analyse set it, --analyse DIR parses DIR offline.
ANALYSE = "analyse"


class UsageError(Exception):
    """A problem found before starting: printed as one ``npuprof:`` line, exit status 2."""


class _AnalyseAction(argparse.Action):
    """``--analyse`` alone turns the option on; ``--analyse DIR`` asks for the offline mode instead.

    The value is optional (nargs="?"), so argparse takes one only when the next word is not an
    option; the job's command always comes after ``--``, which argparse never sees. So
    ``--analyse -- python train.py`` is the option and ``--analyse DIR`` is the mode, always.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        if values is None:
            setattr(namespace, self.dest, True)
        else:
            namespace.analyse_dir = values


def _add_analyse(group, option: options.Option, text: str) -> None:
    group.add_argument(
        option.flag, dest=option.attr, action=_AnalyseAction, nargs="?", metavar="DIR", default=None, help=text
    )
    group.add_argument(
        f"--no-{option.name}",
        dest=option.attr,
        action="store_const",
        const=False,
        default=None,
        help=f"{option.env}=0: keep raw data only (for processes that cannot parse, e.g. daemons)",
    )


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, our prefix, exit 2
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The parser, generated from the options table: each option shows its variable and default."""
    parser = _Parser(
        prog="npuprof-run",
        usage="npuprof-run [OPTIONS] -- COMMAND [ARG ...]\n"
        "       npuprof-run --print-env [OPTIONS]\n"
        "       npuprof-run --check DIR [--json]\n"
        "       npuprof-run --analyse DIR [--export-type T]\n"
        "       npuprof-run --trigger DIR [--active N] [--warmup N] [--wait N] [--ranks LIST] [--timeout S]",
        description="Profile a PyTorch job without touching its code. Every option can also be given as the "
        "environment variable shown beside it; the command line wins.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit status: the command's own; 128+N when it died of signal N; 2 for a usage or configuration "
        "error found before starting.",
    )
    modes = parser.add_argument_group("modes")
    modes.add_argument(
        "--print-env",
        action="store_true",
        help="print export lines that make an existing launch script behave as this prefix",
    )
    modes.add_argument("--check", metavar="DIR", help="validate collected data in DIR; exit 0 only if complete")
    modes.add_argument("--json", action="store_true", help="with --check: print the report as JSON")
    modes.add_argument(
        "--trigger",
        metavar="DIR",
        help="ask the running --on-demand job writing to DIR for one window now (its --active, --warmup, --wait "
        "and --ranks come from the options below); exit 0 once a process took the request",
    )
    modes.add_argument(
        "--timeout",
        metavar="S",
        type=float,
        default=TRIGGER_TIMEOUT,
        help=f"with --trigger: seconds to wait for a process to take the request (default {TRIGGER_TIMEOUT:g})",
    )
    modes.add_argument("--version", action="version", version=f"npuprof-launch {npuprof_launch.__version__}")
    groups = {}
    for option in options.OPTIONS:
        group = groups.get(option.group)
        if group is None:
            group = groups[option.group] = parser.add_argument_group(GROUP_TITLES.get(option.group, option.group))
        default = option.format(option.default) if option.default is not None else "unset"
        text = f"{option.help} [{option.env}; default: {default}]"
        if option.choices and option.kind == "choice" and len(option.choices) <= 6:
            text = f"{option.help}: {', '.join(option.choices)} [{option.env}; default: {default}]"
        if option.name == ANALYSE:
            _add_analyse(group, option, text + ". As a mode, --analyse DIR parses the raw data in DIR, then checks it")
        elif option.kind == "bool":
            group.add_argument(
                option.flag, dest=option.attr, action=argparse.BooleanOptionalAction, default=None, help=text
            )
        elif option.kind == "stages":
            group.add_argument(option.flag, dest=option.attr, metavar=option.metavar, action="append", help=text)
        else:
            group.add_argument(
                option.flag, dest=option.attr, metavar=option.metavar or option.attr.upper(), default=None, help=text
            )
    parser.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.set_defaults(analyse_dir=None)
    return parser


def given_options(namespace: argparse.Namespace) -> dict[str, str]:
    """The options given as flags, as text, so that flags and variables are parsed by the same code."""
    given = {}
    for option in options.OPTIONS:
        value = getattr(namespace, option.attr)
        if value is not None:
            given[option.name] = option.format(value) if isinstance(value, (bool, list)) else value
    return given


def resolve_config(namespace: argparse.Namespace, environ) -> options.Config:
    config, problems = options.resolve(given_options(namespace), environ)
    if problems:
        raise UsageError("\n".join(problems))
    return config


def job_environment(config: options.Config, environ, output_dir: str, run_id: str) -> dict[str, str]:
    """The job's environment: the user's, plus the resolved options, the switch and the hook path."""
    env = dict(environ)
    env.update(config.to_env())
    env[options.BY_NAME["output-dir"].env] = output_dir
    env[options.ENABLE_VAR] = "1"
    env[names.RUN_ID_VAR] = run_id
    env["PYTHONPATH"] = hook_pythonpath(environ.get("PYTHONPATH", ""))
    return env


def hook_pythonpath(current: str) -> str:
    """The hook directory first, the user's own entries kept in order (an empty entry means cwd: kept)."""
    if not current:
        return HOOK_DIR
    entries = [entry for entry in current.split(os.pathsep) if not entry or os.path.abspath(entry) != HOOK_DIR]
    return os.pathsep.join([HOOK_DIR, *entries])


def print_env(config: options.Config, environ) -> str:
    """Export lines for an existing launch script: what the prefix would export, as few lines as that takes.

    An option at its default is left out, unless its variable is set in this environment: the
    script would inherit that value, where the prefix exports the resolved one (flags win).
    """
    lines = [
        f"export {options.ENABLE_VAR}=1",
        f'export PYTHONPATH={shlex.quote(HOOK_DIR)}"${{PYTHONPATH:+:$PYTHONPATH}}"',
    ]
    for option in options.OPTIONS:
        value = config.get(option.name)
        if option.name == "output-dir":
            value = os.path.abspath(value)
        elif (value == option.default or value is None) and not environ.get(option.env):
            continue
        lines.append(f"export {option.env}={shlex.quote(option.format(value))}")
    return "\n".join(lines)


def prepare_output_dir(path: str) -> str:
    """Create the output directory (and its status folder) now, or refuse to start."""
    from npuprof_launch import files

    absolute = os.path.abspath(path)
    try:
        files.make_dirs(names.status_dir(absolute))
    except OSError as exc:
        raise UsageError(f"--output-dir {path!r}: cannot be created ({exc.strerror or exc})") from None
    if not os.access(names.status_dir(absolute), os.W_OK | os.X_OK):
        raise UsageError(f"--output-dir {path!r}: not writable by this user")
    return absolute


def find_command(command: list[str]) -> list[str]:
    if not command:
        raise UsageError("no command given: npuprof-run [OPTIONS] -- COMMAND [ARG ...]")
    program = command[0]
    if os.sep in program:
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            raise UsageError(f"command {program!r}: not an executable file")
    elif shutil.which(program) is None:
        raise UsageError(f"command {program!r}: not found on PATH")
    return command


def run_job(command: list[str], env: dict[str, str]) -> int:
    """Run the command, forward signals to it, and return its exit status the shell's way."""
    child = subprocess.Popen(command, env=env)

    def forward(signum, frame):
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED_SIGNALS}
    # The terminal sends SIGINT to the whole process group: the job gets its own; we wait for it.
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        returncode = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - returncode if returncode < 0 else returncode


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        index = argv.index("--")
        return argv[:index], argv[index + 1 :]
    return argv, []


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, command = split_command(argv)
    try:
        namespace = build_parser().parse_args(ours)
        command = command or namespace.command
        if namespace.check:
            return check(namespace.check, namespace.json)
        if namespace.trigger:
            return trigger(namespace.trigger, resolve_config(namespace, os.environ), namespace.timeout)
        if namespace.analyse_dir is not None:
            return analyse(namespace.analyse_dir, namespace, command)
        config = resolve_config(namespace, os.environ)
        if namespace.print_env:
            print(print_env(config, os.environ))
            return 0
        command = find_command(command)
        output_dir = prepare_output_dir(config.output_dir)
    except UsageError as exc:
        for line in str(exc).splitlines():
            sys.stderr.write(f"npuprof: {line}\n")
        return USAGE_ERROR
    # Inside another npuprof-run, keep its run: both launchers then report the same processes.
    run_id = os.environ.get(names.RUN_ID_VAR) or f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    status = run_job(command, job_environment(config, os.environ, output_dir, run_id))
    try:
        sys.stderr.write(report.format_table(report.build(output_dir, run_id)) + "\n")
    except Exception as exc:  # noqa: BLE001 - the job's status matters more than our summary
        sys.stderr.write(f"npuprof: could not build the report: {exc!r}\n")
    return status


def trigger(directory: str, config: options.Config, timeout: float) -> int:
    """``--trigger DIR``: write one request, then say which processes took it (exit 1 if none did)."""
    from npuprof_launch import ondemand

    if not os.path.isdir(names.status_dir(directory)):
        raise UsageError(f"--trigger {directory!r}: no npuprof job writes there (no {names.STATUS_DIR}/ folder)")
    request = ondemand.write_request(directory, config.active, config.warmup, config.wait, config.ranks)
    deadline = time.monotonic() + timeout
    while True:
        taken = ondemand.pickups(directory, request["id"])
        if taken or time.monotonic() >= deadline:
            break
        time.sleep(ondemand.POLL_INTERVAL / 2)
    if not taken:
        ondemand.withdraw(directory, request["id"])
        sys.stderr.write(
            f"npuprof: no process took request {request['id']} within {timeout:g} s (is the job running with "
            "--on-demand, stepping, and writing to this directory?); request withdrawn\n"
        )
        return 1
    time.sleep(ondemand.POLL_INTERVAL)  # late takers of the same request are listed too
    for record in ondemand.pickups(directory, request["id"]):
        rank = record.get("rank")
        who = f"rank {rank} pid {record.get('pid')}" if rank is not None else f"pid {record.get('pid')}"
        stage = f" stage {record['stage']}" if record.get("stage") else ""
        print(f"npuprof: request {request['id']} taken by {who}{stage} on {record.get('host')}")
    return 0


def check(directory: str, as_json: bool) -> int:
    """``--check DIR``: the report of everything in DIR; exit 0 only when it passed."""
    import json

    if not os.path.isdir(directory):
        sys.stderr.write(f"npuprof: --check {directory!r}: not a directory\n")
        return USAGE_ERROR
    result = report.build(directory)
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        print(report.format_table(result))
        print("npuprof: check " + ("passed" if result["passed"] else "FAILED"))
    return 0 if result["passed"] else 1


def analyse(directory: str, namespace: argparse.Namespace, command: list[str]) -> int:
    """``--analyse DIR``: parse raw torch_npu data offline, then check it; exit 0 only when complete.

    For ``--no-analyse`` runs and for jobs killed before their data was parsed. torch_npu's
    ``analyse`` reports failures only as log lines, so the deliverable check afterwards decides.
    """
    from npuprof_launch import deliverables
    from npuprof_launch.backends import npu

    if command:
        raise UsageError(
            f"--analyse {directory} parses DIR offline and runs no command; to parse each window of a job, "
            "put the job after --: npuprof-run --analyse -- COMMAND"
        )
    if not os.path.isdir(directory):
        raise UsageError(f"--analyse {directory!r}: not a directory")
    sessions = deliverables.ascend_dirs(directory)
    if not sessions:
        raise UsageError(
            f"--analyse {directory!r}: no *{names.ASCEND_DIR_SUFFIX} directory there; give the --output-dir "
            "of a run or one of its session directories"
        )
    config = resolve_config(namespace, os.environ)
    explicit = namespace.export_type is not None or os.environ.get(options.BY_NAME["export-type"].env)
    export_types = config.export_type if explicit else None
    try:
        version = npu.analyse_offline(directory, export_types, names.say)
    except ImportError as exc:
        raise UsageError(f"--analyse needs torch_npu, which does not import here: {exc}") from None
    problems = []
    for path in sessions:
        problems.extend(deliverables.check_ascend_dir(path, export_types or deliverables.recorded_export_types(path)))
    print(f"npuprof: torch_npu {version} analysed {len(sessions)} session(s) in {os.path.abspath(directory)}")
    if problems:
        print("npuprof: still incomplete (parsing needs CANN's msprof on PATH; each session's logs/ says more):")
        print("\n".join(f"  - {problem}" for problem in problems))
    print("npuprof: analyse " + ("FAILED" if problems else "passed"))
    return 1 if problems else 0
