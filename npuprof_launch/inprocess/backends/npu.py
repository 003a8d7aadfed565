"""torch_npu.profiler on Ascend NPU, built from the same options as the torch backend.

What may be passed depends on the torch_npu release, and releases do not grow in version order:
the ``.postN`` builds are backports, so ``mstx`` is in 2.1.0.post17 but not in 2.6.0. A keyword an
older release lacks raises a TypeError there, and some values are silently reset (a list
``export_type`` becomes text in 2.4.0; an unknown ``host_sys`` item empties the whole list). So
the backend first *plans* its calls as plain data (keywords, with enum members as names) from the
options and the capabilities of one version, and ``build`` only carries the plan out. Nothing in
the plan needs torch_npu, which is how the contract tests check it against the sources of real
wheels on machines without an NPU.

The per-version facts live in ``FEATURES`` and nowhere else. At run time they are refined by
looking at the installed torch_npu itself (``inspect.signature``, ``hasattr``), because a build
can carry a backport the table does not know about.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import sys
from collections.abc import Callable
from typing import NamedTuple

from npuprof_launch.common import files, names
from npuprof_launch.common.schedule import Window
from npuprof_launch.inprocess.backends import Declined


class Feature(NamedTuple):
    """Something only some torch_npu releases have, and where to look for it.

    ``since`` holds, per release line (major.minor.patch), the first build that has it. A line
    newer than every listed one has it; an unlisted line older than the newest listed one
    lacks it (2.3.1.post6, 2.4.0.post4 and 2.5.1 lack ``host_sys`` although 2.1.0.post17 has it).
    ``kind`` is ``param`` (a parameter of the callable ``owner``; ``mentions``, when given, must
    appear in its annotation) or ``member`` (an attribute of the constants class ``owner``).
    ``owner`` is a path under ``torch_npu.profiler``.
    """

    name: str
    since: tuple[str, ...]
    kind: str
    owner: str
    attr: str
    mentions: str = ""


_BACKPORTED_2_5_1 = ("2.1.0.post17", "2.3.1.post6", "2.4.0.post4", "2.5.1")
_BACKPORTED_2_6_0 = ("2.1.0.post17", "2.5.1.post1", "2.6.0")

#: The one table of per-version facts, read from the wheels of 20 releases (2.1.0.post8 to 2.14.0).
#: The contract tests (tests/test_npu_contract.py) re-read the sources of
#: several releases and require this table to agree with them exactly.
FEATURES: tuple[Feature, ...] = (
    Feature("async_mode", _BACKPORTED_2_5_1, "param", "tensorboard_trace_handler", "async_mode"),
    Feature("export_type_list", _BACKPORTED_2_5_1, "param", "_ExperimentalConfig", "export_type", "list"),
    Feature("aic_memory_access", _BACKPORTED_2_5_1, "member", "AiCMetrics", "MemoryAccess"),
    Feature("host_sys", _BACKPORTED_2_6_0, "param", "_ExperimentalConfig", "host_sys"),
    Feature("sys_io", _BACKPORTED_2_6_0, "param", "_ExperimentalConfig", "sys_io"),
    Feature("sys_interconnection", _BACKPORTED_2_6_0, "param", "_ExperimentalConfig", "sys_interconnection"),
    Feature("analyse_export_type", _BACKPORTED_2_6_0, "param", "profiler.analyse", "export_type"),
    Feature("mstx", ("2.1.0.post17", "2.6.0.post5", "2.7.1"), "param", "_ExperimentalConfig", "mstx"),
    Feature("host_sys_numa", ("2.7.1.post11", "2.9.0.post9", "2.10.0.post7"), "member", "HostSystem", "NUMA"),
)

#: Not a keyword of torch_npu.profiler but of the torch backend: torch_npu's msPTI profiler, which
#: records NPU kernels for plain ``torch.profiler`` (a libkineto profiler registered for
#: ProfilerActivity.PrivateUse1 when libtorch_npu.so loads). Read from the wheels: 2.12.0.post2 lacks
#: it, 2.12.0.post3 and 2.13.0 have it (tests/test_npu_contract.py re-reads them). ``owner`` is the
#: header every release that has it ships, under the installed package, which outranks this table.
MSPTI_PROFILER = Feature(
    "mspti_privateuse1",
    ("2.12.0.post3", "2.13.0"),
    "header",
    "include/torch_npu/csrc/profiler/mspti_activity_profiler.h",
    "MsptiActivityProfilerPoc",
)

#: torch_npu's own defaults (the same in every release checked): a keyword whose value equals its
#: default is left out, so the calls read like the field's own examples. The contract tests check
#: these against each release.
TORCH_NPU_DEFAULTS = {
    "l2_cache": False,
    "data_simplification": True,
    "record_op_args": False,
    "op_attr": False,
    "gc_detect_threshold": None,
    "sys_io": False,
    "sys_interconnection": False,
}

LEVEL_MEMBERS = {"level_none": "Level_none", "level0": "Level0", "level1": "Level1", "level2": "Level2"}
EXPORT_MEMBERS = {"text": "Text", "db": "Db"}
DEFAULT_ACTIVITIES = ("cpu", "npu")


def parse_version(text: str) -> tuple[int, int, int, int] | None:
    """``2.4.0.post4`` -> (2, 4, 0, 4); a local suffix (``+git...``) is ignored; None if unreadable."""
    match = re.match(r"\s*(\d+)\.(\d+)\.(\d+)(?:\.post(\d+))?", text or "")
    if match is None:
        return None
    major, minor, patch, post = match.groups()
    return int(major), int(minor), int(patch), int(post or 0)


def has_feature(feature: Feature, version: str) -> bool:
    """What the table says about ``version``; an unreadable version counts as newer than all."""
    parsed = parse_version(version)
    if parsed is None:
        return True
    firsts = [known for known in (parse_version(first) for first in feature.since) if known is not None]
    for first in firsts:
        if first[:3] == parsed[:3]:
            return parsed >= first
    return parsed[:3] > max(first[:3] for first in firsts)


def probe(feature: Feature, api) -> bool | None:
    """Look at the installed torch_npu.profiler itself; None when it cannot tell."""
    owner = api
    for part in feature.owner.split("."):
        owner = getattr(owner, part, None)
        if owner is None:
            return False
    if feature.kind == "member":
        return hasattr(owner, feature.attr)
    try:
        parameters = inspect.signature(owner).parameters
    except (TypeError, ValueError):
        return None
    parameter = parameters.get(feature.attr)
    if parameter is None:
        return False
    if feature.mentions:
        if parameter.annotation is inspect.Parameter.empty:
            return None
        return feature.mentions in str(parameter.annotation)
    return True


def capabilities(version: str, api=None) -> frozenset[str]:
    """The features ``version`` has: the table's word, corrected by the installed code when given."""
    found = set()
    for feature in FEATURES:
        present = has_feature(feature, version)
        if api is not None:
            seen = probe(feature, api)
            if seen is not None:
                present = seen
        if present:
            found.add(feature.name)
    return frozenset(found)


