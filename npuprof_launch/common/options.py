"""The one table of options, and how a value is read from the command line or the environment.

Everything that lists options (argparse, ``--help``, ``--print-env``, the docs' options table, the hook's
reading of ``NPU_PROF_*``) is generated from ``OPTIONS`` below, so an option is declared once.
This module is on the hook path: standard library only, no heavy imports at module level.
"""

from __future__ import annotations

import os

from npuprof_launch.common import names, optionkinds, scenarios, stages
from npuprof_launch.common.schedule import Schedule

ENV_PREFIX = names.ENV_PREFIX
ENABLE_VAR = names.ENABLE_VAR

BOOL_TRUE = optionkinds.BOOL_TRUE
BOOL_FALSE = optionkinds.BOOL_FALSE

LEVELS = ("level_none", "level0", "level1", "level2")
EXPORT_TYPES = ("text", "db")
BACKENDS = ("auto", "npu", "torch")
ACTIVITIES = ("cpu", "npu", "cuda")
SCENARIOS = scenarios.NAMES
HOST_SYS = ("cpu", "mem", "disk", "network", "osrt", "numa")
#: The member names of ``torch_npu.profiler.AiCMetrics`` (2.14.0; MemoryAccess is absent in a
#: few old releases, which the npu backend handles).
AIC_METRICS = (
    "AiCoreNone",
    "PipeUtilization",
    "ArithmeticUtilization",
    "Memory",
    "MemoryL0",
    "MemoryUB",
    "ResourceConflictRatio",
    "L2Cache",
    "MemoryAccess",
)


class ConfigError(ValueError):
    """A value the user must fix; its message is one line that names the option or variable."""


class Option:
    """One row of the table: its name gives the flag and the environment variable."""

    __slots__ = ("name", "kind", "default", "help", "choices", "group", "metavar", "env")

    def __init__(
        self,
        name: str,
        kind: str,
        default: object,
        help: str,
        choices: tuple[str, ...] = (),
        group: str = "schedule",
        metavar: str | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.default = default
        self.help = help
        self.choices = choices
        self.group = group
        self.metavar = metavar
        #: Its variable, spelled once here: every process resolves all the options at least once.
        self.env = names.env_name(name)

    @property
    def flag(self) -> str:
        return "--" + self.name

    @property
    def minimum(self) -> int | None:
        """The least value a whole-number option takes (None for any other kind)."""
        return MINIMUMS.get(self.kind)

    @property
    def attr(self) -> str:
        return self.name.replace("-", "_")

    def parse(self, raw: str, source: str) -> object:
        """Turn the text given for this option into its value, or raise ConfigError."""
        try:
            return PARSERS[self.kind](self, raw.strip())
        except ValueError as exc:
            raise ConfigError(f"{source}={raw!r}: {exc}") from None

    def format(self, value: object) -> str:
        """The text form of a value, as exported to the job (the inverse of parse)."""
        if value is None:
            return ""
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, (list, tuple)):
            if self.kind == "ranks":
                return optionkinds.format_ranks(value)
            if self.kind == "stages":
                return stages.SEPARATOR.join(value)
            return ",".join(str(v) for v in value)
        return str(value)


MINIMUMS = optionkinds.MINIMUMS
parse_ranks = optionkinds.parse_ranks


def schedule_of(values: dict) -> Schedule:
    """The schedule of a record's options (option name -> value), the table's default where one is
    missing: an older record, or one written before every option existed."""
    return Schedule(**{key.replace("-", "_"): values.get(key, BY_NAME[key].default) for key in names.SCHEDULE_KEYS})


def _parse_stages(option: Option, raw: str) -> tuple[str, ...]:
    return parse_stage_list(raw)


#: The parser of each kind: optionkinds' and ``stages`` (a stage's values are parsed as the options they name).
PARSERS = {**optionkinds.PARSERS, "stages": _parse_stages}


