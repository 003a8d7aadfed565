"""torch.profiler on CPU and CUDA (and NPU kernels through torch_npu's msPTI profiler, see
``npu_activity``), with the same options as the NPU backend.

Kineto speaks on the process's stderr (file descriptor 2, from C++): ``USDT:`` and ``STAGE:``
chatter at every start and stop (a hand-written profiler prints it too), and its warnings and
errors (``[W...] ... Warning: ...``, ``ERROR:``). While our profiler starts, steps and stops, fd 2
goes to a temporary file: the chatter is dropped, the warnings and errors go to the status
record (an error fails ``--check``) and one ``npuprof:`` line, and every other line (the job's
own, from another thread) is written back to stderr as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
import time

from npuprof_launch.common import files, names, options, outcomes
from npuprof_launch.inprocess import coexist, unwarned
from npuprof_launch.inprocess.backends import Declined

#: torch.profiler's warning when a schedule starts its second cycle, and on torch <= 2.11 (seen on
#: 2.11, fixed upstream in pytorch#180387) even on the first: the job would read about a profiler
#: it never started, while each of our windows is exported on its own, so nothing is lost.
CYCLE_WARNING = "Warning: Profiler clears events at the end of each cycle"
WARMUP_WARNING = "Profiler won't be using warmup"


#: Kineto's lines, by what they are: its chatter, its warnings, its errors.
KINETO_CHATTER = re.compile(r"^(USDT|STAGE|INFO):")
KINETO_WARNING = re.compile(r"^(\[W\d{4} |WARNING:)|Warning: ")
KINETO_ERROR = re.compile(r"^(\[E\d{4} |ERROR:)")
#: Kineto's "errors" that say nothing is wrong with the trace, dropped like its chatter: a profiler
#: started on another thread than the one that imported torch (a training loop in a
#: threading.Thread; a hand-written torch.profiler there prints it too, and its trace is whole).
KINETO_BENIGN = re.compile(r"External init callback must run in same thread as registerClient")
#: What a CUDA build of torch logs where it finds no usable GPU (no driver: cudaErrorInsufficientDriver,
#: code 35; seen with torch 2.14.1+cu130 on a CPU machine): CUPTI failing to start, and the device
#: count failing when the trace is collected. With no CUDA activity traced they say only that there
#: is no GPU here: the CPU trace is whole, so they are dropped rather than failing --check.
NO_GPU_LINES = re.compile(r"gpuGetDeviceCount failed|CUPTI initialization failed|getCuptiStatus\(\) failed")


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
        # fd 2 goes back first, whatever arrives meanwhile: a KeyboardInterrupt in the flush
        # must not leave the job's stderr in our file (its traceback would be lost).
        interrupted = None
        try:
            sys.stderr.flush()
        except BaseException as exc:  # noqa: BLE001 - raised again below, once fd 2 is back
            interrupted = exc
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        _sort_lines(capture, note)
        if interrupted is not None and not isinstance(interrupted, Exception):
            raise interrupted


def _sort_lines(capture, note) -> None:
    """What was captured: Kineto's chatter and benign lines dropped, its warnings and errors
    noted, every other line (another thread's) written on to the job's stderr."""
    try:
        capture.seek(0)
        text = capture.read().decode(errors="replace")
    finally:
        capture.close()
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if not stripped or KINETO_CHATTER.match(stripped) or KINETO_BENIGN.search(stripped):
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

    class QuietProfile(profiler_module.profile):  # type: ignore[name-defined]  # a base looked up at run time
        def _note(self, kind: str, line: str) -> None:
            cuda = getattr(profiler_module.ProfilerActivity, "CUDA", None)
            if NO_GPU_LINES.search(line) and cuda not in getattr(self, "activities", ()):
                return
            note(kind, line)

        def prepare_trace(self) -> None:
            with unwarned.ignoring(CYCLE_WARNING, UserWarning):
                super().prepare_trace()

        def start(self) -> None:
            with kineto_lines(self._note):
                super().start()

        def step(self) -> None:
            with kineto_lines(self._note):
                super().step()

        def stop(self) -> None:
            with kineto_lines(self._note):
                super().stop()

    return QuietProfile


def npu_activity(profiler_module, environ=None):
    """``(ProfilerActivity.PrivateUse1, "")`` when torch_npu's msPTI profiler can record this
    process's NPU kernels through plain torch.profiler, else ``(None, what is missing)``.

    torch_npu 2.12.0.post3 and 2.13+ register a libkineto profiler for PrivateUse1 when
    libtorch_npu.so loads (csrc/profiler/mspti_activity_profiler.cpp), and rename PrivateUse1 to
    ``npu``, which is when torch lists it in ``supported_activities()``. Its session records
    only when ``$ASCEND_HOME_PATH/lib64/libmspti.so`` exists (csrc/framework/interface/
    MsptiInterface.cpp, IsSupportMsptiFunc) and then loads ``libmspti.so`` by name, so the
    library must also be on the loader's path; otherwise torch would trace the CPU alone, silently.
    Only a torch_npu the job imported counts: the backend never imports it.
    """
    environ = os.environ if environ is None else environ
    torch_npu = sys.modules.get("torch_npu")
    if torch_npu is None:
        return None, "the job has not imported torch_npu (it records NPU kernels for torch.profiler)"
    from npuprof_launch.inprocess.backends import npu, npu_available

    version = npu.installed_version(torch_npu)
    if not _has_mspti_profiler(torch_npu, version):
        first = " or ".join(npu.MSPTI_PROFILER.since)
        return None, f"torch_npu {version} has no msPTI profiler for torch.profiler (it came in {first})"
    if not npu_available():
        return None, "torch_npu sees no NPU in this process"
    member = getattr(profiler_module.ProfilerActivity, "PrivateUse1", None)
    if member is None:
        return None, "this torch's ProfilerActivity has no PrivateUse1"
    try:
        listed = member in profiler_module.supported_activities()
    except Exception:  # noqa: BLE001 - torch cannot say: do not guess
        listed = False
    if not listed:
        return None, "torch.profiler.supported_activities() does not list PrivateUse1 (npu) in this process"
    home = environ.get("ASCEND_HOME_PATH", "")
    if not home:
        return None, "ASCEND_HOME_PATH is not set (source CANN's set_env.sh), so torch_npu's msPTI profiler stays off"
    library = os.path.join(home, "lib64", MSPTI_LIBRARY)
    if not os.path.exists(library):
        return None, f"{library} does not exist (CANN's msPTI library; torch_npu's msPTI profiler stays off)"
    if not _loadable(MSPTI_LIBRARY, environ):
        folder = os.path.dirname(library)
        return None, f"{folder} is not on LD_LIBRARY_PATH, and torch_npu loads {MSPTI_LIBRARY} by name"
    return member, ""


#: CANN's msPTI library, which torch_npu's profiler loads by this name.
MSPTI_LIBRARY = "libmspti.so"


def _has_mspti_profiler(torch_npu, version: str) -> bool:
    """The installed package's own word (the header its wheels ship), else the version table."""
    from npuprof_launch.inprocess.backends import npu

    init = getattr(torch_npu, "__file__", None)
    package = os.path.dirname(os.path.abspath(init)) if init else None
    if package and os.path.isdir(os.path.join(package, "include")):
        return os.path.isfile(os.path.join(package, *npu.MSPTI_PROFILER.owner.split("/")))
    return npu.has_feature(npu.MSPTI_PROFILER, version)


def _loadable(name: str, environ) -> bool:
    """Whether ``dlopen(name)`` would find it: on LD_LIBRARY_PATH, or in the loader's cache."""
    for folder in environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if folder and os.path.exists(os.path.join(folder, name)):
            return True
    # The loader's cache and default folders: dlopen it as torch_npu will (it stays loaded, as it
    # would once the profiler starts). ctypes.util.find_library would run ldconfig in a subprocess.
    try:
        import ctypes

        ctypes.CDLL(name)
        return True
    except OSError:
        return False
    except Exception:  # noqa: BLE001 - cannot tell: let torch_npu try
        return True


class TorchBackend:
    name = "torch"
    aftercare = True

    def __init__(self, note_warning, note_profiler=None) -> None:
        self.note_warning = note_warning
        #: note_profiler(kind, text): a warning or error the profiler itself logged.
        self.note_profiler = note_profiler or (lambda kind, text: note_warning(f"the profiler logged: {text}"))
        #: The ``ProfilerStep#`` number of the last built window's first step (backends.Backend).
        self.steps_from = 0
        self._unfinished: tuple[str, ...] = ()

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
            elif name == "npu":
                found, why = npu_activity(profiler_module)
                if found is None:
                    self.note_warning(f"--activities npu: {why}; left out")
                else:
                    chosen.append(found)
            else:
                self.note_warning(f"--activities {name}: not available to the torch backend here; left out")
        return chosen or [activity.CPU]

    def build(self, *, config, window, on_trace_ready, output_dir: str, worker: str):
        """The profiler of one window; ``output_dir`` and ``worker`` are only needed at export time here."""
        if coexist.job_profiler_active():
            raise Declined(coexist.REASON, outcomes.JOB_PROFILER)
        import torch
        import torch.profiler as profiler_module

        for option in options.OPTIONS:
            if option.group == "npu" and config.get(option.name) != options.default_for(option.name, config.scenario):
                self.note_warning(f"{option.flag} applies to the npu backend only; the torch backend ignores it")
        # torch warns on every schedule without warmup; warmup 0 is our documented default.
        with unwarned.ignoring(WARMUP_WARNING, UserWarning):
            schedule = profiler_module.schedule(
                wait=0, warmup=window.warmup, active=window.active, repeat=1, skip_first=0
            )
        numbered = JobSteps(schedule)
        prof = quiet_profile_class(profiler_module, self.note_profiler)(
            activities=self.activities(config, profiler_module, torch.cuda.is_available()),
            schedule=numbered,
            on_trace_ready=on_trace_ready,
            record_shapes=config.record_shapes,
            profile_memory=config.profile_memory,
            with_stack=config.with_stack,
            with_flops=config.with_flops,
            with_modules=config.with_modules,
        )
        self.steps_from = numbered.count_from(prof, window.first) if names_by_count(profiler_module.profile) else 0
        return prof

    def stop(self, prof, *, unfinished: tuple[str, ...] = ()) -> None:
        """Stop the window; ``unfinished`` names the ranges of a step under way (a window cut
        short). Kineto keeps a range still open when it stops, ended at the stop (whether torch
        exits it first or not), so the export takes them out of the file instead; the open step
        range's own name goes with them (torch 2.1 names it by its count before the step)."""
        own = getattr(getattr(prof, "step_rec_fn", None), "name", None) if unfinished else None
        self._unfinished = unfinished + ((own,) if isinstance(own, str) and own not in unfinished else ())
        try:
            prof.stop()
        finally:
            self._unfinished = ()

    def export(self, prof, output_dir: str, worker: str) -> list[str]:
        """Write one window as a Chrome trace named like tensorboard_trace_handler's files."""
        files.make_dirs(output_dir)
        path = os.path.join(output_dir, names.torch_trace_name(worker, time.time_ns()))
        try:
            prof.export_chrome_trace(path)
            # Kineto's writer fails silently (a full disk, a file-size limit): look before reporting success.
            if not os.path.isfile(path) or os.path.getsize(path) == 0:
                raise OSError(
                    f"the trace export wrote nothing to {path}; is the disk full or the directory unwritable?"
                )
        except BaseException:
            _remove_partial(path)
            raise
        if self._unfinished:
            try:
                drop_events(path, self._unfinished)
            except Exception as exc:  # noqa: BLE001 - the trace as torch wrote it is still a trace
                _remove_partial(path + ".tmp")
                self.note_warning(
                    f"could not take the unfinished step ({', '.join(self._unfinished)}) out of {path}: {exc}"
                )
        files.restrict(path)
        return [path]


class JobSteps:
    """torch's schedule, asked with the job's step numbers once ``count_from`` has set the
    profiler's counter.

    torch.profiler.profile names each step ``ProfilerStep#{step_num}`` (in ``start()`` and after
    each ``step()``), and ``step_num`` also feeds the schedule (``step()`` asks it for
    ``step_num + 1``); it starts at 0 and is a plain attribute in every release read (2.1 to
    2.14, tests/test_torch_contract.py). So the window's first step is set as the counter before
    ``start()``, and this schedule takes it back off, so the window's own schedule still sees 0, 1,
    2, ... The profile's constructor asks the schedule for step 0 before the counter is set, which
    is the window's step 0 either way.
    """

    def __init__(self, schedule) -> None:
        self.schedule = schedule
        self.first = 0

    def __call__(self, step: int):
        return self.schedule(max(step - self.first, 0))

    def count_from(self, prof, first: int) -> int:
        """Number ``prof``'s steps from ``first`` (the job's number of its first step); the first
        number it will write: ``first``, or 0 where this torch has no counter that can be set
        before the start (then its steps are numbered from 0 in each window, as before)."""
        if first <= 0 or getattr(prof, "step_num", None) != 0 or getattr(prof, "step_rec_fn", None) is not None:
            return 0
        try:
            prof.step_num = first
        except Exception:  # noqa: BLE001 - a counter that cannot be set: torch's own numbering
            return 0
        self.first = first
        return first


#: The local of torch 2.1's ``profile.step()`` that names the step it opens by the count before
#: its increment (its first two steps are both ProfilerStep#0; 2.4 names it by the new count).
OLD_COUNT_NAME = "cur_step"


def names_by_count(profile_class) -> bool:
    """Whether ``profile.step()`` names the step it opens ``ProfilerStep#{step_num}`` after counting
    it. On torch 2.1 a counter set to the job's step 3 would name steps 3, 3, 4: there torch's own
    numbering stays (0, 0, 1), and the record says so."""
    code = getattr(getattr(profile_class, "step", None), "__code__", None)
    return code is not None and OLD_COUNT_NAME not in code.co_varnames


def drop_events(path: str, names: tuple[str, ...]) -> None:
    """Take the events called ``names`` out of a Chrome trace (on CUDA, torch repeats each
    ``ProfilerStep#`` on the GPU's timeline: both go). The rest of the trace stays as it is: the
    work under the dropped ranges (a teardown after the last step) stays, belonging to no step."""
    wanted = set(names)
    with open(path, encoding="utf-8") as stream:
        trace = json.load(stream)
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        return
    kept = [event for event in events if not (isinstance(event, dict) and event.get("name") in wanted)]
    if len(kept) == len(events):
        return
    trace["traceEvents"] = kept
    part = path + ".tmp"
    with open(part, "w", encoding="utf-8") as stream:
        json.dump(trace, stream)
    os.replace(part, path)


def _remove_partial(path: str) -> None:
    """A failed export's pieces (Kineto writes ``PATH.tmp`` and renames it when done): on a full
    disk they hold the space the job itself may need next, and no viewer can open them."""
    for piece in (path, path + ".tmp"):
        try:
            os.unlink(piece)
        except OSError:
            pass