def installed_version(torch_npu) -> str:
    version = getattr(torch_npu, "__version__", None) or getattr(getattr(torch_npu, "version", None), "__version__", "")
    return str(version or "unknown")


def conflict(environ) -> str | None:
    """Why this process must not start a profiler of ours, or None.

    torch_npu starts its own profiler on import when ``PROF_CONFIG_PATH`` is set or the msMonitor
    daemon flag is 1 (read exactly as torch_npu reads it), and under ``msprof`` its profiler API
    does nothing (2.7.1+) or competes with msprof for the same device data (older releases).
    """
    if environ.get("PROF_CONFIG_PATH", ""):
        return (
            "PROF_CONFIG_PATH is set: torch_npu's dynamic profiler profiles this process, so npuprof-run "
            "starts no second profiler; unset PROF_CONFIG_PATH to profile with npuprof-run"
        )
    daemon = "MSMONITOR_USE_DAEMON" if environ.get("MSMONITOR_USE_DAEMON") else "KINETO_USE_DAEMON"
    if _as_int(environ.get(daemon, "")) == 1:
        return (
            f"{daemon}=1: torch_npu's msMonitor (dynolog) profiler owns this process, so npuprof-run starts "
            f"no second profiler; unset {daemon} to profile with npuprof-run"
        )
    for var in ("PROFILER_SAMPLECONFIG", "PROFILING_MODE"):
        if environ.get(var, ""):
            return (
                f"{var} is set: the job runs under msprof, which collects this process and disables "
                f"torch_npu's profiler API, so npuprof-run starts no profiler; unset {var} to profile with npuprof-run"
            )
    return None