OPTIONS: tuple[Option, ...] = (
    Option(
        "output-dir",
        "path",
        "./npuprof_output",
        "where every process writes (relative paths are resolved against the directory npuprof-run was started in)",
        group="output",
        metavar="DIR",
    ),
    Option(
        "stage-dir",
        "path",
        None,
        "write each window here first (a node-local disk), then move it into --output-dir off the training path",
        group="output",
        metavar="DIR",
    ),
    Option(
        "gzip",
        "bool",
        True,
        "compress each torch trace (.pt.trace.json.gz, about a tenth of the size) after the window, off the "
        "training path; --no-gzip keeps plain JSON",
        group="output",
    ),
    Option(
        "step-times",
        "bool",
        True,
        "keep every step's wall time in a small file per process, for the job's summary and its HTML page",
        group="output",
    ),
    Option(
        "hang-after",
        "float",
        None,
        "a process that has not stepped for this long writes the Python stacks of its threads beside its record, "
        "and again while it stays stuck (default: 20 of its step times, at least 30 s; 0: off)",
        group="output",
        metavar="SECONDS",
    ),
    Option("skip-first", "count", 1, "steps ignored before the schedule starts", metavar="N"),
    Option("wait", "count", 0, "schedule wait: idle steps at the start of each window", metavar="N"),
    Option("warmup", "count", 0, "schedule warmup: steps traced but discarded before each window", metavar="N"),
    Option("active", "positive", 1, "schedule active: recorded steps per window", metavar="N"),
    Option("repeat", "positive", 1, "number of windows (0 is refused: it would never end)", metavar="N"),
    Option(
        "from-step",
        "positive",
        None,
        "place the first window at this step of the job's own numbering, which a job resumed from a checkpoint "
        "carries on (as Megatron's --profile-step-start): its recorded steps begin there, its --warmup steps "
        "come before it; instead of --skip-first",
        metavar="N",
    ),
    Option(
        "total-steps",
        "positive",
        None,
        "the job's length in steps, to refuse before starting a schedule that cannot complete",
        metavar="N",
    ),
    Option(
        "target",
        "target",
        None,
        "count calls of this function as steps instead of optimizer.step",
        group="steps",
        metavar="MOD:QUALNAME",
    ),
    Option(
        "ranks", "ranks", None, "profile only these ranks, e.g. 0,4-7 (default: all)", group="steps", metavar="LIST"
    ),
    Option(
        "scenario",
        "choice",
        scenarios.DEFAULT,
        "what a step is, how collection is controlled, and the defaults (see docs/scenarios.md)",
        choices=SCENARIOS,
        group="steps",
    ),
    Option(
        "stage",
        "stages",
        None,
        f"rl: a stage, NAME=MOD:QUALNAME[,KEY=VALUE...] with KEY one of {', '.join(stages.KEYS)}; repeat the flag "
        f"for more stages (in the variable, separate them with {stages.SEPARATOR}); its traces go to OUT/NAME",
        group="steps",
        metavar="NAME=MOD:QUALNAME",
    ),
    Option(
        "range",
        "bool",
        False,
        "record each chosen call of --target or of a stage from its entry to its return as a window of its own, "
        "instead of stepping one profiler through consecutive calls",
        group="steps",
    ),
    Option(
        "on-demand",
        "bool",
        False,
        "open no window by itself: each `npuprof-run --trigger DIR` asks the running job for one",
        group="steps",
    ),
    Option(
        "on-slowdown",
        "count",
        0,
        "when the launcher finds a slowdown while the job runs, it asks every process for a window of --active "
        "steps in the slow regime, up to N times (0: off); the processes also take --trigger requests",
        group="steps",
        metavar="N",
    ),
    Option(
        "backend",
        "choice",
        "auto",
        "auto: npu when torch_npu imports and an NPU is present, else torch",
        choices=BACKENDS,
        group="profiler",
    ),
    Option(
        "activities",
        "choices",
        None,
        "what to trace: cpu,npu / cpu,cuda / cpu (default: the backend's)",
        choices=ACTIVITIES,
        group="profiler",
        metavar="LIST",
    ),
    Option("level", "choice", "level0", "torch_npu profiler level", choices=LEVELS, group="npu"),
    Option(
        "export-type",
        "choices",
        ("text",),
        "torch_npu export: text, db, or text,db",
        choices=EXPORT_TYPES,
        group="npu",
        metavar="T",
    ),
    Option(
        "aic-metrics",
        "choice",
        "AiCoreNone",
        "any torch_npu.profiler.AiCMetrics name",
        choices=AIC_METRICS,
        group="npu",
        metavar="M",
    ),
    Option("record-shapes", "bool", False, "record operator input shapes", group="profiler"),
    Option("profile-memory", "bool", False, "track tensor memory allocation", group="profiler"),
    Option("with-stack", "bool", False, "record Python call stacks of operators", group="profiler"),
    Option("with-modules", "bool", False, "record the nn.Module hierarchy of operators", group="profiler"),
    Option("with-flops", "bool", False, "estimate FLOPs of matrix operators", group="profiler"),
    Option(
        "max-window-mb",
        "positive",
        None,
        "stop a window early, its trace kept and marked, once the process's memory has grown by N MB while it "
        "records (the profiler keeps its events in memory until the window ends)",
        group="profiler",
        metavar="N",
    ),
    Option(
        "window-timeout",
        "float",
        None,
        "close a window, its trace kept and marked partial, once its process has not stepped for this long (an "
        "idle inference rank, a stuck job), at the first moment its main thread runs Python; else the process's "
        "end saves it (default and 0: off)",
        group="profiler",
        metavar="SECONDS",
    ),
    Option("l2-cache", "bool", False, "collect L2 cache hit rates (torch_npu l2_cache)", group="npu"),
    Option(
        "data-simplification",
        "bool",
        True,
        "delete torch_npu's intermediate files after parsing (--no-data-simplification keeps them)",
        group="npu",
    ),
    Option(
        "analyse",
        "bool",
        True,
        "parse each window at its end; --no-analyse keeps raw data only, to parse later with --analyse DIR",
        group="npu",
    ),
    Option(
        "async-mode", "bool", False, "parse in a background process instead of inside the training step", group="npu"
    ),
    Option("mstx", "bool", False, "collect mstx marks and ranges (msprof_tx on older torch_npu)", group="npu"),
    Option(
        "host-sys",
        "choices",
        None,
        "host system data to collect, e.g. cpu,mem (torch_npu host_sys)",
        choices=HOST_SYS,
        group="npu",
        metavar="LIST",
    ),
    Option("sys-io", "bool", False, "collect NIC and RoCE data (torch_npu sys_io)", group="npu"),
    Option(
        "sys-interconnection", "bool", False, "collect HCCS and PCIe data (torch_npu sys_interconnection)", group="npu"
    ),
    Option("op-attr", "bool", False, "record operator attributes (needs --export-type db)", group="npu"),
    Option("record-op-args", "bool", False, "dump operator arguments for AOE tuning", group="npu"),
    Option(
        "gc-detect-threshold",
        "float",
        None,
        "record Python GC pauses longer than MS milliseconds (0: every one)",
        group="npu",
        metavar="MS",
    ),
)

BY_NAME: dict[str, Option] = {option.name: option for option in OPTIONS}
BY_ENV: dict[str, Option] = {option.env: option for option in OPTIONS}


class Config:
    """The resolved options of one run: one attribute per option (dashes become underscores), declared
    below for readers and the type checker, each typed as its kind's parser returns (None where the
    table's default is None); tests/unit/test_config.py holds them to ``OPTIONS``."""

    output_dir: str
    stage_dir: str | None
    gzip: bool
    step_times: bool
    hang_after: float | None
    skip_first: int
    wait: int
    warmup: int
    active: int
    repeat: int
    from_step: int | None
    total_steps: int | None
    target: str | None
    ranks: tuple[int, ...] | None
    scenario: str
    stage: tuple[str, ...] | None
    range: bool
    on_demand: bool
    on_slowdown: int
    backend: str
    activities: tuple[str, ...] | None
    level: str
    export_type: tuple[str, ...]
    aic_metrics: str
    record_shapes: bool
    profile_memory: bool
    with_stack: bool
    with_modules: bool
    with_flops: bool
    max_window_mb: int | None
    window_timeout: float | None
    l2_cache: bool
    data_simplification: bool
    analyse: bool
    async_mode: bool
    mstx: bool
    host_sys: tuple[str, ...] | None
    sys_io: bool
    sys_interconnection: bool
    op_attr: bool
    record_op_args: bool
    gc_detect_threshold: float | None

    def __init__(self, values: dict[str, object]) -> None:
        self._values = dict(values)
        for name, value in values.items():
            setattr(self, name.replace("-", "_"), value)

    def get(self, name: str) -> object:
        return self._values[name]

    def with_values(self, changes: dict[str, object]) -> Config:
        """A copy with some values replaced (a stage's own schedule, range mode's one-call window)."""
        return Config({**self._values, **changes})

    def as_dict(self) -> dict[str, object]:
        return {name: (list(v) if isinstance(v, tuple) else v) for name, v in self._values.items()}

    def to_env(self) -> dict[str, str]:
        """The variables that hand this configuration to the job (unset options are left out)."""
        env = {}
        for option in OPTIONS:
            value = self._values[option.name]
            if value is not None:
                env[option.env] = option.format(value)
        return env


