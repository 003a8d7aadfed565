"""STAND-IN for torch_npu/profiler/profiler.py: profile, tensorboard_trace_handler and analyse.

The schedule drives the profiler exactly as torch_npu's _profiler_action_controller.py does
(which transitions start, stop and save a window, and which call on_trace_ready), and each
transition does on disk what the real one's does (profiler_interface.py): a session directory per
window, its raw data and profiler_info, and the parse that tensorboard_trace_handler's handler
asks for; the offline ``analyse`` parses what is already there. Every call is also recorded
(_recorder.py), in the process that makes it.
"""

import enum
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Optional, Union

from torch_npu import _recorder, _switches
from torch_npu.profiler import _standin_raw as raw
from torch_npu.profiler._profiler_path_creator import ProfPathCreator
from torch_npu.profiler.analysis._npu_profiler import NpuProfiler
from torch_npu.profiler.analysis.prof_common_func._constant import Constant, print_error_msg, print_warn_msg
from torch_npu.profiler.analysis.prof_common_func._utils import no_exception_func
from torch_npu.profiler.experimental_config import _default_config, _ExperimentalConfig
from torch_npu.profiler.profiler_interface import _ProfInterface
from torch_npu.profiler.scheduler import ProfilerAction, _default_schedule_fn
from torch_npu.version import __version__

ProfilerActivity = enum.Enum("ProfilerActivity", ["CPU", "NPU"])

NONE, WARMUP, RECORD, SAVE = (
    ProfilerAction.NONE,
    ProfilerAction.WARMUP,
    ProfilerAction.RECORD,
    ProfilerAction.RECORD_AND_SAVE,
)
#: 2.4.0 has no warmup_trace: its profiler starts collecting at start_trace.
_WARMUP = () if __version__ == "2.4.0" else ("warmup_trace",)
_CYCLE_END = ("stop_trace", "finalize_trace", "trace_ready")
#: (previous action, next action; None at stop()) -> what torch_npu does, in its order.
TRANSITIONS = {
    (NONE, WARMUP): ("init_trace", *_WARMUP),
    (NONE, RECORD): ("init_trace", "start_trace"),
    (NONE, SAVE): ("init_trace", "start_trace"),
    (WARMUP, NONE): ("start_trace", "stop_trace", "finalize_trace"),
    (WARMUP, RECORD): ("start_trace",),
    (WARMUP, SAVE): ("start_trace",),
    (RECORD, NONE): ("stop_trace", "finalize_trace"),
    (RECORD, WARMUP): ("stop_trace", "finalize_trace"),
    (SAVE, NONE): _CYCLE_END,
    (SAVE, WARMUP): (*_CYCLE_END, "init_trace", *_WARMUP),
    (SAVE, RECORD): (*_CYCLE_END, "init_trace", "start_trace"),
    (SAVE, SAVE): (*_CYCLE_END, "init_trace", "start_trace"),
    (WARMUP, None): ("finalize_trace", "delete_prof_dir"),
    (RECORD, None): _CYCLE_END,
    (SAVE, None): _CYCLE_END,
}


def supported_activities():
    return {ProfilerActivity.CPU, ProfilerActivity.NPU}


def _handler(analyse_flag, async_mode):
    if not isinstance(analyse_flag, bool):
        print_warn_msg("analyse_flag is not bool, set by default.")
        analyse_flag = True
    if not isinstance(async_mode, bool):
        print_warn_msg("async_mode is not bool, set by default.")
        async_mode = False

    def handler_fn(prof_inst) -> None:
        _recorder.record("trace_handler", analyse_flag=analyse_flag, async_mode=async_mode)
        if not analyse_flag:
            return
        if __version__ == "2.4.0":
            prof_inst.analyse()  # 2.4.0 calls on_trace_ready with the _ProfInterface itself
        else:
            prof_inst.prof_if.analyse(async_mode=async_mode)

    return handler_fn


if __version__ == "2.4.0":

    @_recorder.recorded("tensorboard_trace_handler")
    @no_exception_func()
    def tensorboard_trace_handler(dir_name: str = None, worker_name: str = None, analyse_flag: bool = True):
        ProfPathCreator().init(worker_name=worker_name, dir_name=dir_name)
        return _handler(analyse_flag, False)

    @_recorder.recorded("analyse")
    @no_exception_func()
    def analyse(profiler_path: str, max_process_number: int = Constant.DEFAULT_PROCESS_NUMBER):
        NpuProfiler.analyse(profiler_path, max_process_number=_process_number(max_process_number))

else:

    @_recorder.recorded("tensorboard_trace_handler")
    @no_exception_func()
    def tensorboard_trace_handler(
        dir_name: Optional[str] = None,
        worker_name: Optional[str] = None,
        analyse_flag: bool = True,
        async_mode: bool = False,
    ):
        ProfPathCreator().init(worker_name=worker_name, dir_name=dir_name)
        return _handler(analyse_flag, async_mode)

    @_recorder.recorded("analyse")
    @no_exception_func()
    def analyse(
        profiler_path: str,
        max_process_number: int = Constant.DEFAULT_PROCESS_NUMBER,
        export_type: Optional[Union[str, list]] = None,
    ):
        max_process_number = _process_number(max_process_number)
        if export_type is not None:
            export_type = [export_type] if isinstance(export_type, str) else export_type
            if not isinstance(export_type, list) or not export_type or not set(export_type) <= {"text", "db"}:
                print_warn_msg(f"Invalid parameter export_type: {export_type}, reset it to None.")
                export_type = None
            else:
                export_type = list(set(export_type))
        NpuProfiler.analyse(profiler_path, max_process_number=max_process_number, export_type=export_type)