def _as_int(text: str) -> int:
    """The flag as torch_npu reads it: ``int(value)``, 0 when that fails."""
    try:
        return int(text)
    except ValueError:
        return 0


class Member(NamedTuple):
    """A constant of torch_npu.profiler by name (``ProfilerLevel.Level1``), looked up at build time."""

    owner: str
    name: str


class Built(NamedTuple):
    """Filled in by ``build``: an object it creates from another part of the plan, or the session's callback."""

    what: str


class Plan(NamedTuple):
    """The keyword arguments of each torch_npu call, and the warnings that go with them."""

    profile: dict
    schedule: dict
    handler: dict
    experimental: dict
    notes: list


def _missing(flag: str, version: str, what: str, consequence: str) -> str:
    return f"{flag}: torch_npu {version} has no {what}; {consequence}"


def plan(
    config, version: str, caps: frozenset[str], output_dir: str, worker: str, window: Window | None = None
) -> Plan:
    """Every option mapped onto the calls torch_npu ``version`` accepts, for one window (by
    default the schedule's first); nothing is imported here."""
    if window is None:
        window = Window(1, config.warmup, config.active)
    notes: list[str] = []
    wanted = config.activities or DEFAULT_ACTIVITIES
    if "cuda" in wanted:
        notes.append("--activities cuda: the npu backend traces cpu and npu only; cuda is left out")
    activities = [Member("ProfilerActivity", name.upper()) for name in wanted if name in DEFAULT_ACTIVITIES]
    profile = {
        "activities": activities or [Member("ProfilerActivity", name.upper()) for name in DEFAULT_ACTIVITIES],
        "schedule": Built("schedule"),
        "on_trace_ready": Built("on_trace_ready"),
        "experimental_config": Built("experimental_config"),
        "record_shapes": config.record_shapes,
        "profile_memory": config.profile_memory,
        "with_stack": config.with_stack,
        "with_flops": config.with_flops,
        "with_modules": config.with_modules,
    }
    schedule = {"wait": 0, "active": window.active, "warmup": window.warmup, "repeat": 1, "skip_first": 0}
    handler = {"dir_name": output_dir, "worker_name": worker, "analyse_flag": config.analyse}
    if config.async_mode:
        if "async_mode" in caps:
            handler["async_mode"] = True
        else:
            notes.append(
                _missing(
                    "--async-mode",
                    version,
                    "tensorboard_trace_handler(async_mode=)",
                    "each window is parsed inside the step that ends it",
                )
            )
    return Plan(profile, schedule, handler, _experimental(config, version, caps, notes), notes)


def _experimental(config, version: str, caps: frozenset[str], notes: list[str]) -> dict:
    """The ``_ExperimentalConfig`` keywords: always level, AI Core metrics and export type, whose
    defaults differ between releases; every other field only when it differs from the default."""
    fields: dict = {"profiler_level": Member("ProfilerLevel", LEVEL_MEMBERS[config.level])}
    aic = config.aic_metrics
    if aic != "AiCoreNone" and config.level in ("level_none", "level0"):
        notes.append(
            f"--aic-metrics {aic} needs --level level1 or level2 (torch_npu resets it at {config.level}); "
            "collecting no AI Core metrics"
        )
        aic = "AiCoreNone"
    if aic == "MemoryAccess" and "aic_memory_access" not in caps:
        notes.append(
            _missing("--aic-metrics MemoryAccess", version, "AiCMetrics.MemoryAccess", "torch_npu's default applies")
        )
    else:
        fields["aic_metrics"] = Member("AiCMetrics", aic)
    exports = [Member("ExportType", EXPORT_MEMBERS[name]) for name in config.export_type]
    if len(exports) == 1:
        fields["export_type"] = exports[0]
    elif "export_type_list" in caps:
        fields["export_type"] = exports
    else:
        notes.append(
            _missing("--export-type text,db", version, "list export_type (one type per run)", "exporting text only")
        )
        fields["export_type"] = Member("ExportType", "Text")
    mstx = config.mstx
    if config.level == "level_none" and not mstx:
        notes.append("--level level_none collects mstx data only: --mstx is turned on")
        mstx = True
    if mstx:
        fields["mstx" if "mstx" in caps else "msprof_tx"] = True
    if config.op_attr and "db" not in config.export_type:
        notes.append("--op-attr needs --export-type db: torch_npu may ignore it with text export")
    values = {
        "l2_cache": config.l2_cache,
        "data_simplification": config.data_simplification,
        "record_op_args": config.record_op_args,
        "op_attr": config.op_attr,
        "gc_detect_threshold": config.gc_detect_threshold,
        "sys_io": config.sys_io,
        "sys_interconnection": config.sys_interconnection,
    }
    for name in ("sys_io", "sys_interconnection"):
        if values[name] and name not in caps:
            notes.append(_missing("--" + name.replace("_", "-"), version, f"_ExperimentalConfig({name}=)", "ignored"))
            values[name] = TORCH_NPU_DEFAULTS[name]
    for name, value in values.items():
        if value != TORCH_NPU_DEFAULTS[name]:
            fields[name] = value
    host_sys = _host_sys(config.host_sys, version, caps, notes)
    if host_sys:
        fields["host_sys"] = host_sys
    return fields


