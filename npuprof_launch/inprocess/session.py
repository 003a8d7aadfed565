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

Every recorded step carries the job's own step number on the timeline: a ``iteration#N`` range (a
declared function's calls carry ``NAME#N`` from the call clock), and torch's ``ProfilerStep#N``
shows the same N where its counter can be set (backends.Backend.steps_from); a window cut short
keeps no range of the step under way (``_unfinished``). The record (record.py) is written at the
session's start, at every window edge, at steps 1, 2, 4, 8, ... and then every few seconds (a step
count from the measured step time: no step reads a clock for it), and at its end, with what each
checkpoint took of the step after it; the step times go to a file beside it.

Every failure of the profiler (build, start, step, stop, export) is caught here: one
``npuprof:`` line, one entry in the record, and the job goes on unprofiled.

What decides nothing at a step lives beside the session, a module for each job: opening it from
the environment (opensession.py), the step times and their file (steptiming.py), the record's
fields (sessionrecord.py), the windows' aftercare processes (aftercarejobs.py), on-demand requests
(requesttaking.py), --max-window-mb (memoryguard.py), the end (endreason.py), hangs (hangwatch.py),
what it says and keeps (sessionnotes.py), a window whose process stops stepping (windowtimeout.py),
the stepping thread's waits for a CPU (cpuwait.py), the window's stop on its record (windowstop.py).
What runs at a step stays here: ``step_ended`` to ``_act``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

import npuprof_launch.inprocess.backends as backends
from npuprof_launch.common import names, numbering, options, outcomes, record, stepmark
from npuprof_launch.common.record import State, StatusRecord
from npuprof_launch.common.schedule import Schedule, Window
from npuprof_launch.inprocess import (
    coexist,
    cpuwait,
    endreason,
    hangwatch,
    memoryguard,
    requesttaking,
    sessionrecord,
    steptiming,
    windowstop,
)
from npuprof_launch.inprocess.aftercarejobs import AftercareJobs
from npuprof_launch.inprocess.jobnumbering import JobNumbering
from npuprof_launch.inprocess.sessionnotes import Notes
from npuprof_launch.inprocess.windowtimeout import IdleWindows

#: Seconds between two writes of the record (and of the step times) while the job steps.
CHECKPOINT_S = 5.0
#: The name of each recorded step of the optimizer clock on the timeline, before ``#N``.
ITERATION_LABEL = "iteration"
#: How long a process's end waits for its windows' aftercare (moves, compression) to finish.
AFTERCARE_WAIT_S = 120.0