def default_for(name: str, scenario: str) -> object:
    """The value option ``name`` takes when neither flag nor variable sets it: the scenario's, else the table's."""
    return scenarios.defaults(scenario).get(name, BY_NAME[name].default)


def as_flags(given: dict[str, str], leave_out=()) -> list[str]:
    """The command-line flags that give these options (text values, as ``given_options`` has
    them), in the table's order: for a suggested command that keeps what the user chose."""
    flags: list[str] = []
    for option in OPTIONS:
        raw = given.get(option.name)
        if raw is None or option.name in leave_out:
            continue
        if option.kind == "bool":
            flags.append(option.flag if option.parse(str(raw), option.flag) else f"--no-{option.name}")
        elif option.kind == "stages":
            for stage in str(raw).split(stages.SEPARATOR):
                flags += [option.flag, stage]
        else:
            flags += [option.flag, str(raw)]
    return flags


def resolve(given: dict[str, str], environ: dict[str, str] | os._Environ) -> tuple[Config, list[str]]:
    """Resolve every option: ``given`` (name -> text, e.g. from flags) over the environment over the
    scenario's defaults (scenarios.py) over the table's defaults.

    Returns the configuration and the list of problems, one line each; a problem leaves that
    option at its default so the caller decides whether to refuse (launcher) or warn (hook).
    """
    problems: list[str] = []
    # Ours only, read once: os.environ decodes at each look-up, and each option is looked up.
    environ = {key: value for key, value in environ.items() if key.startswith(names.ENV_PREFIX)}
    scenario = _resolve_one(BY_NAME["scenario"], scenarios.DEFAULT, given, environ, problems)
    assert isinstance(scenario, str)  # a choice
    values: dict[str, object] = {"scenario": scenario}
    fixed = scenarios.defaults(scenario)
    for option in (option for option in OPTIONS if option.name != "scenario"):
        values[option.name] = _resolve_one(option, fixed.get(option.name, option.default), given, environ, problems)
    config = Config({option.name: values[option.name] for option in OPTIONS})
    if not problems:  # rules across options are judged on values that parsed
        problems.extend(check_consistency(config))
    return config, problems


def _resolve_one(option: Option, default: object, given: dict[str, str], environ, problems: list[str]) -> object:
    if option.name in given:
        source, raw = option.flag, given[option.name]
    elif environ.get(option.env, "") != "":
        source, raw = option.env, environ[option.env]
    else:
        return default
    try:
        return option.parse(raw, source)
    except ConfigError as exc:
        problems.append(str(exc))
        return default


def check_consistency(config: Config) -> list[str]:
    """Rules that involve more than one option."""
    problems = _step_source_problems(config)
    problems.extend(_from_step_problems(config))
    total = config.total_steps
    for label, chosen in _schedules(config):
        schedule = Schedule.of(chosen)
        if total is not None and schedule.length() > total:
            problems.append(
                f"{label}{schedule.flags()} needs {schedule.formula()} steps, but --total-steps is {total}; "
                "shorten the schedule or raise --total-steps"
            )
        if chosen.range and chosen.warmup:
            problems.append(
                f"{label}--range with --warmup {chosen.warmup}: in range mode no profiler runs between calls, so "
                "nothing can warm up; use --warmup 0"
            )
    return problems