def _host_sys(wanted, version: str, caps: frozenset[str], notes: list[str]) -> list[Member]:
    if not wanted:
        return []
    if "host_sys" not in caps:
        notes.append(_missing("--host-sys", version, "_ExperimentalConfig(host_sys=)", "ignored"))
        return []
    chosen = list(wanted)
    if "numa" in chosen and "host_sys_numa" not in caps:
        chosen.remove("numa")
        # torch_npu empties the whole list when one item is unknown, so numa must go alone.
        notes.append(_missing("--host-sys numa", version, "HostSystem.NUMA", "collecting the others only"))
    return [Member("HostSystem", name.upper()) for name in chosen]


def analyse_call(directory: str, export_types, version: str, caps: frozenset[str]) -> tuple[dict, list[str]]:
    """The keywords of ``torch_npu.profiler.profiler.analyse`` for ``npuprof-run --analyse DIR``.

    Without ``export_types`` torch_npu reads the export type of each run from its
    profiler_info.json, which is what a re-parse should do.
    """
    kwargs: dict = {"profiler_path": directory}
    notes = []
    if export_types:
        if "analyse_export_type" in caps:
            kwargs["export_type"] = list(export_types) if len(export_types) > 1 else export_types[0]
        else:
            notes.append(
                _missing("--export-type", version, "analyse(export_type=)", "each run is parsed as it was recorded")
            )
    return kwargs, notes


def resolve(value, api):
    """The plan's value with every ``Member`` replaced by the installed torch_npu's constant."""
    if isinstance(value, Member):
        return getattr(getattr(api, value.owner), value.name)
    if isinstance(value, list):
        return [resolve(item, api) for item in value]
    if isinstance(value, dict):
        return {key: resolve(item, api) for key, item in value.items()}
    return value


