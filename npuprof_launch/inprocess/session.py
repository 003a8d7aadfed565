"""The profiling of one process (or of one stage in it): its steps, its windows, its record.

A clock tells the session that a step ended (``step_ended``) or, for a declared function, that
one begins (``step_began``). The session counts, times and, when the schedule (schedule.py) has
something to do at that boundary, *reconciles* the profiler with it at the next safe point
(safepoints.py): start the window's profiler before its first step, step it once per boundary
inside the window, save and stop it after its last step. Reconciling to the step count, rather
than replaying each boundary's action, means an action that had to wait (inside backward, inside
a range of the job) is never stale: it does what the count asks for when it runs.

Each window has a profiler object of its own, built by the backend for that window's warmup and
active steps and dropped after it: no profiler object exists between windows, so no state of
torch's outlives one. While the schedule is still skipping, the session only counts.

Every recorded step carries the job's own step number on the timeline: a ``iteration#N`` range
(a declared function's calls carry ``NAME#N`` from the call clock), whatever number torch's
``ProfilerStep#`` shows. The record (record.py) is written at the session's start, at every
window edge, at steps 1, 2, 4, 8, ... and then every few seconds while it counts (a step count
chosen from the measured step time, so no step reads a clock for it), and at its end; the step
times go to a file beside it.

Every failure of the profiler (build, start, step, stop, export) is caught here: one
``npuprof:`` line, one entry in the record, and the job goes on unprofiled.
"""

from __future__ import annotations

import operator
import os
import sys
import threading
import time

from npuprof_launch.common import files, names, options, record, steptimes
from npuprof_launch.common.record import State
from npuprof_launch.common.schedule import Schedule, Window, aligned_start, on_demand_window
from npuprof_launch.inprocess import coexist

#: Seconds between two writes of the record (and of the step times) while the job steps.
CHECKPOINT_S = 5.0
#: The name of each recorded step of the optimizer clock on the timeline, before ``#N``.
ITERATION_LABEL = "iteration"
#: How long a process's end waits for its windows' aftercare (moves, compression) to finish.
AFTERCARE_WAIT_S = 120.0


class Session:
    """One process's (or stage's) profiling. Built by ``open_session``."""

    def __init__(
        self,
        *,
        config: options.Config,
        output_dir: str,
        rank: int | None,
        rank_source: str | None,
        environ,
        lifecycle,
        points,
        say,
        stage: str | None = None,
        backend=None,
    ) -> None:
        self.config = config
        self.schedule = Schedule.of(config)
        self.output_dir = output_dir
        self.stage = stage
        #: --stage-dir: windows are written there, then moved home by their aftercare (aftercare.py).
        self._stage_root = names.resolve_output_dir(config.stage_dir, environ) if config.stage_dir else None
        #: A stage writes its traces under OUT/NAME; every status record stays in OUT, for one report.
        root = self._stage_root or output_dir
        self.trace_dir = os.path.join(root, stage) if stage else root
        self.rank = rank
        self.rank_source = rank_source
        self.worker = names.worker_name(rank, environ=environ)
        self._lifecycle = lifecycle
        self._points = points
        self._say = say
        self._run_id = environ.get(names.RUN_ID_VAR, "")
        self._pid = os.getpid()
        self.started_ns = time.time_ns()
        record_name = f"{self.worker}_{stage}" if stage else self.worker
        self._status_path = names.status_path(output_dir, record_name, self.started_ns)
        self._times_path = names.step_times_path(self._status_path)
        #: Filled in by the clock that made the session.
        self.clock_name = ""
        self.target: str | None = None
        self.warned_thread = False

        self.state = State.WAITING
        self.steps = 0
        #: Perf-counter time at the end of each step since the last checkpoint (the clock appends).
        #: A list, not an array of doubles: an array's append parses its float argument with
        #: PyArg_Parse, about 660 CPU instructions a step (callgrind); a list's costs a tenth of that,
        #: for 24 bytes more a step over the few seconds between checkpoints.
        self.times: list[float] = []
        self._first_time: float | None = None
        self._times_written = 0
        #: The optimizer clock calls ``step_ended`` only when the count reaches this; below it a
        #: boundary changes nothing but the count and the times, which the clock keeps itself.
        self.call_at = 0
        self._checkpoint_at = 1
        self._poll_at = 1

        self._windows = list(self.schedule.windows()) if not config.on_demand else []
        self._next = 0
        self.window: Window | None = None
        self._stepped = 0
        self._label = None
        self._thread = None
        #: backends.select's choice, made at the first window (a test may hand one in).
        self.backend = backend
        self.profiler = None
        self.results: list[dict] = []
        self.traces: list[str] = []
        self.windows_completed = 0
        self.partial_traces = 0
        self.warnings: list[str] = []
        self.errors: list[str] = []
        self.declined: str | None = None
        self.requests: list[str] = []
        self.ended: str | None = None
        self.step_stats: dict | None = None
        #: How many errors and warnings the profiler itself logged.
        self.profiler_messages: dict[str, int] = {}
        self._watcher = None
        #: The aftercare processes of the windows saved so far, and when a window began (memory).
        self._aftercare: list = []
        self._window_rss: int | None = None

    # -- what the lifecycle and the clocks ask ------------------------------------------------

    @property
    def off(self) -> bool:
        return self.state == State.OFF

    @property
    def recording(self) -> bool:
        return self.window is not None

    def turn_off(self, reason: str, *, write: bool = True) -> None:
        self.state = State.OFF
        self.warnings.append(reason)
        self.call_at = float("inf")
        if write:
            self.write_safely()

    def go_on_from(self, steps: int) -> None:
        """This process re-executed itself after ``steps`` steps: count on from there. A window
        that began in the old image was closed there; this image does not reopen it."""
        if steps <= 0:
            return
        self.steps = steps
        while self._upcoming() is not None and self._upcoming().first <= steps:
            self._next += 1
        self.warnings.append(f"this process re-executed itself after step {steps}: counting went on from there")

    def start_watching_requests(self, since_ns: int) -> None:
        from npuprof_launch.common import ondemand

        self._watcher = ondemand.RequestWatcher(self.output_dir, self.rank, since_ns, self.note_warning)

    # -- the clocks' calls --------------------------------------------------------------------

    def step_ended(self, *, inside_range: bool, label=None) -> None:
        """One step ended. ``inside_range``: the clock runs inside a range of torch's (an
        optimizer's post hook); ``label``: the call clock's open label for this step."""
        now = time.perf_counter()
        if label is not None:
            self._points.close_label(label)
        self.steps += 1
        self.times.append(now)
        if self._first_time is None:
            self._first_time = now
        if self.state == State.OFF:
            return
        if self.steps >= self._checkpoint_at or self.steps >= self._poll_at:
            self._checkpoint(now)
        if self._window_rss is not None and self.window is not None:
            self._guard_memory()
        optimizer_clock = self.clock_name == "optimizer.step"
        if self._due():
            if self.window is None and coexist.job_profiler_active():
                self._act()  # the job's own profiler records: ours will not start (and watches nothing)
            elif optimizer_clock:
                self._points.run(self._act, inside_range=inside_range)
            elif self._points.allowed_now():
                self._act(may_start=False)
        elif optimizer_clock and self._upcoming() is not None and self.steps + 2 >= self._upcoming().first:
            if not coexist.job_profiler_active():
                self._points.watch(True)  # the window starts after the next step: know the job's ranges in it
        self._plan_next_call()

    def step_began(self, *, label: str, may_start: bool):
        """A declared function's call begins step ``steps + 1``: a window due now starts here.
        Returns the open timeline label of the step, or None when it is not recorded."""
        if self.state == State.OFF:
            return None
        if may_start and self._due() and self._points.allowed_now():
            self._act(may_start=True)
        if self.window is None or self.steps + 1 < self.window.first:
            return None
        return self._points.open_label(f"{label}#{self.steps + 1}")

    def retract(self) -> None:
        """The clock takes a boundary back (iterations.py, rule 4): one step fewer."""
        self.steps = max(self.steps - 1, 0)
        if len(self.times) > 1:
            self.times.pop()
        if self.window is not None:
            self.note_warning(
                f"a new optimizer joined the others at step {self.steps + 1} inside a window: that window's "
                "step boundaries before it were one early"
            )

    def note_warning(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            self._say(message)

    def note_profiler(self, kind: str, text: str) -> None:
        """What the profiler itself logged: its errors fail --check, its warnings are told."""
        counts = self.profiler_messages
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "error":
            self._note_error_once(f"the profiler logged an error: {text}")
        else:
            self.note_warning(f"the profiler logged a warning: {text}")

    # -- the schedule ---------------------------------------------------------------------------

    def _due(self) -> bool:
        """Whether this boundary asks the profiler for something (the window open, or the next due)."""
        if self.window is not None:
            return True
        upcoming = self._upcoming()
        return upcoming is not None and self.steps + 1 >= upcoming.first

    def _upcoming(self) -> Window | None:
        return self._windows[self._next] if self._next < len(self._windows) else None

    def _plan_next_call(self) -> None:
        """The count at which the optimizer clock must call again: the boundary before a window's
        first step, every boundary inside one, a checkpoint or a poll for requests."""
        if self.state == State.OFF:
            self.call_at = float("inf")
            return
        upcoming = self._upcoming()
        if self.window is not None or self._points.pending():
            due = self.steps + 1
        elif upcoming is not None:
            due = max(upcoming.first - 2, 1)  # one boundary early: to watch the job's ranges (safepoints.py)
        else:
            due = float("inf")
        self.call_at = min(due, self._checkpoint_at, self._poll_at)

    def _act(self, may_start: bool = True) -> None:
        """Bring the profiler to where the schedule wants it after ``steps`` steps (at a safe point)."""
        if os.getpid() != self._pid:
            return
        with self._points.quiet():
            while True:
                if self.window is not None:
                    window = self.window
                    due = window.steps_due(self.steps)
                    while self.window is not None and self._stepped < due:
                        self._profiler_step()
                    if self.window is not None and window.saved_by(self.steps):
                        self._close_window(complete=True)
                        continue
                    break
                upcoming = self._upcoming()
                if not may_start or upcoming is None or self.steps + 1 < upcoming.first:
                    break
                if not self._open_window(upcoming):
                    break
        self._after_act()

    def _after_act(self) -> None:
        upcoming = self._upcoming()
        if self.window is None and (upcoming is None or self.steps + 1 < upcoming.first - 1):
            self._points.watch(False)  # no window now or at the next boundary: the job's ranges are not ours to watch
        self._plan_next_call()

    # -- a window's profiler ----------------------------------------------------------------

    def _open_window(self, window: Window) -> bool:
        from npuprof_launch.inprocess import backends

        first = self.steps + 1
        if first > window.first:
            self.note_warning(
                f"the window due at step {window.first} could start only at step {first} "
                f"({self._late_reason()}); it records steps {window.moved_to(first).first_recorded}-"
                f"{window.moved_to(first).last} instead"
            )
            window = window.moved_to(first)
            self._windows[self._next] = window
        holder = self._lifecycle.slot.claim(self)
        if holder is not None:
            self.note_warning(
                f"{self.clock_name or 'this clock'}: a window was due while the profiler of this process recorded "
                f"{holder.clock_name or 'another clock'}; it started at the first step after that"
            )
            return False
        try:
            if self.backend is None:
                self.backend = backends.select(self.config, self.note_warning, self.note_profiler)
            self.profiler = self.backend.build(
                config=self.config,
                window=window,
                on_trace_ready=self._on_trace_ready,
                output_dir=self.trace_dir,
                worker=self.worker,
            )
        except backends.Declined as exc:
            self._decline(str(exc))
            return False
        except Exception as exc:  # noqa: BLE001
            self._fail("creating the profiler", exc)
            return False
        self._next += 1
        self.window = window
        self._stepped = 0
        self._thread = threading.current_thread()
        self.state = State.RUNNING
        self.results.append(
            {"first_step": window.first_recorded, "last_step": window.last, "complete": False, "traces": []}
        )
        self._window_rss = _rss_bytes() if self.config.max_window_mb else None
        coexist.claim(self.profiler, self._yield_to_job_profiler)
        if not self._guard("start", self.profiler.start):
            return False
        self._lifecycle.window_opened()
        self._open_label()
        self.write_safely()
        return True

    def _guard_memory(self) -> None:
        """--max-window-mb: the profiler keeps a window's events in memory until it ends; stop the
        window (its trace saved, marked partial) before that memory grows past the limit."""
        grown = _rss_bytes() - self._window_rss
        limit = self.config.max_window_mb
        if grown > limit * 2**20 and self._thread is threading.current_thread():
            with self._points.quiet():
                self._close_window(
                    complete=False,
                    reason=f"--max-window-mb {limit} (the process grew by {grown / 2**20:.0f} MB while it recorded)",
                )

    def _late_reason(self) -> str:
        if self.clock_name == "optimizer.step" and self.steps == 0:
            return "the optimizer.step clock cannot see the start of step 1: use --skip-first 1 or more, or --target"
        return "no moment outside backward and the job's ranges came before it"

    def _profiler_step(self) -> None:
        self._close_label()
        self._stepped += 1
        if not self._guard("step", self.profiler.step):
            return
        if self.window is not None and self.steps + 1 <= self.window.last:
            self._open_label()

    def _open_label(self) -> None:
        """The job's step number on the timeline (the call clock labels its calls itself)."""
        if self.clock_name != "optimizer.step" or self.window is None:
            return
        step = self.window.first + self._stepped
        if step < self.window.first_recorded:
            return
        try:
            self._label = self._points.open_label(f"{ITERATION_LABEL}#{step}")
        except Exception:  # noqa: BLE001 - a label is never worth the window
            self._label = None

    def _close_label(self) -> None:
        label, self._label = self._label, None
        if label is not None:
            try:
                self._points.close_label(label)
            except Exception:  # noqa: BLE001
                pass

    def _close_window(self, *, complete: bool, reason: str | None = None) -> None:
        """The window is over: saved (its last step ended) or cut short (exit, SIGTERM, the job's profiler)."""
        self._close_label()
        result = self.results[-1]
        if not complete:
            whole = self.steps  # the steps that ended inside the window are whole; the one under way is not
            result["last_step"] = whole if whole >= result["first_step"] else None
            self.note_warning(
                f"window cut short by {reason} at step {self.steps}; "
                + (
                    f"its trace keeps steps {result['first_step']}-{whole}"
                    if whole >= result["first_step"]
                    else "it had recorded no whole step"
                )
            )
        profiler, self.window = self.profiler, None
        self._guard("stop", profiler.stop)
        self.profiler = None
        self._lifecycle.slot.release(self)
        result["complete"] = complete and self.state == State.RUNNING
        if self.state == State.RUNNING:
            self.state = State.DONE if self._upcoming() is None and self._watcher is None else State.WAITING
        self._lifecycle.window_closed()
        self.write_safely()

    def _on_trace_ready(self, prof) -> None:
        """The profiler's on_trace_ready: export one window and record where it went."""
        try:
            paths = self.backend.export(prof, self.trace_dir, self.worker)
        except Exception as exc:  # noqa: BLE001
            self._fail("exporting a trace", exc)
            return
        home = [self._home_of(path) for path in paths]
        relative = [os.path.relpath(path, self.output_dir) for path in home]
        self.traces.extend(relative)
        if self.results:
            result = self.results[-1]
            result["traces"].extend(relative)
            if self._stage_root:
                result["staged"] = list(paths)
            care = self._start_aftercare(paths, len(self.results))
            if care:
                result["aftercare"], result["aftercare_pid"] = care
                result["aftercare_steps"] = [self.steps + 1, None]
        if self.window is not None and self.window.saved_by(self.steps):
            self.windows_completed += 1
        else:
            self.partial_traces += 1

    def _home_of(self, path: str) -> str:
        """Where a window's file will be once its aftercare is done: home, and compressed."""
        if self._stage_root:
            path = os.path.join(self.output_dir, os.path.relpath(path, self._stage_root))
        if self.config.gzip and path.endswith(names.TORCH_TRACE_SUFFIX):
            path += ".gz"
        return path

    def _start_aftercare(self, paths: list[str], window: int) -> tuple[str, int] | None:
        """Summarize, compress and move the window off the training path (aftercare.py): a
        detached process at the lowest priority, started here, waited for at the end; returns
        its result file (relative to the output directory) and its pid."""
        from npuprof_launch.inprocess import aftercare

        if not paths or not getattr(self.backend, "aftercare", False):
            return None
        result = aftercare.result_path(self._status_path, window)
        gzip_traces = bool(self.config.gzip) and self.backend.name == "torch"
        try:
            import subprocess

            process = subprocess.Popen(
                aftercare.command(
                    traces=list(paths),
                    result=result,
                    kind=self.backend.name,
                    gzip_traces=gzip_traces,
                    stage=self._stage_root,
                    home=self.output_dir,
                ),
                env=aftercare.environment(os.environ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except Exception as exc:  # noqa: BLE001 - the window is saved; only its aftercare is lost
            self.note_warning(f"the window's aftercare (summary, compression, move) could not start: {exc!r}")
            return None
        self._aftercare.append((process, self.results[-1]))
        return os.path.relpath(result, self.output_dir), process.pid

    def _note_aftercare_ended(self) -> None:
        """At a checkpoint and at the end: the windows whose aftercare has ended now record the
        last step it ran beside (stepstats.ToolSteps: those steps' times are not the job's)."""
        for process, result in self._aftercare:
            care = result.get("aftercare_steps")
            if care and care[1] is None and process.poll() is not None:
                care[1] = self.steps

    def _wait_for_aftercare(self, timeout: float) -> None:
        """At the end: give the windows' aftercare a bounded time to finish (moves, compression)."""
        deadline = time.monotonic() + timeout
        for process, _ in self._aftercare:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except Exception:  # noqa: BLE001 - a slow one goes on alone; the report names what is left
                pass
        self._note_aftercare_ended()

    # -- failures -------------------------------------------------------------------------------

    def _guard(self, what: str, call) -> bool:
        try:
            call()
            return True
        except Exception as exc:  # noqa: BLE001
            self._fail(f"profiler {what}", exc)
            return False

    def _fail(self, what: str, exc: BaseException) -> None:
        message = f"{what} failed: {type(exc).__name__}: {exc}"
        self.errors.append(message)
        self._say(f"{message}; the job goes on unprofiled")
        self.state = State.FAILED
        self._label = None
        profiler, self.profiler, self.window = self.profiler, None, None
        self._next = len(self._windows)
        if profiler is not None and what != "profiler stop":
            try:
                profiler.stop()
            except Exception:  # noqa: BLE001 - the first failure is reported already
                pass
        self._lifecycle.slot.release(self)
        self._lifecycle.window_closed()
        self.write_safely()

    def _decline(self, reason: str) -> None:
        """Another profiler owns this process: say why once, start nothing, keep counting steps."""
        self.declined = reason
        self.note_warning(reason)
        self.state = State.OFF
        self._next = len(self._windows)
        self._lifecycle.slot.release(self)
        self.write_safely()

    def _yield_to_job_profiler(self) -> None:
        """The job starts a torch profiler of its own: stop ours first (see coexist.py), then only count."""
        if self.window is None:
            return
        self.flush("the job's own torch profiler")
        self._decline(coexist.REASON)

    # -- the process's end ----------------------------------------------------------------------

    def flush(self, reason: str) -> None:
        """Stop an open window now (exit, SIGTERM) and save what it recorded, marked partial."""
        if os.getpid() != self._pid:
            return
        if self._points is not None:
            self._points.run_pending_now()  # a save that waited for a safe point: it is complete
        if self.window is None:
            return
        if threading.current_thread() is not self._thread:
            self.note_warning(
                f"window cut short by {reason} at step {self.steps}: its profiler runs on another thread, and "
                "stopping it from this one could crash the process, so this window is lost"
            )
            self.window = self.profiler = self._label = None
            self._lifecycle.slot.release(self)
            return
        with self._points.quiet():
            self._close_window(complete=False, reason=reason)

    def end(self, how: str) -> None:
        """The process ends (``how``: record.ENDED_*): close the window, write the record a last time."""
        reasons = {
            record.ENDED_EXIT: "the end of the process",
            record.ENDED_FAST: "os._exit",
            record.ENDED_EXEC: "os.exec",
            record.ENDED_SIGNAL: "SIGTERM",
        }
        reason = reasons.get(how, how)
        uncaught = _uncaught_exception() if how == record.ENDED_EXIT else None
        if isinstance(uncaught, KeyboardInterrupt):
            reason = "SIGINT (KeyboardInterrupt)"
        elif uncaught is not None:
            text = str(uncaught).splitlines()[0][:200] if str(uncaught) else ""
            self.warnings.append(
                f"the process ended with an uncaught {type(uncaught).__name__}"
                + (f" ({text})" if text else "")
                + f" after step {self.steps}"
            )
        self.flush(reason)
        self.ended = how
        self._write_times()
        self._sum_up_step_times()
        self._wait_for_aftercare(AFTERCARE_WAIT_S)
        self.write_safely()

    def resume(self) -> None:
        self.ended = None
        self.write_safely()

    def after_fork(self) -> None:
        """In a forked child: forget this session without touching its profiler, write nothing."""
        self.state = State.OFF
        self.window = self.profiler = self._label = None
        self._pid = -1

    # -- checkpoints and the record -----------------------------------------------------------

    def _checkpoint(self, now: float) -> None:
        """Every few seconds of steps: poll for requests, write the record and the step times.
        The next checkpoint is a step count, from the measured step time: no step reads a clock."""
        step_s = self._recent_step_s()
        if self.steps >= self._poll_at:
            if self._watcher is not None:
                self._take_request()
                self._poll_at = self.steps + _steps_in(self._watcher.interval_s, step_s)
            else:
                self._poll_at = float("inf")
        if self.steps >= self._checkpoint_at:
            if self._aftercare:
                self._note_aftercare_ended()
            self._write_times()
            self.write_safely()
            # Doubling at first (steps 1, 2, 4, 8, ...): a short run killed without its exit
            # handlers (Ray ends its workers with ray.kill) still leaves a count near the truth.
            self._checkpoint_at = self.steps + min(self.steps, _steps_in(CHECKPOINT_S, step_s))

    def _recent_step_s(self) -> float | None:
        times = self.times
        if len(times) >= 2:
            window = min(len(times), 64)
            return (times[-1] - times[-window]) / (window - 1)
        return None

    def _take_request(self) -> None:
        """On-demand: a new request for this process opens a window at the next step."""
        noted = len(self.warnings)
        try:
            request = self._watcher.poll()
        except Exception as exc:  # noqa: BLE001 - a broken request folder must not break the job
            self.note_warning(f"on-demand requests could not be read: {exc!r}")
            request = None
        if request is None:
            if len(self.warnings) != noted:  # a refused request: say so where --trigger and --check look
                self.write_safely()
            return
        self.requests.append(request["id"])
        first = self.steps + 1
        if request.get("start_step"):
            if request["start_step"] < first:
                self.note_warning(
                    f"on-demand request {request['id']}: its step {request['start_step']} had passed when it came; "
                    f"the window starts at step {first} here, and the other ranks' windows may cover other steps"
                )
            first = max(first, request["start_step"])
        elif request.get("align"):
            first = aligned_start(first, request["align"])
        self._windows.append(
            on_demand_window(first, wait=request["wait"], warmup=request["warmup"], active=request["active"])
        )
        if self.state == State.DONE:
            self.state = State.WAITING
        self.write_safely()

    def _write_times(self) -> None:
        """Append the durations of the steps timed since the last write (steptimes.py)."""
        times = self.times
        if len(times) < 2:
            return
        if not self.config.step_times:
            del times[:-1]  # the last time stays: the next step's duration starts there
            return
        durations = map(operator.sub, times[1:], times[:-1])  # over copies, in C loops: no Python one
        del times[:-1]
        try:
            files.make_dirs(os.path.dirname(self._times_path))
            self._times_written += steptimes.append(self._times_path, durations)
        except OSError as exc:
            self._note_error_once(f"could not write the step times {self._times_path}: {exc}")

    def _sum_up_step_times(self) -> None:
        """At the end: this process's own step statistics (stepstats.rank_stats), so the report of a
        thousand ranks reads a few numbers each instead of sorting every step time of the run."""
        if not self._times_written:
            return
        from npuprof_launch.common import stepstats

        try:
            profiled = stepstats.ToolSteps(self.results, self.steps, self.config.warmup)
            self.step_stats = stepstats.rank_stats(steptimes.read(self._times_path), profiled)
        except Exception:  # noqa: BLE001 - the report computes them itself then
            self.step_stats = None

    def mean_step_s(self) -> float | None:
        last = self.times[-1] if self.times else None
        if self._first_time is None or last is None or self.steps < 2 or last <= self._first_time:
            return None
        return (last - self._first_time) / (self.steps - 1)

    def windows_planned(self) -> int:
        if self.state == State.OFF:
            return 0
        if self._watcher is not None:
            return len(self.requests)
        return len(self.schedule.windows())

    def to_record(self) -> dict:
        window_steps = None
        if self.results:
            window_steps = [self.results[0]["first_step"], self.results[-1]["last_step"] or self.steps]
        return {
            "host": names.host(),
            "pid": os.getpid(),
            "rank": self.rank,
            "rank_source": self.rank_source,
            "worker": self.worker,
            "run_id": self._run_id,
            "argv": list(sys.argv),
            "state": self.state.value,
            "clock": self.clock_name,
            "target": self.target,
            "stage": self.stage,
            "range": bool(self.config.range),
            "on_demand": self._watcher is not None,
            "requests": list(self.requests),
            "backend": self.backend.name if self.backend is not None else None,
            "options": self.config.as_dict(),
            "steps": self.steps,
            "mean_step_s": self.mean_step_s(),
            "window_steps": window_steps,
            "windows": [dict(result, traces=list(result["traces"])) for result in self.results],
            "schedule_steps": self.schedule.length(),
            "windows_planned": self.windows_planned(),
            "windows_completed": self.windows_completed,
            "partial_traces": self.partial_traces,
            "traces": list(self.traces),
            "warnings": list(self.warnings),
            "errors": list(self.errors),
            "declined": self.declined,
            "step_times": os.path.relpath(self._times_path, self.output_dir) if self._times_written else None,
            "step_stats": self.step_stats,
            "profiler_messages": dict(self.profiler_messages),
            "started_ns": self.started_ns,
            "updated_ns": time.time_ns(),
            "ended": self.ended,
        }

    def write_safely(self) -> None:
        if os.getpid() != self._pid:
            return
        try:
            record.write(self._status_path, self.to_record())
        except Exception as exc:  # noqa: BLE001 - a full disk or a removed directory must not break the job
            self._note_error_once(f"could not write the status record {self._status_path}: {exc}")

    def _note_error_once(self, message: str) -> None:
        if message not in self.errors:
            self.errors.append(message)
            self._say(message)


def _rss_bytes() -> int:
    """This process's resident memory (Linux /proc; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _uncaught_exception():
    """At exit: the exception that ended the main program, if one did (the interpreter keeps it)."""
    return getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)


def _steps_in(seconds: float, step_s: float | None) -> int:
    """How many steps take about ``seconds`` (at least one; one while the step time is unknown)."""
    if not step_s or step_s <= 0:
        return 1
    return max(1, int(seconds / step_s))


def writable_problem(path: str) -> str | None:
    """Why ``path`` could not be created or written, or None; creates nothing."""
    probe = path
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        return f"{probe} is not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


def open_session(environ, *, lifecycle, points, say, armed_ns: int, stage_text: str | None = None) -> Session:
    """The session of this process (or of one stage), from the environment.

    A bad value, an unusable output directory or a rank outside ``--ranks`` gives a session that
    is off: it says why (once, and in its record where it can) and counts nothing.
    """
    from npuprof_launch.common import stages
    from npuprof_launch.inprocess import process

    config, problems = options.resolve({}, environ)
    stage = None
    if stage_text is not None:
        if not problems:
            config = config.with_values(options.stage_overrides(stage_text))
        stage = stages.split(stage_text)[0]
    rank, rank_source = process.rank(environ)
    output_dir = names.resolve_output_dir(config.output_dir, environ)
    session = Session(
        config=config,
        output_dir=output_dir,
        rank=rank,
        rank_source=rank_source,
        environ=environ,
        lifecycle=lifecycle,
        points=points,
        say=say,
        stage=stage,
    )
    if problems:
        for problem in problems:
            say(f"{problem}; this process runs unprofiled")
        session.turn_off("bad options: " + "; ".join(problems), write=False)
        return session
    unwritable = writable_problem(output_dir)
    if unwritable:
        say(f"{names.OUTPUT_DIR_VAR}={config.output_dir!r}: {unwritable}; this process runs unprofiled")
        session.turn_off(f"output directory unusable: {unwritable}", write=False)
        return session
    lifecycle.add(session)
    if stage is None:
        session.go_on_from(lifecycle.steps_before_exec(environ))
    for warning in options.unknown_variables(environ):
        session.note_warning(warning)
    if config.ranks is not None and (rank or 0) not in config.ranks:
        source = f" (from {rank_source})" if rank_source else ""
        session.turn_off(f"rank {rank}{source} not in --ranks {options.BY_NAME['ranks'].format(config.ranks)}")
        return session
    if config.on_demand:
        session.start_watching_requests(armed_ns or session.started_ns)
    session.write_safely()
    return session
