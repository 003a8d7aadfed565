"""The command line of ``npuprof-run``: its parser, made from the options table (common/options.py),
the modes and which options each one takes, and the options given as text. Below the launcher's
modes (cli.py) and the docs' generator (readme.py), which both read it.
"""

from __future__ import annotations

import argparse

import npuprof_launch
from npuprof_launch.common import names, options

USAGE_ERROR = 2
#: How long --trigger waits, by default, for a process to take its request.
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


#: The options each mode uses; any other option given with it is refused, never ignored.
MODE_OPTIONS = {
    "--check": (),
    "--trigger": (*names.REQUEST_KEYS, "ranks"),
    "--analyse DIR": ("export-type",),
}


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
        prefix = "unrecognized arguments: "
        if message.startswith(prefix):
            message = "; ".join(self._did_you_mean(word) for word in message[len(prefix) :].split())
        raise UsageError(message)

    def _did_you_mean(self, word: str) -> str:
        """``--activ`` -> "unknown option --activ: did you mean --active?" (flags are never abbreviated)."""
        import difflib

        flag = word.split("=", 1)[0]
        if not flag.startswith("-"):
            return f"unexpected argument {word!r}: the job's command goes after --"
        known = [option for action in self._actions for option in action.option_strings]
        near = difflib.get_close_matches(flag, known, n=2, cutoff=0.6)
        hint = f": did you mean {' or '.join(near)}?" if near else f" (see {self.prog} --help)"
        return f"unknown option {flag}{hint}"


def build_parser() -> argparse.ArgumentParser:
    """The parser, generated from the options table: each option shows its variable and default."""
    parser = _Parser(
        prog="npuprof-run",
        allow_abbrev=False,
        usage="npuprof-run [OPTIONS] -- COMMAND [ARG ...]\n"
        "       npuprof-run --print-env [OPTIONS]\n"
        "       npuprof-run --check DIR [--json] [--verbose] [--explain] [--deep] [--run ID] [--window N]\n"
        "       npuprof-run --analyse DIR [--export-type T]\n"
        "       npuprof-run --trigger DIR [--active N] [--warmup N] [--wait N] [--ranks LIST] [--align N] "
        "[--timeout S]",
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
    modes.add_argument("--json", action="store_true", default=None, help="with --check: print the report as JSON")
    modes.add_argument(
        "--verbose", action="store_true", default=None, help="with --check: a row for every process, not the first few"
    )
    modes.add_argument(
        "--explain",
        action="store_true",
        default=None,
        help="with a run or --check: the answer's notes whole (what was told apart from the findings, and why)",
    )
    modes.add_argument(
        "--deep",
        action="store_true",
        default=None,
        help="with --check: read every trace again, however large (by default, past 512 MB of traces, the "
        "summaries each window's aftercare wrote are used)",
    )
    modes.add_argument(
        "--run",
        metavar="ID",
        default=None,
        help="with --check: report run ID of DIR (by default the latest; the report lists the others)",
    )
    modes.add_argument(
        "--window",
        metavar="N",
        type=int,
        default=None,
        help="with --check: the run's NPU window laid out for msprof-analyze, the Nth in step order (by "
        "default the first complete one; docs/output.md)",
    )
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
        default=None,
        help=f"with --trigger: seconds to wait for a process to take the request (default {TRIGGER_TIMEOUT:g})",
    )
    modes.add_argument(
        "--align",
        metavar="N",
        type=int,
        default=None,
        help="with --trigger: each process starts its window at its next step that is a multiple of N, plus one "
        "(default: the step the trigger picks from the job's records, the same for every process)",
    )
    modes.add_argument("-V", "--version", action="version", version=f"npuprof-launch {npuprof_launch.__version__}")
    groups: dict[str, argparse._ArgumentGroup] = {}
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


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        index = argv.index("--")
        return argv[:index], argv[index + 1 :]
    return argv, []


def check_mode_arguments(namespace: argparse.Namespace, command: list[str]) -> str | None:
    """The mode asked for (None: run a job), after refusing every argument it would not use."""
    chosen = [
        name
        for name, value in (
            ("--print-env", namespace.print_env),
            ("--check", namespace.check),
            ("--trigger", namespace.trigger),
            ("--analyse DIR", namespace.analyse_dir),
        )
        if value
    ]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} are separate modes: use one at a time")
    mode = chosen[0] if chosen else None
    if namespace.json and mode != "--check":
        raise UsageError("--json goes with --check DIR: npuprof-run --check DIR --json")
    if namespace.verbose and mode != "--check":
        raise UsageError("--verbose goes with --check DIR: npuprof-run --check DIR --verbose")
    if namespace.explain and mode not in (None, "--check"):
        raise UsageError("--explain goes with a run or --check DIR: npuprof-run --check DIR --explain")
    if namespace.deep and mode != "--check":
        raise UsageError("--deep goes with --check DIR: npuprof-run --check DIR --deep")
    if namespace.run is not None and mode != "--check":
        raise UsageError("--run goes with --check DIR: npuprof-run --check DIR --run ID")
    if namespace.window is not None and (mode != "--check" or namespace.window < 1):
        raise UsageError("--window goes with --check DIR, a window's number from 1: npuprof-run --check DIR --window N")
    if namespace.timeout is not None and mode != "--trigger":
        raise UsageError("--timeout goes with --trigger DIR")
    if namespace.align is not None and mode != "--trigger":
        raise UsageError("--align goes with --trigger DIR")
    if namespace.align is not None and namespace.align < 1:
        raise UsageError(f"--align {namespace.align}: expected a whole number >= 1")
    if mode is None:
        return None
    if command:
        runs_nothing = {
            "--print-env": "prints export lines for a launch script and runs no command: put "
            '`eval "$(npuprof-run --print-env ...)"` on the line before the command in the script',
        }.get(mode, "runs no command")
        raise UsageError(
            f"{mode} {runs_nothing}; the command after -- ({' '.join(command)}) would be ignored. "
            "To profile it: npuprof-run [OPTIONS] -- COMMAND"
        )
    if mode in MODE_OPTIONS:
        unused = [options.BY_NAME[name].flag for name in given_options(namespace) if name not in MODE_OPTIONS[mode]]
        if unused:
            uses = ", ".join(options.BY_NAME[n].flag for n in MODE_OPTIONS[mode]) or "no profiling option"
            raise UsageError(f"{', '.join(unused)}: not used by {mode} (it takes {uses})")
    return mode


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str], str | None]:
    """The command line read and checked as ``main`` does before it acts: the namespace, the job's
    command and the mode. Raises UsageError (argparse's own errors exit 2 with one line). The
    tests read every suggested command through it, so each one is known to be accepted."""
    ours, command = split_command(argv)
    namespace = build_parser().parse_args(ours)
    if namespace.command and command:
        raise UsageError(f"unexpected argument {namespace.command[0]!r} before --: the job's command goes after --")
    command = command or namespace.command
    return namespace, command, check_mode_arguments(namespace, command)