class NpuBackend:
    """Builds the one torch_npu profiler of a process and reports the ``*_ascend_pt`` directories it made."""

    name = "npu"
    aftercare = True

    def __init__(self, note_warning, note_profiler=None) -> None:
        self.note_warning = note_warning
        self.note_profiler = note_profiler or (lambda kind, text: note_warning(names.NPU_LOGGED + text))
        #: torch_npu's trace handler, made by ``build`` (export follows build).
        self._handler: Callable[..., object] | None = None
        self._reported: set[str] = set()
        #: The ``ProfilerStep#`` number of the last built window's first step (backends.Backend).
        self.steps_from = 0
        #: Whether torch_npu parses each window (``analyse_flag``): without it (--no-analyse) the
        #: session keeps raw data only and no ``analyse.done`` ever comes, so nothing may wait for one.
        self.parses = True
        #: Whether the window last exported is being parsed: torch_npu parses, and its handler did
        #: not say the parse failed (export). The window's aftercare waits for that parse alone.
        self.parse_pending = False

    def build(self, *, config, window, on_trace_ready, output_dir: str, worker: str):
        """Create the trace handler first: calling torch_npu's factory sets the process-wide output
        path that the profiler's start then uses for its ``*_ascend_pt`` directory."""
        reason = conflict(os.environ)
        if reason is not None:
            raise Declined(reason)
        import torch_npu

        api = torch_npu.profiler
        watch_messages(self.note_profiler)
        version = installed_version(torch_npu)
        chosen = plan(config, version, capabilities(version, api), output_dir, worker, window)
        self.parses = bool(chosen.handler["analyse_flag"])
        for note in chosen.notes:
            self.note_warning(note)
        files.make_dirs(output_dir)
        self._reported = _session_dirs(output_dir, worker)
        # torch_npu prints its warnings on stdout (e.g. for every schedule without warmup); those
        # caused by building the profiler are ours to report, so they go to stderr, not the job's stdout.
        with contextlib.redirect_stdout(sys.stderr):
            self._handler = api.tensorboard_trace_handler(**resolve(chosen.handler, api))
            if not callable(self._handler):
                # torch_npu catches its own errors and returns None; its [ERROR] line says why.
                raise RuntimeError(f"torch_npu.profiler.tensorboard_trace_handler({output_dir!r}) returned no handler")
            made = {
                "schedule": api.schedule(**chosen.schedule),
                "experimental_config": api._ExperimentalConfig(**resolve(chosen.experimental, api)),
                "on_trace_ready": on_trace_ready,
            }
            prof = api.profile(
                **{
                    key: made[value.what] if isinstance(value, Built) else resolve(value, api)
                    for key, value in chosen.profile.items()
                }
            )
        self.steps_from = count_from(prof, window.first)
        return prof

    def stop(self, prof, *, unfinished: tuple[str, ...] = ()) -> None:
        """Stop the window; ``unfinished`` (a window cut short) says a step is under way, whose
        ``ProfilerStep#`` range must not be reported.

        torch_npu reports a range when it ends, and only while its profiler runs (the exit
        callback of csrc/profiler/npu_profiler.cpp returns when the profiler state is gone), and
        its ``stop()`` ends the open step range only when ``step_rec_fn`` is set (every release
        read, tests/test_npu_contract.py). So the range is put aside for the stop and ended after
        it: it is never reported, and the teardown under it stays in the trace, in no step. Its
        msTX range (2.14) ends after the stop too."""
        held = getattr(prof, STEP_RANGE, None) if unfinished else None
        if held is not None:
            setattr(prof, STEP_RANGE, None)
        try:
            prof.stop()
        finally:
            if held is not None:
                with contextlib.suppress(Exception):  # the window is saved: nothing left to lose
                    held.__exit__(None, None, None)
                    end_mstx = getattr(prof, "_end_step_mstx_range", None)
                    if callable(end_mstx):
                        end_mstx()

    def export(self, prof, output_dir: str, worker: str) -> list[str]:
        """Hand the window to torch_npu's handler (which parses it, unless --no-analyse) and report
        the session directory that torch_npu created for it when the window started."""
        if self._handler is None:
            raise RuntimeError("no torch_npu trace handler: the window was never built")
        _PARSE_FAILED[0] = False
        with _parse_on_stderr():
            self._handler(prof)
        self.parse_pending = self.parses and not _PARSE_FAILED[0]
        new = sorted(_session_dirs(output_dir, worker) - self._reported)
        self._reported.update(new)
        return [os.path.join(output_dir, name) for name in new]


#: The attributes of torch_npu's ``profile`` that name its steps (``"ProfilerStep#" +
#: str(step_num + _step_num_offset)`` in ``start()`` and ``step()``) and hold the open step range.
#: The offset came in 2.6.0 (for the dynamic profiler's restarts; 2.1.0.post8 to 2.5.1 lack it)
#: and only names steps: the schedule still reads ``step_num``. tests/test_npu_contract.py checks
#: each release read.
STEP_OFFSET = "_step_num_offset"
STEP_RANGE = "step_rec_fn"


def count_from(prof, first: int) -> int:
    """Name ``prof``'s steps by the job's numbers, its first ``first``; the first number it will
    write: ``first``, or 0 where the release has no offset to set (its steps are then numbered
    from 0 in each window, as torch_npu does by itself). The offset is set as an attribute, not
    with ``_set_step_num_offset_for_dynamic_prof``, which also marks the profiler as the dynamic
    profiler's (2.14 then records no msTX range per step)."""
    if first <= 0 or not isinstance(getattr(prof, STEP_OFFSET, None), int) or getattr(prof, STEP_RANGE, None):
        return 0
    try:
        setattr(prof, STEP_OFFSET, first)
    except Exception:  # noqa: BLE001 - an offset that cannot be set: torch_npu's own numbering
        return 0
    return first


