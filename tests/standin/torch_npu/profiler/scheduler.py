"""STAND-IN for torch_npu/profiler/scheduler.py: the same Schedule, and its warning for warmup 0 on stdout."""

from enum import Enum

from torch_npu import _recorder
from torch_npu.profiler.analysis.prof_common_func._constant import print_warn_msg
from torch_npu.version import __version__


class ProfilerAction(Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


class Schedule:
    if __version__ == "2.4.0":

        @_recorder.recorded("schedule")
        def __init__(self, wait: int, active: int, warmup: int = 0, repeat: int = 0, skip_first: int = 0) -> None:
            self._set(wait, active, warmup, repeat, skip_first)

    else:

        @_recorder.recorded("schedule")
        def __init__(
            self,
            wait: int,
            active: int,
            warmup: int = 0,
            repeat: int = 0,
            skip_first: int = 0,
            skip_first_wait: int = 0,
        ) -> None:
            self._set(wait, active, warmup, repeat, skip_first)
            self.skip_first_wait = skip_first_wait

    def _set(self, wait, active, warmup, repeat, skip_first) -> None:
        # torch_npu resets bad values (with a warning) the same way. Its attributes are these (and
        # skip_first_wait from 2.6.0): profiler_info.json records the schedule's __dict__.
        self.wait = wait if isinstance(wait, int) and wait >= 0 else 0
        self.active = active if isinstance(active, int) and active > 0 else 1
        self.warmup = warmup if isinstance(warmup, int) and warmup >= 0 else 0
        self.repeat = repeat if isinstance(repeat, int) and repeat >= 0 else 0
        self.skip_first = skip_first if isinstance(skip_first, int) and skip_first >= 0 else 0
        if self.warmup == 0:
            print_warn_msg("Profiler won't be using warmup, this can skew profiler results")

    def __call__(self, step: int) -> ProfilerAction:
        if step < self.skip_first:
            return ProfilerAction.NONE
        step -= self.skip_first
        if getattr(self, "skip_first_wait", 0) != 0:
            step += self.wait
        num_steps = self.wait + self.warmup + self.active
        if self.repeat > 0 and step / num_steps >= self.repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < self.wait:
            return ProfilerAction.NONE
        if mod_step < self.wait + self.warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD
