"""torch.profiler on CPU and CUDA, with the same options as the NPU backend.

Kineto speaks on the process's stderr (file descriptor 2, from C++): ``USDT:`` and ``STAGE:``
chatter at every start and stop (a hand-written profiler prints it too), and its warnings and
errors (``[W...] ... Warning: ...``, ``ERROR:``). While our profiler starts, steps and stops, fd 2
goes to a temporary file: the chatter is dropped, the warnings and errors go to the status
record (an error fails ``--check``) and one ``npuprof:`` line, and every other line (the job's
own, from another thread) is written back to stderr as it was.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
import warnings

from npuprof_launch import coexist, files, names, options
from npuprof_launch.backends import Declined

#: torch.profiler's warning when a schedule starts its second cycle, and on torch <= 2.11 (seen on
#: 2.11, fixed upstream in pytorch#180387) even on the first: the job would read about a profiler
#: it never started, while each of our windows is exported on its own, so nothing is lost.
CYCLE_WARNING = "Warning: Profiler clears events at the end of each cycle"


#: Kineto's lines, by what they are: its chatter, its warnings, its errors.
KINETO_CHATTER = re.compile(r"^(USDT|STAGE|INFO):")
KINETO_WARNING = re.compile(r"^(\[W\d{4} |WARNING:)|Warning: ")
KINETO_ERROR = re.compile(r"^(\[E\d{4} |ERROR:)")


@contextlib.contextmanager
def kineto_lines(note):
    """Run the body with fd 2 captured; ``note(kind, line)`` hears each warning and error."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        capture = tempfile.TemporaryFile()
        os.dup2(capture.fileno(), 2)
    except OSError:  # no fd 2 to capture: let it be
        yield
        return
    try:
        yield
    finally:
        try:
            sys.stderr.flush()
        except Exception:  # noqa: BLE001
            pass
        os.dup2(saved, 2)
        os.close(saved)
        capture.seek(0)
        text = capture.read().decode(errors="replace")
        capture.close()
        for line in text.splitlines(keepends=True):
            stripped = line.strip()
            if not stripped or KINETO_CHATTER.match(stripped):
                continue
            if KINETO_ERROR.match(stripped):
                note("error", stripped)
            elif KINETO_WARNING.search(stripped):
                note("warning", stripped)
            else:
                os.write(2, line.encode())


def quiet_profile_class(profiler_module, note):
    """``torch.profiler.profile`` that keeps its own lines out of the job's stderr: its cycle
    warning, and what Kineto prints while ours starts, steps and stops (``kineto_lines``)."""

    class QuietProfile(profiler_module.profile):
        def prepare_trace(self) -> None:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=CYCLE_WARNING, category=UserWarning)
                super().prepare_trace()

        def start(self) -> None:
            with kineto_lines(note):
                super().start()

        def step(self) -> None:
            with kineto_lines(note):
                super().step()

        def stop(self) -> None:
            with kineto_lines(note):
                super().stop()

    return QuietProfile


class TorchBackend:
    name = "torch"
    aftercare = True

    def __init__(self, note_warning, note_profiler=None) -> None:
        self.note_warning = note_warning
        #: note_profiler(kind, text): a warning or error the profiler itself logged.
        self.note_profiler = note_profiler or (lambda kind, text: note_warning(f"the profiler logged: {text}"))

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
        return quiet_profile_class(profiler_module, self.note_profiler)(
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