#: True while torch_npu's trace handler runs in this process (``export``).
_EXPORTING = [False]
#: Set when torch_npu's handler, while it runs in this process, prints an error or warns that its
#: parse failed: no parse will come, and the window's aftercare must not wait for one (it waited
#: 600 s; the process's end, in the job's own time, and the launcher 120 s each). ProfInterface.
#: analyse catches the parse's exception and warns, in every release read: a window stopped at the
#: process's exit is one, its pool cannot start once the interpreter shuts down ("can't register
#: atexit after shutdown"). NpuProfiler.analyse in a daemon process prints an error and parses
#: nothing. The parse's own errors are printed in its forks, never here.
_PARSE_FAILED = [False]
PARSE_FAILED = "Profiling data parsing failed"
_FORK_HOOK = [False]


@contextlib.contextmanager
def _parse_on_stderr():
    """While torch_npu's handler runs, the processes it forks (its parse pool, sync or async: the
    parse never runs in the caller) print on stderr: the parse's lines ("Start parsing profiling
    data ...", "All profiling data parsed ..."), its turning cursor and its errors are the tool's
    doing, and the job's stdout must read as it does bare. Set in the child at the fork
    (os.register_at_fork): the job's own threads keep their stdout all along, which a
    redirect_stdout here, process-wide for the whole parse, would take from them."""
    if not _FORK_HOOK[0] and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_child_prints_on_stderr)
        _FORK_HOOK[0] = True
    _EXPORTING[0] = True
    try:
        yield
    finally:
        _EXPORTING[0] = False


def _child_prints_on_stderr() -> None:
    if _EXPORTING[0]:
        sys.stdout = sys.stderr  # its own forks (the parse's steps) inherit it


#: Where torch_npu's profiler prints its messages, the same in every release checked (2.1.0.post8 to
#: 2.14.0): plain print() calls to stdout, "[time] [ERROR] [pid] profiler.py: msg"; no logger.
MESSAGES_MODULE = "torch_npu.profiler.analysis.prof_common_func._constant"
MESSAGE_FUNCTIONS = {"print_error_msg": "error", "print_warn_msg": "warning"}
#: Warnings our own calls cause on purpose: a schedule without warmup (the documented default).
OWN_WARNINGS = ("Profiler won't be using warmup",)


def watch_messages(note) -> None:
    """Count torch_npu's profiler errors and warnings as they are printed: wrap its print functions
    where they are defined and in every loaded torch_npu.profiler module that imported them by
    name (modules loaded later take the wrapped ones). What torch_npu prints stays as it was."""
    import importlib

    try:
        home = importlib.import_module(MESSAGES_MODULE)
    except ImportError:
        return
    for name, kind in MESSAGE_FUNCTIONS.items():
        original = getattr(home, name, None)
        if original is None or getattr(original, "_npuprof", False):
            continue
        wrapped = _noting(original, kind, note)
        for module in list(sys.modules.values()):
            module_name = getattr(module, "__name__", "") or ""
            if module_name.startswith("torch_npu.profiler") and getattr(module, name, None) is original:
                setattr(module, name, wrapped)


def _noting(original, kind: str, note):
    def print_msg(message, *args, **kwargs):
        try:
            if _EXPORTING[0] and (kind == "error" or str(message).startswith(PARSE_FAILED)):
                _PARSE_FAILED[0] = True
            if not str(message).startswith(OWN_WARNINGS):
                note(kind, str(message))
        except Exception:  # noqa: BLE001 - torch_npu's own message must go out whatever we do
            pass
        return original(message, *args, **kwargs)

    print_msg.__name__ = original.__name__
    print_msg.__doc__ = original.__doc__
    print_msg._npuprof = True  # type: ignore[attr-defined]  # the mark watch_messages looks for
    return print_msg


def _session_dirs(output_dir: str, worker: str) -> set[str]:
    """The session directories of ``worker`` in ``output_dir``: torch_npu names them
    ``{worker}_{timestamp}_ascend_pt`` (2.4.0 and before) or ``{worker}_{pid}_{timestamp}_ascend_pt``
    (_profiler_path_creator.py of later releases). Another worker whose name extends this one's
    (``..._pid12`` and ``..._pid123``) differs before the underscore, so it is never taken."""
    try:
        entries = os.listdir(output_dir)
    except OSError:
        return set()
    prefix = worker + "_"
    return {entry for entry in entries if entry.startswith(prefix) and entry.endswith(names.ASCEND_DIR_SUFFIX)}