def _process_number(max_process_number) -> int:
    if not isinstance(max_process_number, int) or max_process_number <= 0:
        print_warn_msg("Invalid max_process_number, reset it to default!")
        return Constant.DEFAULT_PROCESS_NUMBER
    if max_process_number > (os.cpu_count() or 1):
        print_warn_msg("max_process_number exceeds the number of cpu cores, reset it to the number of cpu cores!")
        return os.cpu_count() or 1
    return max_process_number


class _StepRange:
    """The ``ProfilerStep#N`` record_function of a step: the real profiler reports a range when it
    ends, and only while it records (csrc/profiler/npu_profiler.cpp: the exit callback returns
    once the profiler has stopped), so a range that ends after ``stop()`` is never seen."""

    def __init__(self, prof, number: int) -> None:
        self.prof = prof
        self.name = f"ProfilerStep#{number}"
        self.start_ns = time.time_ns()
        self.thread = threading.get_native_id()
        self.cpu_ns = time.thread_time_ns()

    def __exit__(self, *exc) -> None:
        if not self.prof.stopped and self.prof.current_action in (RECORD, SAVE):
            self.prof._window.append(self.name)
            tid = threading.get_native_id()
            cpu_ns = time.thread_time_ns() - self.cpu_ns if tid == self.thread else 0
            span = raw.Range(self.name, self.start_ns, time.time_ns(), os.getpid(), tid, cpu_ns)
            self.prof.prof_if.ranges.append(span)


class profile:
    if __version__ == "2.4.0":

        @_recorder.recorded("profile")
        def __init__(
            self,
            *,
            activities: Optional[Iterable[ProfilerActivity]] = None,
            schedule: Optional[Callable[[int], ProfilerAction]] = None,
            on_trace_ready: Optional[Callable[..., Any]] = None,
            record_shapes: bool = False,
            profile_memory: bool = False,
            with_stack: bool = False,
            with_flops: bool = False,
            with_modules: bool = False,
            experimental_config: Optional[_ExperimentalConfig] = None,
            use_cuda: Optional[bool] = None,
        ):
            flags = dict(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack)
            flags.update(with_flops=with_flops, with_modules=with_modules)
            self._init(schedule, on_trace_ready, activities, experimental_config, flags)

    else:

        @_recorder.recorded("profile")
        def __init__(
            self,
            *,
            activities: Optional[Iterable[ProfilerActivity]] = None,
            schedule: Optional[Callable[[int], ProfilerAction]] = None,
            on_trace_ready: Optional[Callable[..., Any]] = None,
            record_shapes: bool = False,
            profile_memory: bool = False,
            with_stack: bool = False,
            with_flops: bool = False,
            with_modules: bool = False,
            experimental_config: Optional[_ExperimentalConfig] = None,
            execution_trace_observer: Optional[Any] = None,
            custom_trace_id_callback: Optional[Callable[[], str]] = None,
            use_cuda: Optional[bool] = None,
        ):
            flags = dict(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack)
            flags.update(with_flops=with_flops, with_modules=with_modules)
            self._init(schedule, on_trace_ready, activities, experimental_config, flags)

    def _init(self, schedule, on_trace_ready, activities, experimental_config, flags: dict) -> None:
        self.record_steps = callable(schedule)
        self.schedule = schedule if callable(schedule) else _default_schedule_fn
        self.on_trace_ready = on_trace_ready if callable(on_trace_ready) else None
        self.metadata: dict = {}
        self.prof_if = _ProfInterface(
            activities=set(activities) if activities else supported_activities(),
            schedule=self.schedule,
            metadata=self.metadata,
            experimental_config=experimental_config if experimental_config is not None else _default_config(),
            **flags,
        )
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        if __version__ != "2.4.0":  # 2.6.0 and later name steps step_num + this offset
            self._step_num_offset = 0
        self.step_rec_fn: Optional[_StepRange] = None
        self.stopped = False
        self._window: list[str] = []

    def _open_step(self) -> None:
        if self.record_steps:
            self.step_rec_fn = _StepRange(self, self.step_num + getattr(self, "_step_num_offset", 0))

    @no_exception_func()
    def start(self) -> None:
        self.stopped = False
        _recorder.record("start", step_num=self.step_num, action=self.current_action)
        time.sleep(_switches.number(_switches.START_S))
        if not self.on_trace_ready:
            ProfPathCreator().init(export_only_mode=True)
        self._transit(NONE, self.current_action)
        self._open_step()

    @no_exception_func()
    def step(self) -> None:
        if self.stopped:
            _recorder.record("step_after_stop", step_num=self.step_num)
            return
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        _recorder.record("step", step_num=self.step_num, previous=prev_action, action=self.current_action)
        self._transit(prev_action, self.current_action)
        self._open_step()

    @no_exception_func()
    def stop(self) -> None:
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
        _recorder.record("stop", step_num=self.step_num, action=self.current_action)
        self._transit(self.current_action, None)
        self.stopped = True

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self.stop()

    def _transit(self, previous, current) -> None:
        for action in TRANSITIONS.get((previous, current), ()):
            if action == "trace_ready":
                self._trace_ready()
                continue
            if action == "init_trace":
                self._window = []
            getattr(self.prof_if, action)()

    def _trace_ready(self) -> None:
        _recorder.record("trace_ready", steps=self._window)
        problem = os.environ.get(_switches.ERROR)
        if problem:  # what the real one prints when a step of its parse fails
            print_error_msg(problem)
        if self.on_trace_ready is not None:
            # 2.4.0's action controller passes its _ProfInterface, later ones the profile.
            self.on_trace_ready(self.prof_if if __version__ == "2.4.0" else self)