def unknown_variables(environ) -> list[str]:
    """One warning per ``NPU_PROF_*`` variable that no option has (a misspelling in a launch
    script), naming the nearest real one."""
    import difflib

    known = [*BY_ENV, ENABLE_VAR]
    found = []
    for key in sorted(environ):
        if key.startswith(ENV_PREFIX) and key not in BY_ENV and key != ENABLE_VAR:
            near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"did you mean {near[0]}? " if near else ""
            found.append(f"{key} is not a variable of npuprof-run ({hint}it is ignored)")
    return found


def _step_source_problems(config: Config) -> list[str]:
    """Each scenario's step source (scenarios.py): rl has stages, infer a target, train either clock."""
    if config.scenario == "rl":
        if config.target is not None:
            return ["--target is not used with --scenario rl: declare each stage with --stage NAME=MOD:QUALNAME"]
        if not config.stage:
            return [
                "--scenario rl needs at least one --stage NAME=MOD:QUALNAME: each call of a stage's function is "
                "one of its steps"
            ]
        return []
    if config.stage:
        return [f"--stage needs --scenario rl (the scenario is {config.scenario}); for one function use --target"]
    if config.scenario == "infer" and config.target is None:
        return [
            "--scenario infer needs --target MOD:QUALNAME, the function that runs the model once "
            "(e.g. vllm.v1.worker.gpu_worker:Worker.execute_model): only processes that call it profile"
        ]
    if config.on_demand and config.range:
        return ["--on-demand with --range: a triggered window spans steps; use --on-demand without --range"]
    if config.range and config.target is None:
        return ["--range records calls of --target (or of a stage): the optimizer.step clock has no call to record"]
    return []


def _from_step_problems(config: Config) -> list[str]:
    """--from-step places the first window instead of --skip-first: one of the two, never both."""
    if config.from_step is None:
        return []
    if config.on_demand:
        return ["--from-step with --on-demand: on demand no window opens by itself; use one of the two"]
    if config.skip_first != default_for("skip-first", config.scenario):
        return [
            f"--from-step {config.from_step} with --skip-first {config.skip_first}: --from-step places the first "
            "window by the job's own step numbers, --skip-first by this process's; give one of the two"
        ]
    return []


def _schedules(config: Config) -> list[tuple[str, Config]]:
    """The step selections in force: the job's, or in rl each stage's own."""
    if config.scenario != "rl" or not config.stage:
        return [("", config)]
    return [(f"stage {stages.split(text)[0]}: ", config.with_values(stage_overrides(text))) for text in config.stage]


# -- stages: their syntax is stages.py's, their values are parsed as the options they name ----------


def parse_stage(text: str) -> tuple[str, str, dict]:
    """One stage, checked: (NAME, MOD:QUALNAME, {option: value}); raises ValueError with a one-line reason."""
    name, given_target, pairs = stages.parts(text)
    target = BY_NAME["target"].parse(given_target, f"stage {name}")
    assert isinstance(target, str)  # its parser returns the text it checked
    overrides: dict = {}
    for key, value in pairs:
        overrides[key] = BY_NAME[key].parse(value, f"stage {name} {key}")
    return name, target, overrides


def stage_text(name: str, target: str, overrides: dict) -> str:
    """The normalized spelling of a stage, as exported to the job."""
    pairs = "".join(f",{key}={BY_NAME[key].format(value)}" for key, value in overrides.items())
    return f"{name}={target}{pairs}"


def stage_overrides(text: str) -> dict:
    """A stage's own step selection, applied over the job's options for that stage only."""
    return parse_stage(text)[2]


def parse_stage_list(raw: str) -> tuple[str, ...]:
    """The value of ``--stage``/``NPU_PROF_STAGE``: normalized stage texts, names and functions unique."""
    parsed = [parse_stage(part) for part in stages.split_list(raw)]
    if not parsed:
        raise ValueError(f"expected NAME=MOD:QUALNAME[,KEY=VALUE...]; stages are separated by {stages.SEPARATOR!r}")
    seen: set[str] = set()
    targets: dict[str, str] = {}
    for name, target, _ in parsed:
        if name in seen:
            raise ValueError(f"two stages are named {name}")
        if target in targets:
            raise ValueError(f"stages {targets[target]} and {name} both name {target}; one function is one stage")
        seen.add(name)
        targets[target] = name
    return tuple(stage_text(*stage) for stage in parsed)
