"""STAND-IN for torch_npu/profiler/analysis/_profiling_parser.py: the parse of one session directory.

In the real one's order: the constructor (run by the process that asks for the parse) removes and
recreates ``ASCEND_PROFILER_OUTPUT/``; ``analyse_profiling_data`` (run by a worker of the parse
pool, _npu_profiler.py) opens the parse's log (2.6 and later: logs/, _log.py), prints its start
and end with print_info_msg, runs the release's parse steps (prof_config/_parser_config.py) for
the export type(s) profiler_info.json recorded (or offline analyse's ``export_type``), those the
real task manager forks each in a forked child (each with a log of its own), prints the task
manager's "cursor" progress on stdout, removes what data_simplification removes, and writes
``analyse.done`` last (2.6 and later; 2.4.0 writes no such file and no logs).

The steps that write a deliverable write it with _standin_output (names real, data synthetic);
the others only log their start and finish. $TORCH_NPU_STANDIN_PARSE_S makes the parse take that
long; $TORCH_NPU_STANDIN_ERROR is logged as an [ERROR] line, as a failing step logs its error.
The real one's own log lines beyond these (its task table, CANN's messages) are not imitated,
and a window that recorded no step (a profile without a schedule) gets no CPU events.
"""

import json
import multiprocessing
import os
import re
import shutil
import sys
import threading
import time
from datetime import datetime, timezone
from typing import NamedTuple, Optional

from torch_npu import _switches
from torch_npu.profiler import _standin_collectives as collectives
from torch_npu.profiler import _standin_raw as raw
from torch_npu.profiler.analysis import _standin_output as files
from torch_npu.profiler.analysis.prof_common_func._constant import Constant, print_info_msg, print_warn_msg
from torch_npu.profiler.analysis.prof_config import _parser_config as parsers
from torch_npu.version import __version__

if __version__ != "2.4.0":
    from torch_npu.profiler.analysis.prof_common_func._log import ProfilerLogger

#: What msprof --export leaves in the PROF_ directory; data_simplification removes it after the parse.
MSPROF_OUTPUTS = ("mindstudio_profiler_output", "mindstudio_profiler_log", "analyze")


class Window(NamedTuple):
    """What the parse steps write from: the steps recorded (none without FRAMEWORK data), the spans
    the kernels ran in (the steps, else the whole window) and the kernels (none without CANN data)."""

    output: str
    steps: list
    spans: list
    kernels: list
    pid: Optional[int]
    tid: int
    device: int
    rank_id: object
    level: str
    cann: str
    comms: list