class Session:
    """One process's (or stage's) profiling. Built by ``opensession.open_session``.

    Its parts hold their own state: ``notes`` (what it said and kept), ``numbering`` (the job's
    numbers of its steps), ``idle`` (a window whose process stops stepping); the clocks and
    backends are handed the notes' methods under the session's names."""

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
        self.notes = Notes(say)
        self.warnings, self.outcomes, self.errors = self.notes.warnings, self.notes.outcomes, self.notes.errors
        self.profiler_messages = self.notes.profiler_messages
        self.note_warning, self.note_outcome = self.notes.note_warning, self.notes.note_outcome
        self.note_profiler = self.notes.note_profiler
        self.run_id = environ.get(names.RUN_ID_VAR, "")
        self._pid = os.getpid()
        self.started_ns = time.time_ns()
        record_name = f"{self.worker}_{stage}" if stage else self.worker
        self._status_path = names.status_path(output_dir, record_name, self.started_ns)
        #: The durations of the steps, appended at each checkpoint (steptiming.py).
        self.step_times_file = steptiming.StepTimesFile(
            names.step_times_path(self._status_path), self.notes.note_error_once
        )
        #: Filled in by the clock that made the session.
        self.clock_name = ""
        self.target: str | None = None
        self.warned_thread = False

        self.state = State.WAITING
        self.steps = 0
        #: ``steps`` again, stored at every step where the launcher reads it (common/stepmark.py):
        #: a list until the first checkpoint maps the file.
        self.marked: stepmark.Slot = stepmark.unmapped()
        #: Perf-counter time at the end of each step since the last checkpoint (the clock appends).
        #: A list, not an array of doubles: an array's append parses its float argument with
        #: PyArg_Parse, about 660 CPU instructions a step (callgrind); a list's costs a tenth of that,
        #: for 24 bytes more a step over the few seconds between checkpoints.
        self.times: list[float] = []
        #: When the first step ended (perf counter): the record's mean step time counts from it.
        self.first_time: float | None = None
        #: The optimizer clock calls ``step_ended`` only when the count reaches this; below it a
        #: boundary changes nothing but the count and the times, which the clock keeps itself.
        self.call_at: float = 0
        self._checkpoint_at: float = 1
        self._poll_at: float = 1
        #: The process's hang watch, armed at checkpoints, and the pauses it saw (hangwatch.py).
        self.hang = hangwatch.Pauses(self._status_path, config.hang_after)
        self.cpu_wait = cpuwait.CpuWait()

        self._windows = list(self.schedule.windows()) if not config.on_demand else []
        self._next = 0
        self.numbering = JobNumbering(config, self.note_outcome)
        self.number_from(0, numbering.FRESH)
        #: Windows of the schedule that began in the old image of this process (``go_on_from``):
        #: that image recorded them, in its own record; this one does not plan them again.
        self.windows_before_exec = 0
        self.window: Window | None = None
        self._stepped = 0
        self._stops = windowstop.Stops()  # the window's stop on its record
        self._label = None
        self._thread: threading.Thread | None = None
        #: backends.select's choice, made at the first window (a test may hand one in).
        self.backend = backend
        self.profiler: backends.Profiler | None = None
        self.results: list[dict] = []
        self.traces: list[str] = []
        self.windows_completed = 0
        self.partial_traces = 0
        self.declined: str | None = None
        self.requests: list[str] = []
        self.ended: str | None = None
        self.step_stats: dict | None = None
        #: The on-demand requests this session takes (requesttaking.Requests), or None.
        self._watcher: requesttaking.Requests | None = None
        #: The aftercare processes of the windows saved so far (aftercarejobs.py).
        self._aftercare = AftercareJobs(self._status_path, output_dir, self._stage_root, self.note_warning)
        #: This process's resident memory when the open window began (--max-window-mb).
        self._window_rss: int | None = None
        self.idle = IdleWindows(
            config.window_timeout, say, times=self.times, may_close=self._may_close_idle, close=self._close_idle
        )

    # -- what the lifecycle and the clocks ask ------------------------------------------------

    @property
    def off(self) -> bool:
        return self.state == State.OFF

    @property
    def recording(self) -> bool:
        return self.window is not None

    @property
    def on_demand(self) -> bool:
        """Whether windows come from requests only (--on-demand), rather than from the schedule
        (with --on-slowdown, from both)."""
        return self._watcher is not None and bool(self.config.on_demand)

    @property
    def step_offset(self) -> int:
        return self.numbering.step_offset

    @property
    def numbered_by(self) -> str:
        return self.numbering.numbered_by

    def number_from(self, offset: int, source: str) -> None:
        """The job numbers this process's step N as ``N + offset`` (jobnumbering.py); --from-step's
        windows are placed by it, told before the first ``step_ended``."""
        placed = self.numbering.number_from(offset, source, self.schedule.windows(), self.steps)
        if placed is not None:
            self._windows, self._next = placed

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
        self.steps = self.marked[0] = steps
        while (upcoming := self._upcoming()) is not None and upcoming.first <= steps:
            self._next += 1
        self.windows_before_exec = self._next
        self.warnings.append(f"this process re-executed itself after step {steps}: counting went on from there")

    def start_watching_requests(self, since_ns: int) -> None:
        self._watcher = requesttaking.Requests(self.output_dir, self.rank, since_ns, self.note_warning)

    # -- the per-step path: a boundary ends, the schedule answers -----------------------------

    def step_ended(self, *, inside_range: bool, label=None) -> None:
        """One step ended. ``inside_range``: the clock runs inside a range of torch's (an
        optimizer's post hook); ``label``: the call clock's open label for this step."""
        now = time.perf_counter()
        if label is not None:
            self._points.close_label(label)
        self.steps = self.marked[0] = self.steps + 1
        self.times.append(now)
        if self.first_time is None:
            self.first_time = now
        if self.state == State.OFF:
            return
        if self.steps >= self.cpu_wait.at or self._due():  # and a block of each profiled step: lockstep.py
            self.cpu_wait.note(self.steps, self.times, profiled=self.window is not None)
        if self.idle.closed_at is not None:
            self._stepped_after_timeout()
        if self.steps >= self._checkpoint_at or self.steps >= self._poll_at:
            self._checkpoint(now)
            self.step_times_file.checkpoints.note(self.steps + 1, time.perf_counter() - now)
        if self._window_rss is not None and self.window is not None:
            self._guard_memory(self._window_rss)
        optimizer_clock = self.clock_name == "optimizer.step"
        if self._due():
            if self.window is None and coexist.job_profiler_active():
                self._act()  # the job's own profiler records: ours will not start (and watches nothing)
            elif optimizer_clock:
                self._points.run(self._act, inside_range=inside_range)
            elif self._points.allowed_now():
                self._act(may_start=False)
        elif optimizer_clock and (upcoming := self._upcoming()) is not None and self.steps + 2 >= upcoming.first:
            if not coexist.job_profiler_active():
                self._points.watch(True)  # the window starts after the next step: know the job's ranges in it
        self._plan_next_call()

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
        if self.window is not None or self._points.pending() or self.idle.closed_at is not None:
            due: float = self.steps + 1
        elif upcoming is not None:
            due = max(upcoming.first - 2, 1)  # one boundary early: to watch the job's ranges (safepoints.py)
            self.cpu_wait.before_window(upcoming.first)
        else:
            due = float("inf")
        self.call_at = min(due, self._checkpoint_at, self._poll_at, self.cpu_wait.at)

    def _act(self, may_start: bool = True) -> None:
        """Bring the profiler to where the schedule wants it after ``steps`` steps (at a safe point)."""
        if os.getpid() != self._pid:
            return
        with self._points.quiet():
            while True:
                if self.window is not None:
                    window = self.window
                    due, saving = window.steps_due(self.steps), window.saved_by(self.steps)
                    # the profiler's last step saves the window: its stop
                    stop = self._stops.under_way(self.results[-1], self.write_safely) if saving else None
                    with stop or contextlib.nullcontext():
                        while self.window is not None and self._stepped < due:
                            self._profiler_step()
                    if self.window is not None and saving:
                        self._close_window(complete=True)
                        continue
                    if saving:  # closed within the stop (a signal's handler, a failure): the stop is over
                        self._stops.end(self.results[-1])
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

    # -- the clocks' other calls --------------------------------------------------------------

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
        self.steps = self.marked[0] = max(self.steps - 1, 0)
        if len(self.times) > 1:
            self.times.pop()
        if self.window is not None:
            self.note_warning(
                f"a new optimizer joined the others at step {self.steps + 1} inside a window: that window's "
                "step boundaries before it were one early"
            )

    # -- a window's profiler ----------------------------------------------------------------

    def _open_window(self, window: Window) -> bool:
        first, off = self.steps + 1, self.step_offset
        if first > window.first:
            moved = window.moved_to(first)
            self.note_outcome(
                outcomes.LATE_START,
                first + off,
                due=window.first + off,
                first=moved.first_recorded + off,
                last=moved.last + off,
                why="step_one" if self.clock_name == "optimizer.step" and self.steps == 0 else "no_safe_point",
            )
            if self._watcher is not None:
                self._watcher.moved(window, moved)
            window = moved
            self._windows[self._next] = window
        holder = self._lifecycle.slot.claim(self)
        if holder is not None:
            self.note_outcome(
                outcomes.SLOT_BUSY,
                self.steps + 1 + off,
                clock=self.clock_name or "this clock",
                holder=holder.clock_name or "another clock",
            )
            return False
        try:
            if self.backend is None:
                self.backend = backends.select(self.config, self.note_warning, self.note_profiler)
            self.profiler = self.backend.build(
                config=self.config,
                window=window._replace(first=window.first + off),  # ProfilerStep# counts the job's steps
                on_trace_ready=self._on_trace_ready,
                output_dir=self.trace_dir,
                worker=self.worker,
            )
        except backends.Declined as exc:
            self._decline(str(exc), exc.outcome)
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
            {"first_step": window.first_recorded + off, "last_step": window.last + off, "complete": False, "traces": []}
        )
        self.results[-1]["profiler_steps_from"] = self.backend.steps_from  # backends.Backend.steps_from
        reason = self._watcher.reason_of(window) if self._watcher is not None else None
        if reason:  # why a request opened it (--on-slowdown)
            self.results[-1]["reason"] = reason
        self._window_rss = memoryguard.rss_bytes() if self.config.max_window_mb else None
        coexist.claim(self.profiler, self._yield_to_job_profiler)
        started = time.perf_counter()
        if not self._guard("start", self.profiler.start):
            return False
        self.results[-1]["start_s"] = round(time.perf_counter() - started, 3)  # a cost the user meets: told past 1 s
        self._lifecycle.window_opened()
        self._open_label()
        untimed = self.idle.time_window(self._thread)
        if untimed:
            self.note_warning(untimed)
        self.write_safely()
        return True

    def _guard_memory(self, window_rss: int) -> None:
        """--max-window-mb: the profiler keeps a window's events in memory until it ends; stop the
        window (its trace saved, marked partial) before that memory grows past the limit (memoryguard.py)."""
        grown = memoryguard.past_limit(window_rss, self.config.max_window_mb)
        if grown is not None and self._thread is threading.current_thread():
            with self._points.quiet():
                self._close_window(complete=False, cause="size_cap", limit_mb=self.config.max_window_mb, grown_mb=grown)

    def _profiler_step(self) -> None:
        self._close_label()
        self._stepped += 1
        assert self.profiler is not None and self.window is not None  # a window is open (_act steps only then)
        starting = self.window.first + self._stepped <= self.window.first_recorded  # its recording begins here
        started = time.perf_counter()
        if not self._guard("step", self.profiler.step):
            return
        if starting:  # torch.profiler starts its tracer at the step that begins recording: its start too
            self.results[-1]["start_s"] = round(self.results[-1]["start_s"] + time.perf_counter() - started, 3)
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
            self._label = self._points.open_label(f"{ITERATION_LABEL}#{step + self.step_offset}")
        except Exception:  # noqa: BLE001 - a label is never worth the window
            self._label = None

    def _close_label(self) -> None:
        label, self._label = self._label, None
        if label is not None:
            with contextlib.suppress(Exception):  # a label is never worth the window
                self._points.close_label(label)

    def _close_window(self, *, complete: bool, cause: str | None = None, **detail) -> None:
        """The window is over: saved (its last step ended) or cut short (``cause``: a key of
        outcomes.CUT_BY: exit, SIGTERM, the job's profiler, the size cap with its ``detail``).

        Cut short between two boundaries, a window has a step under way that the process never
        finished (a rank out of data under DDP's ``Join``, an exit inside the window), whose
        ranges were opened at the last boundary: its label ends after the stop, and the backend
        keeps its ``ProfilerStep#`` out of the saved trace (``_unfinished``)."""
        unfinished = () if complete else self._unfinished()
        held, self._label = (self._label, None) if unfinished else (None, self._label)
        self._close_label()
        result = self.results[-1]
        if not complete:
            whole = self.steps + self.step_offset  # the steps that ended in the window are whole, not the one under way
            result["last_step"] = whole if whole >= result["first_step"] else None
            kept = [result["first_step"], whole] if whole >= result["first_step"] else None
            self.note_outcome(outcomes.CUT_SHORT, whole, by=cause, kept=kept, **detail)
        profiler, self.window = self.profiler, None
        self.cpu_wait.after_window(self.steps)  # the next steps' time on a CPU: lockstep.py
        self.idle.stop()
        nested = self._stops.depth > 0  # a signal's handler closes it within the stop: that stop goes on
        with self._stops.under_way(result, self.write_safely):
            self._guard("stop", lambda: self.backend.stop(profiler, unfinished=unfinished))
        if not nested:
            self._stops.end(result)
        if coexist.rpc_agent_running():
            self.note_outcome(outcomes.RPC_AGENT, result["first_step"])
        self._label = held
        self._close_label()  # after the stop: a profiler that no longer runs records no range
        self.profiler = None
        self._lifecycle.slot.release(self)
        result["complete"] = complete and self.state == State.RUNNING
        if self.state == State.RUNNING:
            self.state = State.DONE if self._upcoming() is None and self._watcher is None else State.WAITING
        self._lifecycle.window_closed()
        self.write_safely()

    def _unfinished(self) -> tuple[str, ...]:
        """The ranges of the open window's step under way, if the process has not finished it
        (empty where it has: --max-window-mb stops a window at a boundary, before the step)."""
        if self.window is None:
            return ()
        step = self.window.first + self._stepped
        if step <= self.steps:
            return ()
        names = [f"ProfilerStep#{self._stepped + self.results[-1]['profiler_steps_from']}"]
        if self._label is not None:
            names.append(f"{ITERATION_LABEL}#{step + self.step_offset}")
        return tuple(names)

    def _on_trace_ready(self, prof) -> None:
        """The profiler's on_trace_ready: export one window and record where it went."""
        try:
            paths = self.backend.export(prof, self.trace_dir, self.worker)
        except Exception as exc:  # noqa: BLE001
            self._fail("exporting a trace", exc)
            return
        home = [self._aftercare.home_of(path, self.config.gzip) for path in paths]
        relative = [os.path.relpath(path, self.output_dir) for path in home]
        self.traces.extend(relative)
        if self.results:
            result = self.results[-1]
            result["traces"].extend(relative)
            if self._stage_root:
                result["staged"] = list(paths)
            care = self._aftercare.start(paths, len(self.results), result, backend=self.backend, gzip=self.config.gzip)
            if care:
                result["aftercare"], result["aftercare_pid"] = care
                result["aftercare_steps"] = [self.steps + 1, None]
        if self.window is not None and self.window.saved_by(self.steps):
            self.windows_completed += 1
        else:
            self.partial_traces += 1

    def _may_close_idle(self) -> bool:
        return threading.current_thread() is self._thread and self._points.may_stop_idle()

    def _close_idle(self, idle_s: float) -> None:
        """No step for ``idle_s`` seconds (--window-timeout): save the open window, cut short (the
        timer checked that torch can take it here, on the window's thread)."""
        self._points.run_pending_now()  # a save that waited for a safe point: it is complete
        if self.window is None:
            return
        self.idle.closed_at = self.steps + self.step_offset  # in the job's numbering, as outcomes are
        limit_s = self.config.window_timeout
        with self._points.quiet():
            self._close_window(complete=False, cause="window_timeout", limit_s=limit_s, idle_s=round(idle_s, 1))
        self._after_act()  # the job's ranges no longer watched; the next step is told: the window stays over

    def _stepped_after_timeout(self) -> None:
        """The first step after --window-timeout closed a window: said and recorded, not reopened."""
        closed, self.idle.closed_at = self.idle.closed_at, None
        self.note_outcome(outcomes.STEPPED_AFTER_TIMEOUT, self.steps + self.step_offset, closed_at=closed)
        self.write_safely()

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
        self.notes.say(f"{message}; the job goes on unprofiled")
        self.state = State.FAILED
        self.idle.stop()
        self._label = None
        profiler, self.profiler, self.window = self.profiler, None, None
        self._next = len(self._windows)
        if profiler is not None and what != "profiler stop":
            with contextlib.suppress(Exception):  # the first failure is reported already
                profiler.stop()
        self._stops.end(self.results[-1] if self.results else None)
        self._lifecycle.slot.release(self)
        self._lifecycle.window_closed()
        self.write_safely()

    def _decline(self, reason: str, outcome: str | None = None) -> None:
        """Another profiler owns this process: say why once, start nothing, keep counting steps."""
        self.declined = reason
        if outcome is not None:  # said as data (the job's own profiler): its kind, never its sentence
            self.note_outcome(outcome, self.steps + self.step_offset)
        else:
            self.note_warning(reason)
        self.state = State.OFF
        self._next = len(self._windows)
        self._lifecycle.slot.release(self)
        self.write_safely()

    def _yield_to_job_profiler(self) -> None:
        """The job starts a torch profiler of its own: stop ours first (see coexist.py), then only count."""
        if self.window is None:
            return
        self.flush("job_profiler")
        self._decline(coexist.REASON, outcomes.JOB_PROFILER)

    # -- the process's end ----------------------------------------------------------------------

    def flush(self, cause: str) -> None:
        """Stop an open window now (``cause``: a key of outcomes.CUT_BY: exit, SIGTERM) and save
        what it recorded, marked partial."""
        if os.getpid() != self._pid:
            return
        if self._points is not None:
            self._points.run_pending_now()  # a save that waited for a safe point: it is complete
        if self.window is None:
            return
        if threading.current_thread() is not self._thread:
            self.note_outcome(outcomes.LOST_ON_THREAD, self.steps + self.step_offset, by=cause)
            self.idle.stop()
            self.window = self.profiler = self._label = None
            self._lifecycle.slot.release(self)
            return
        with self._points.quiet():
            self._close_window(complete=False, cause=cause, idle_s=self.idle.idle_s())

    def end(self, how: str) -> None:
        """The process ends (``how``: record.ENDED_*): close the window, write the record a last time."""
        cause, uncaught = endreason.cause_and_uncaught(how, self.steps + self.step_offset)
        if uncaught is not None:
            self.outcomes.append(uncaught)
            self.warnings.append(outcomes.sentence(uncaught))
        self.flush(cause)
        for fields in self._watcher.not_reached(self._windows[self._next :], self.step_offset) if self._watcher else ():
            self.note_outcome(outcomes.NOT_REACHED, self.steps + self.step_offset, **fields)
        self.hang.at_end(self.times, self.steps, how == record.ENDED_EXIT and cause == "exit" and uncaught is None)
        self.ended = how
        self.cpu_wait.note(self.steps, self.times)  # the steps since the last reading (on this thread)
        self.step_times_file.write(self.times, self.config.step_times)
        if self.step_times_file.written:
            self.step_stats = self.step_times_file.stats(
                self.results, self.steps, self.config.warmup, self.step_offset, self.cpu_wait.record()
            )
        self._aftercare.wait(AFTERCARE_WAIT_S, self.steps)
        self.write_safely()

    def resume(self) -> None:
        self.ended = None
        self.write_safely()

    def after_fork(self) -> None:
        """In a forked child: forget this session without touching its profiler, write nothing."""
        self.state = State.OFF
        self.window = self.profiler = self._label = None
        self.idle.after_fork()
        self._pid, self.cpu_wait = -1, cpuwait.CpuWait()  # the child's thread counts from its own start
        self.marked = stepmark.unmapped()  # the parent's mapping is the parent's count

    # -- checkpoints and the record -----------------------------------------------------------

    def _checkpoint(self, now: float) -> None:
        """Every few seconds of steps (a step count: module docstring): poll, write the record and step times."""
        step_s = steptiming.recent_step_s(self.times)
        if self.steps >= self._poll_at:
            if self._watcher is not None:
                self._take_request(self._watcher)
                self._poll_at = self.steps + steptiming.steps_in(self._watcher.interval_s, step_s)
            else:
                self._poll_at = float("inf")
        if self.steps >= self._checkpoint_at:
            if isinstance(self.marked, list) and os.getpid() == self._pid:
                self._map_mark()
            if self._aftercare:
                self._aftercare.note_ended(self.steps)
            self.hang.at_checkpoint(self.times, self.steps, now)
            self.step_times_file.write(self.times, self.config.step_times)
            self.write_safely()
            # Doubling at first (steps 1, 2, 4, 8, ...): a short run killed without its exit
            # handlers (Ray ends its workers with ray.kill) still leaves a count near the truth.
            self._checkpoint_at = self.steps + min(self.steps, steptiming.steps_in(CHECKPOINT_S, step_s))
            self.hang.arm(step_s, (self._checkpoint_at - self.steps) * (step_s or CHECKPOINT_S))

    def _map_mark(self) -> None:
        """The first checkpoint: the count goes to shared memory from now on (unmapped if it cannot)."""
        with contextlib.suppress(OSError, ValueError):
            self.marked = stepmark.mapped(self._status_path, self.steps)

    def _take_request(self, watcher: requesttaking.Requests) -> None:
        """On-demand: a new request for this process opens a window at the next step, among the
        windows still to come in step order (a scheduled one may come after it)."""
        noted = len(self.warnings)
        window = watcher.take(self.steps + 1)
        if window is None:
            if len(self.warnings) != noted:  # a refused request: say so where --trigger and --check look
                self.write_safely()
            return
        self.requests.append(watcher.ids[-1])
        at = next((i for i in range(self._next, len(self._windows)) if self._windows[i].first > window.first), None)
        self._windows.insert(len(self._windows) if at is None else at, window)
        if self.state == State.DONE:
            self.state = State.WAITING
        self.write_safely()

    def to_record(self) -> StatusRecord:
        return sessionrecord.to_record(self)

    def write_safely(self) -> None:
        """Write the status record, in the process that opened the session only (not in a forked
        child); a full disk or a removed directory is one error, never the job's."""
        if os.getpid() != self._pid:
            return
        try:
            record.write(self._status_path, self.to_record())
        except Exception as exc:  # noqa: BLE001
            self.notes.note_error_once(f"could not write the status record {self._status_path}: {exc}")
