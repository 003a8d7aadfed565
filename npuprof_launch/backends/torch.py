"""torch.profiler on CPU and CUDA, with the same options as the NPU backend."""

from __future__ import annotations

import os
import time
import warnings

from npuprof_launch import coexist, files, names, options
from npuprof_launch.backends import Declined

#: torch.profiler's warning when a schedule starts its second cycle, and on torch <= 2.11 (seen on
#: 2.11, fixed upstream in pytorch#180387) even on the first: the job would read about a profiler
#: it never started, while each of our windows is exported on its own, so nothing is lost.
CYCLE_WARNING = "Warning: Profiler clears events at the end of each cycle"


#: Kineto's own log level, read once when it first starts: 6 keeps its ``USDT:`` and ``STAGE:``
#: lines (which a hand-written profiler prints too) out of the job's stderr.
KINETO_LOG_VAR = "KINETO_LOG_LEVEL"
KINETO_QUIET = "6"


def quiet_profile_class(profiler_module):
    """``torch.profiler.profile`` that keeps its own lines out of the job's stderr: its cycle
    warning, and Kineto's log lines (unless the job set KINETO_LOG_LEVEL itself)."""

    class QuietProfile(profiler_module.profile):
        def prepare_trace(self) -> None:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=CYCLE_WARNING, category=UserWarning)
                quiet = KINETO_LOG_VAR not in os.environ
                if quiet:  # set only while Kineto starts: the job's children never see it
                    os.environ[KINETO_LOG_VAR] = KINETO_QUIET
                try:
                    super().prepare_trace()
                finally:
                    if quiet:
                        os.environ.pop(KINETO_LOG_VAR, None)

    return QuietProfile


class TorchBackend:
    name = "torch"

    def __init__(self, note_warning) -> None:
        self.note_warning = note_warning

    def activities(self, config, profiler_module, cuda_available: bool) -> list:
        activity = profiler_module.ProfilerActivity
        wanted = config.activities
        if wanted is None:
            wanted = ("cpu", "cuda") if cuda_available else ("cpu",)
        chosen = []
        for name in wanted:
            if name == "cpu":
                chosen.append(activity.CPU)
            elif name == "cuda" and cuda_available:
                chosen.append(activity.CUDA)
            else:
                self.note_warning(f"--activities {name}: not available to the torch backend here; left out")
        return chosen or [activity.CPU]

    def build(self, *, config, window, on_trace_ready, output_dir: str, worker: str):
        """The profiler of one window; ``output_dir`` and ``worker`` are only needed at export time here."""
        if coexist.job_profiler_active():
            raise Declined(coexist.REASON)
        import torch
        import torch.profiler as profiler_module

        for option in options.OPTIONS:
            if option.group == "npu" and config.get(option.name) != options.default_for(option.name, config.scenario):
                self.note_warning(f"{option.flag} applies to the npu backend only; the torch backend ignores it")
        with warnings.catch_warnings():
            # torch warns on every schedule without warmup; warmup 0 is our documented default.
            warnings.filterwarnings("ignore", message=".*warmup.*")
            schedule = profiler_module.schedule(
                wait=0, warmup=window.warmup, active=window.active, repeat=1, skip_first=0
            )
        return quiet_profile_class(profiler_module)(
            activities=self.activities(config, profiler_module, torch.cuda.is_available()),
            schedule=schedule,
            on_trace_ready=on_trace_ready,
            record_shapes=config.record_shapes,
            profile_memory=config.profile_memory,
            with_stack=config.with_stack,
            with_flops=config.with_flops,
            with_modules=config.with_modules,
        )

    def export(self, prof, output_dir: str, worker: str) -> list[str]:
        """Write one window as a Chrome trace named like tensorboard_trace_handler's files."""
        files.make_dirs(output_dir)
        path = os.path.join(output_dir, names.torch_trace_name(worker, time.time_ns()))
        prof.export_chrome_trace(path)
        # Kineto's writer fails silently (a full disk, a file-size limit): look before reporting success.
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            raise OSError(f"the trace export wrote nothing to {path}; is the disk full or the directory unwritable?")
        files.restrict(path)
        return [path]