class ProfilingParser:
    def __init__(self, profiler_path: str, analysis_type: str, output_path: str, kwargs: dict):
        self._profiler_path = profiler_path
        self._analysis_type = analysis_type
        self._output_path = output_path
        self._kwargs = kwargs
        self._start_time = _now()
        if analysis_type == Constant.TENSORBOARD_TRACE_HANDLER:
            self._output_path = os.path.join(profiler_path, Constant.OUTPUT_DIR)
            shutil.rmtree(self._output_path, ignore_errors=True)
            os.makedirs(self._output_path, mode=0o750, exist_ok=True)
        self.logger = None

    def analyse_profiling_data(self) -> None:
        if __version__ == "2.4.0":
            print_info_msg(f"Start parsing profiling data: {self._profiler_path}")
        else:
            ProfilerLogger.init(self._profiler_path, "ProfilingParser")
            self.logger = ProfilerLogger.get_instance()
            mode = "async" if self._kwargs.get("async_mode") else "sync"
            print_info_msg(f"Start parsing profiling data in {mode} mode at: {self._profiler_path}")
        recorded = _Recorded(self._profiler_path, self._kwargs.get("export_type"))
        self.run_parser(recorded)
        if self._analysis_type == Constant.TENSORBOARD_TRACE_HANDLER:
            self.simplify_data(recorded)
            if __version__ != "2.4.0":
                _touch(os.path.join(self._output_path, "analyse.done"))
        print_info_msg(f"All profiling data parsed in a total time of {_now() - self._start_time}")

    def run_parser(self, recorded: "_Recorded") -> None:
        cann = raw.prof_dir(self._profiler_path)
        if not cann:
            config = parsers.ONLY_FWK_CONFIG
        else:
            config = parsers.LEVEL_NONE_CONFIG if recorded.level == Constant.LEVEL_NONE else parsers.COMMON_CONFIG
        # 2.14.0 also runs the db steps when CANN's msprof exports a db with text (its --help says
        # "text(which will also export the database)"); the CANN imitated does not.
        steps = []
        for export_type in recorded.export_types:
            steps += [step for step in config.get(export_type, []) if step not in steps]
        window = self._window(recorded, cann)
        done = threading.Event()
        threading.Thread(target=_cursor, args=(done,), daemon=True).start()
        try:
            problem = os.environ.get(_switches.ERROR)
            if problem and self.logger is not None:
                self.logger.error("%s", problem)
            time.sleep(_switches.number(_switches.PARSE_S))
            for step in steps:
                if step in parsers.SUB_PROCESS:
                    child = multiprocessing.get_context("fork").Process(target=self._forked_step, args=(step, window))
                    child.start()
                    child.join()
                else:
                    self._step(step, window)
        finally:
            done.set()

    def _window(self, recorded: "_Recorded", cann: str) -> Window:
        ranges = [r for r in raw.ranges(self._profiler_path) if r.name.startswith("ProfilerStep#")]
        steps = [files.Step(int(r.name.split("#")[1]), r.start_ns, r.end_ns) for r in ranges]
        device = 0
        if cann:
            found = [name for name in os.listdir(cann) if re.match(r"^device_\d", name)]
            device = int(found[0].split("_")[1]) if found else 0
        spans = steps or [recorded.span()]
        first = ranges[0] if ranges else None
        return Window(
            output=self._output_path,
            steps=steps,
            spans=spans,
            kernels=self._kernels(spans, ranges) if cann else [],
            pid=first.pid if first else None,
            tid=first.tid if first else 0,
            device=device,
            rank_id=recorded.rank_id,
            level=recorded.level,
            cann=cann,
            comms=_comms(self._profiler_path) if cann else [],
        )

    @staticmethod
    def _kernels(spans: list, ranges: list) -> list:
        """``OPERATORS``' kernels, and with $TORCH_NPU_STANDIN_DEVICE_WORK each step's own work."""
        found = files.kernels(spans)
        if os.environ.get(_switches.DEVICE_WORK) == "1":
            work_ns = {int(r.name.split("#")[1]): files.work_ns(r.flops, r.cpu_ns) for r in ranges}
            found = sorted(found + files.work_kernels(spans, work_ns), key=lambda kernel: kernel.start_ns)
        return found

    def _forked_step(self, name: str, window: Window) -> None:
        """A step in a forked child. The cursor's thread may have held stdout's lock at the fork, so
        the child writes through a stdout of its own (the real child sends its prints to the parent,
        for the same reason)."""
        sys.stdout = open(sys.stdout.fileno(), "w", buffering=1, closefd=False)  # noqa: SIM115
        self._step(name, window)

    def _step(self, name: str, window: Window) -> None:
        logger = None
        if __version__ != "2.4.0":
            ProfilerLogger.init(self._profiler_path, name)
            logger = ProfilerLogger.get_instance()
            logger.info("%s start.", name)
        write = WRITERS.get(name)
        if write is not None:
            write(window)
        if logger is not None:
            logger.info("%s finish.", name)

    def simplify_data(self, recorded: "_Recorded") -> None:
        """What the real simplify_data removes: CANN's intermediate files, and with data_simplification
        msprof's outputs (2.4.0: also FRAMEWORK/, and profiler_metadata.json of a db export)."""
        simplify = recorded.data_simplification
        cann = raw.prof_dir(self._profiler_path)
        targets = []
        if cann:
            devices = sorted(os.path.join(cann, n) for n in os.listdir(cann) if re.match(r"^device_\d", n))
            if __version__ == "2.4.0":
                devices = devices[:1]
            removed = ["sqlite", "summary", "timeline"] if simplify else ["sqlite"]
            for folder in [*devices, os.path.join(cann, "host")]:
                targets += [os.path.join(folder, name) for name in removed]
        if simplify and __version__ == "2.4.0":
            if recorded.export_types == [Constant.Db]:
                targets.append(os.path.join(self._profiler_path, Constant.PROFILER_META_DATA))
            targets.append(os.path.join(self._profiler_path, Constant.FRAMEWORK_DIR))
        if simplify and cann:
            targets += [os.path.join(cann, name) for name in MSPROF_OUTPUTS]
            targets += [os.path.join(cann, n) for n in os.listdir(cann) if re.match(r"msprof_analysis_\d+\.log$", n)]
        for target in targets:
            if os.path.isdir(target):
                shutil.rmtree(target, ignore_errors=True)
            elif os.path.exists(target):
                os.remove(target)


class _Recorded:
    """What the session's profiler_info*.json recorded, as the real ProfilerConfig.load_info reads it."""

    def __init__(self, profiler_path: str, export_type=None) -> None:
        info = {}
        for name in os.listdir(profiler_path):
            if name == "profiler_info.json" or re.match(r"^profiler_info_\d+\.json", name):
                try:
                    with open(os.path.join(profiler_path, name)) as handle:
                        info = json.load(handle)
                except (OSError, ValueError):
                    info = {}
                break
        experimental = (info.get(Constant.CONFIG) or {}).get(Constant.EXPERIMENTAL_CONFIG) or {}
        self.rank_id = info.get(Constant.RANK_ID, -1)
        self.level = experimental.get(Constant.PROFILER_LEVEL, Constant.LEVEL0)
        self.data_simplification = experimental.get(Constant.DATA_SIMPLIFICATION, True)
        recorded = experimental.get(Constant.EXPORT_TYPE, Constant.Text)
        # 2.4.0 records one export type, a string, and its offline analyse takes none.
        chosen = export_type if export_type is not None and __version__ != "2.4.0" else recorded
        self.export_types = [chosen] if isinstance(chosen, str) else list(chosen or [Constant.Text])
        self._start = info.get(Constant.START_INFO) or {}
        self._end = info.get(Constant.END_INFO) or {}

    def span(self) -> "files.Step":
        """The window as a span, in ns since the epoch: its end, and its length on the monotonic clock."""
        end_ns = int(self._end.get(Constant.FWK_END_TIME) or time.time_ns())
        started = int(self._start.get(Constant.StartMonotonic) or 0)
        elapsed = int(self._end.get(Constant.FWK_END_MONOTONIC) or 0) - started
        if not 0 < elapsed < end_ns:
            elapsed = 1_000_000
        return files.Step(None, end_ns - elapsed, end_ns)


def _now() -> datetime:
    if __version__ == "2.4.0":
        return datetime.now(tz=timezone.utc).replace(tzinfo=None)
    return datetime.now(tz=timezone.utc).astimezone()


def _touch(path: str) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o640))


def _cursor(done: threading.Event) -> None:
    """The real task manager's progress_bar="cursor": a turning bar on stdout, one turn a second."""
    marks = "|/-\\"
    turn = 0
    while not done.is_set():
        print(marks[turn] + "\b", end="", flush=True)
        done.wait(1)
        turn = (turn + 1) % len(marks)


def _export_cann(window: Window) -> None:
    """CANNExportParser: msprof --export over the PROF_ directory (its outputs are removed later)."""
    if not window.cann:
        return
    started = _now()
    if raw.data_bytes(window.cann) >= Constant.PROF_WARN_SIZE:
        print_warn_msg(
            "The parsing time is expected to exceed 30 minutes, "
            "and you can choose to stop the process and use offline parsing."
        )
    stamp = datetime.now(tz=timezone.utc).astimezone().strftime("%Y%m%d%H%M%S")
    exported = os.path.join(window.cann, "mindstudio_profiler_output")
    os.makedirs(exported, mode=0o750, exist_ok=True)
    os.makedirs(os.path.join(window.cann, "mindstudio_profiler_log"), mode=0o750, exist_ok=True)
    files.write_json(os.path.join(exported, f"msprof_{stamp}.json"), [])
    device = os.path.join(window.cann, f"device_{window.device}")
    for name in ("sqlite", "summary", "timeline"):
        os.makedirs(os.path.join(device, name), mode=0o750, exist_ok=True)
    print_info_msg(f"CANN profiling data parsed in a total time of {_now() - started}")


def _comms(session: str) -> list:
    """The window's HCCL operations: the job's collectives captured while it recorded (gloo's work
    range of each: its start, its end)."""
    return [
        files.Comm(c.op_type, c.group, c.seq, c.start_ns, c.end_ns, c.bytes, c.world, c.rank)
        for c in collectives.read(session)
    ]


def _trace_view(window: Window) -> None:
    spans = window.spans if window.cann else None
    files.write_trace_view(
        window.output, window.steps, window.kernels, window.pid, window.tid, window.device, window.comms, spans
    )


def _kernel_details(window: Window) -> None:
    if window.kernels:
        files.write_kernel_details(window.output, window.kernels, window.device, files.KERNEL_BASE_HEADERS[__version__])


def _integrate(window: Window) -> None:
    """IntegrateParser copies CANN's op_statistic only at Level1 and Level2 (LEVEL_PARSER_CONFIG)."""
    if window.kernels and window.level in (Constant.LEVEL1, Constant.LEVEL2):
        files.write_op_statistic(window.output, window.kernels, window.device)


def _operator_details(window: Window) -> None:
    if window.kernels and window.pid is not None:
        files.write_operator_details(window.output, window.kernels)


def _step_trace_time(window: Window) -> None:
    if window.kernels:
        header = files.STEP_TRACE_TIME_HEADERS[__version__]
        files.write_step_trace_time(window.output, window.spans, window.kernels, window.device, header, window.comms)


def _communication(window: Window) -> None:
    files.write_communication(window.output, window.comms, window.steps)


def _db(window: Window) -> None:
    """DbParser: the pytorch db (STEP_TIME from the framework's steps, COMMUNICATION_OP from CANN's
    data), and analysis.db where the real one writes it: with CANN data, above Level_none."""
    path = os.path.join(window.output, files.db_name(window.rank_id))
    files.make_db(path, npu_info=bool(window.cann))
    files.add_db_tables(path, window.comms, window.steps)
    if window.cann and window.level != Constant.LEVEL_NONE and window.kernels:
        files.add_compute_tasks(path, window.kernels)
    if window.cann and window.level != Constant.LEVEL_NONE:
        columns = files.STEP_TRACE_TIME_COLUMNS_BY_RELEASE[__version__]
        files.write_analysis_db(
            window.output, window.comms, window.steps, window.spans, window.kernels, window.device, columns
        )


#: The parse steps that write a file, by the real parser's class name; the others only log.
WRITERS = {
    "CANNExportParser": _export_cann,
    "TraceViewParser": _trace_view,
    "KernelViewParser": _kernel_details,
    "IntegrateParser": _integrate,
    "OperatorViewParser": _operator_details,
    "TraceStepTimeParser": _step_trace_time,
    "DbParser": _db,
    "CommunicationParser": _communication,
}
