"""STAND-IN for torch_npu/profiler/profiler.py: profile, tensorboard_trace_handler and analyse.

The schedule drives on_trace_ready exactly as torch_npu's _profiler_action_controller.py does
(which transitions end a window, and which call on_trace_ready); everything else is only
recorded. No directory and no file is created: the real profiler's output cannot be imitated
honestly, so the deliverable checks must find nothing here.
"""

import enum
import os
from collections.abc import Callable, Iterable
from typing import Any, Optional, Union

from torch_npu import _recorder
from torch_npu.profiler.analysis.prof_common_func import _constant
from torch_npu.profiler.experimental_config import _ExperimentalConfig
from torch_npu.profiler.scheduler import ProfilerAction, _default_schedule_fn
from torch_npu.version import __version__

ProfilerActivity = enum.Enum("ProfilerActivity", ["CPU", "NPU"])
#: A stand-in switch: the error message its profiler prints (through print_error_msg) at each window's end.
ERROR_VAR = "TORCH_NPU_STANDIN_ERROR"

NONE, WARMUP, RECORD, SAVE = (
    ProfilerAction.NONE,
    ProfilerAction.WARMUP,
    ProfilerAction.RECORD,
    ProfilerAction.RECORD_AND_SAVE,
)
_CYCLE_END = ("stop_trace", "finalize_trace", "trace_ready")
#: (previous action, next action; None at stop()) -> what torch_npu does, in its order.
TRANSITIONS = {
    (NONE, WARMUP): ("init_trace", "warmup_trace"),
    (NONE, RECORD): ("init_trace", "start_trace"),
    (NONE, SAVE): ("init_trace", "start_trace"),
    (WARMUP, NONE): ("start_trace", "stop_trace", "finalize_trace"),
    (WARMUP, RECORD): ("start_trace",),
    (WARMUP, SAVE): ("start_trace",),
    (RECORD, NONE): ("stop_trace", "finalize_trace"),
    (RECORD, WARMUP): ("stop_trace", "finalize_trace"),
    (SAVE, NONE): _CYCLE_END,
    (SAVE, WARMUP): (*_CYCLE_END, "init_trace", "warmup_trace"),
    (SAVE, RECORD): (*_CYCLE_END, "init_trace", "start_trace"),
    (SAVE, SAVE): (*_CYCLE_END, "init_trace", "start_trace"),
    (WARMUP, None): ("finalize_trace", "delete_prof_dir"),
    (RECORD, None): _CYCLE_END,
    (SAVE, None): _CYCLE_END,
}


def supported_activities():
    return {ProfilerActivity.CPU, ProfilerActivity.NPU}


def _handler(analyse_flag, async_mode):
    def handler_fn(prof_inst) -> None:
        # The real handler parses the window here (prof_if.analyse) when analyse_flag is True.
        _recorder.record("trace_handler", analyse_flag=analyse_flag, async_mode=async_mode)

    return handler_fn


if __version__ == "2.4.0":

    @_recorder.recorded("tensorboard_trace_handler")
    def tensorboard_trace_handler(dir_name: str = None, worker_name: str = None, analyse_flag: bool = True):
        return _handler(analyse_flag, False)

    @_recorder.recorded("analyse")
    def analyse(profiler_path: str, max_process_number: int = max(1, (os.cpu_count() or 2) // 2)):
        """Offline parsing: recorded only; the stand-in parses nothing."""

else:

    @_recorder.recorded("tensorboard_trace_handler")
    def tensorboard_trace_handler(
        dir_name: Optional[str] = None,
        worker_name: Optional[str] = None,
        analyse_flag: bool = True,
        async_mode: bool = False,
    ):
        return _handler(analyse_flag, async_mode)

    @_recorder.recorded("analyse")
    def analyse(
        profiler_path: str,
        max_process_number: int = max(1, (os.cpu_count() or 2) // 2),
        export_type: Optional[Union[str, list]] = None,
    ):
        """Offline parsing: recorded only; the stand-in parses nothing."""


class _StepRange:
    """The ``ProfilerStep#N`` record_function of a step: the real profiler reports a range when it
    ends, and only while it records (csrc/profiler/npu_profiler.cpp: the exit callback returns
    once the profiler has stopped), so a range that ends after ``stop()`` is never seen."""

    def __init__(self, prof, number: int) -> None:
        self.prof = prof
        self.name = f"ProfilerStep#{number}"

    def __exit__(self, *exc) -> None:
        if not self.prof.stopped and self.prof.current_action in (RECORD, SAVE):
            self.prof._window.append(self.name)


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
            self._init(schedule, on_trace_ready)

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
            self._init(schedule, on_trace_ready)

    def _init(self, schedule, on_trace_ready) -> None:
        self.record_steps = callable(schedule)
        self.schedule = schedule if callable(schedule) else _default_schedule_fn
        self.on_trace_ready = on_trace_ready if callable(on_trace_ready) else None
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

    def start(self) -> None:
        self.stopped = False
        _recorder.record("start", step_num=self.step_num, action=self.current_action)
        self._transit(NONE, self.current_action)
        self._open_step()

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
            if action == "init_trace":
                self._window = []
            elif action == "trace_ready":
                _recorder.record("trace_ready", steps=self._window)
                problem = os.environ.get(ERROR_VAR)
                if problem:  # what the real one prints when a step of its parse fails
                    _constant.print_error_msg(problem)
                if self.on_trace_ready is not None:
                    self.on_trace_ready(self)
