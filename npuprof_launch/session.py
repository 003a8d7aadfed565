"""The one profiler of this process: created late, stepped by the clock, stopped early.

The schedule is the user's (``skip_first``, ``wait``, ``warmup``, ``active``, ``repeat``) counted in
steps of the clock. While the schedule is still skipping, the session only counts: no profiler
object exists. At the boundary before step ``skip_first + 1`` it builds the profiler with the
rest of the schedule (``wait``, ``warmup``, ``active``, ``repeat``, ``skip_first=0``), starts it, and
steps it at every boundary. After the last window has been handed to the trace handler it stops
the profiler; from then on the clock only counts steps for the report.

Every failure of the profiler (start, step, stop, export) is caught here: one ``npuprof:`` line,
one entry in the status record, and the job goes on unprofiled.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time

from npuprof_launch import coexist, naming, options, status

WAITING, RUNNING, DONE, FAILED, OFF = "waiting", "running", "done", "failed", "off"
#: Internal: set by the launcher so its report shows only the processes of its own run.
RUN_ID_VAR = "_NPU_PROF_RUN_ID"

#: The session whose profiler object exists now. One per process at a time (torch_npu's rule, and
#: two Kineto sessions fight): the stages of one process take turns with it.
_running = None
_slot = threading.Lock()


def _forget_slot() -> None:
    """In a forked child: no profiler of the parent's runs here, and its lock may be held."""
    global _running, _slot
    _running = None
    _slot = threading.Lock()


os.register_at_fork(after_in_child=_forget_slot)


def restore_default_sigterm() -> None:
    """Take back our SIGTERM handler once no window records (and in a forked child).

    A Python handler runs only between bytecodes: a process blocked in C, such as a hung
    collective, would ignore SIGTERM until torchrun's SIGKILL 30 s later (measured: the default
    action ends a process inside a long torch call at once; our handler only after it returns).
    """
    try:
        if getattr(signal.getsignal(signal.SIGTERM), "__func__", None) is Session._on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except ValueError:  # not the main thread: leave signals alone
        pass


def recorded_calls(config: options.Config) -> list[int]:
    """Range mode: the calls recorded, each from its entry to its return as its own window.

    The schedule picks them as it picks recorded steps: ``skip_first`` calls, then ``repeat``
    times ``wait`` calls and ``active`` recorded ones (``warmup`` is refused in range mode: no
    profiler runs between calls, so there is nothing to warm up).
    """
    period = config.wait + config.active
    first = config.skip_first + config.wait + 1
    return [first + window * period + call for window in range(config.repeat) for call in range(config.active)]


def resolve_output_dir(raw: str, environ) -> str:
    """Relative paths are relative to where the job was launched, not to the process's cwd.

    The launcher always exports an absolute path. In env-only mode ``$PWD`` (kept by the shell
    that ran the launch script, unchanged by ``os.chdir``) is the launch directory.
    """
    if os.path.isabs(raw):
        return raw
    base = environ.get("PWD", "")
    if not os.path.isabs(base):
        base = os.getcwd()
    return os.path.normpath(os.path.join(base, raw))


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


class Session:
    """The profiling state of one process."""

    def __init__(
        self, config: options.Config, output_dir: str, rank: int | None, warn, environ, stage: str | None = None
    ) -> None:
        self.config = config
        self.output_dir = output_dir
        self.stage = stage
        #: A stage writes its traces under OUT/NAME; every status record stays in OUT, for one report.
        self.trace_dir = os.path.join(output_dir, stage) if stage else output_dir
        #: The declared function whose calls are the steps (--target, --stage), if any.
        self.target: str | None = None
        self.rank = rank
        self.warn = warn
        self.worker = naming.worker_name(rank, environ=environ)
        self.started_ns = time.time_ns()
        self.state = WAITING
        self.steps = 0
        self.clock_name = ""
        self.clock = None
        self.backend = None
        self.profiler = None
        self.windows_completed = 0
        self.partial_traces = 0
        self.traces: list[str] = []
        self.warnings: list[str] = []
        self.errors: list[str] = []
        self.first_step_time: float | None = None
        self.last_step_time: float | None = None
        #: The step that last_step_time belongs to: after the last window the clock may count without timing.
        self._timed_steps = 0
        #: The optimizer clock calls boundary() only from this step count on; below it, a boundary
        #: would change nothing but the count, which the clock adds to ``steps`` itself.
        self.call_at = 0
        self.window_steps: tuple[int, int] | None = None
        self._calls = recorded_calls(config) if config.range else None
        self._windows_started = 0
        self._waiting_for = None
        self._start_at = self._calls[0] if self._calls else config.skip_first + 1
        self._end_at = config.schedule_length()
        #: On-demand: no window opens by itself; each accepted request opens one (ondemand.py).
        self._watcher = None
        self._request_config: options.Config | None = None
        self.requests: list[str] = []
        if config.on_demand:
            self._start_at = float("inf")
        self._run_id = environ.get(RUN_ID_VAR, "")
        record_name = f"{self.worker}_{stage}" if stage else self.worker
        self._status_path = naming.status_path(output_dir, record_name, self.started_ns)
        self._pid = os.getpid()
        self._window_open = False
        #: The thread that started the profiler: only it may step or stop it (Kineto's state is per thread).
        self._thread = None
        self.declined: str | None = None

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_env(cls, environ, warn, stage: str | None = None) -> Session:
        """Read the options from the environment; a bad value turns this process's profiling off.

        ``stage`` is one stage's text from ``--stage``: its own step selection then applies over
        the job's options, and its traces go to its own subdirectory.
        """
        config, problems = options.resolve({}, environ)
        if stage is not None:
            from npuprof_launch import stages

            if not problems:
                config = config.with_values(stages.parse(stage).overrides)
            stage = stages.split(stage)[0]
        rank = naming.rank_from_env(environ)
        output_dir = resolve_output_dir(config.output_dir, environ)
        session = cls(config, output_dir, rank, warn, environ, stage)
        if problems:
            for problem in problems:
                warn(f"{problem}; this process runs unprofiled")
            session._turn_off("bad options: " + "; ".join(problems), write=False)
            return session
        unwritable = writable_problem(output_dir)
        if unwritable:
            warn(
                f"{options.BY_NAME['output-dir'].env}={config.output_dir!r}: {unwritable}; this process runs unprofiled"
            )
            session._turn_off(f"output directory unusable: {unwritable}", write=False)
            return session
        if config.ranks is not None and (rank or 0) not in config.ranks:
            session._turn_off(f"rank {rank} not in --ranks {options.BY_NAME['ranks'].format(config.ranks)}")
            return session
        if config.on_demand:
            from npuprof_launch import bootstrap, ondemand

            since = bootstrap.armed_ns or session.started_ns
            session._watcher = ondemand.RequestWatcher(output_dir, rank, since, session.note_warning)
        atexit.register(session.at_exit)
        session._safe_write_status()
        return session

    def set_clock(self, name: str, clock) -> None:
        self.clock_name = name
        self.clock = clock

    # -- the clock's calls ----------------------------------------------------------------------

    def boundary(self) -> None:
        """One step ended and the next begins (the optimizer clock's only call)."""
        self.step_ends()
        self.step_begins()
        if self.state == WAITING and self._watcher is None:
            self.call_at = self._start_at - 1
        elif self.state in (RUNNING, WAITING):
            self.call_at = 0
        else:
            self.call_at = float("inf")

    def step_begins(self) -> None:
        if self.state != WAITING:
            return
        if self._watcher is not None and self._request_config is None:
            self._take_request()
        if self.steps + 1 >= self._start_at and self._claim():
            self._start(self.steps + 1)

    def _take_request(self) -> None:
        """On-demand: a new request for this process makes its window start at this step."""
        noted = len(self.warnings)
        try:
            request = self._watcher.poll()
        except Exception as exc:  # noqa: BLE001 - a broken request folder must not break the job
            self.note_warning(f"on-demand requests could not be read: {exc!r}")
            request = None
        if request is None:
            if len(self.warnings) != noted:  # a refused request: say so where --trigger and --check look
                self._safe_write_status()
            return
        self.requests.append(request["id"])
        fields = {"skip-first": 0, "repeat": 1, "wait": request["wait"], "warmup": request["warmup"]}
        self._request_config = self.config.with_values({**fields, "active": request["active"]})
        self._start_at = self.steps + 1
        self._safe_write_status()

    def step_ends(self) -> None:
        self.steps += 1
        now = time.perf_counter()
        if self.first_step_time is None:
            self.first_step_time = now
        self.last_step_time = now
        self._timed_steps = self.steps
        if self.state == RUNNING:
            self._guard("step", self.profiler.step)
            if self.state == RUNNING and self.steps >= self._end_at:
                self._finish()

    # -- profiler lifecycle ---------------------------------------------------------------------

    def _start(self, first: int) -> None:
        from npuprof_launch import backends

        config = self._request_config or self.config
        if first > self._start_at and self._waiting_for is None:
            self.note_warning(
                f"the clock first saw the job at step {first}; the schedule starts there instead of at "
                f"step {self._start_at} (the optimizer.step clock cannot see the start of step 1: "
                "use --skip-first 1 or more, or --target)"
            )
        if self._calls is None:
            self._end_at = first - 1 + (config.wait + config.warmup + config.active) * config.repeat
            self.window_steps = (first, self._end_at)
        else:
            # Range mode: this call is the whole window, a profiler of its own from entry to return.
            self._windows_started += 1
            self._end_at = first
            self.window_steps = (self.window_steps[0] if self.window_steps else first, first)
            config = config.with_values({"wait": 0, "warmup": 0, "active": 1, "repeat": 1})
        try:
            if self.backend is None:
                self.backend = backends.select(config, self.note_warning)
            self.profiler = self.backend.build(config, self._on_trace_ready, self.trace_dir, self.worker)
        except backends.Declined as exc:
            self._decline(str(exc))
            return
        except Exception as exc:  # noqa: BLE001
            self._fail("creating the profiler", exc)
            return
        self.state = RUNNING
        self._thread = threading.current_thread()
        coexist.claim(self.profiler, self._yield_to_job_profiler)
        if not self._guard("start", self.profiler.start):
            return
        self._install_sigterm_flush()
        self.write_status()

    def _on_trace_ready(self, prof) -> None:
        """The profiler's on_trace_ready: export one window and record where it went."""
        try:
            paths = self.backend.export(prof, self.trace_dir, self.worker)
        except Exception as exc:  # noqa: BLE001
            self._fail("exporting a trace", exc)
            return
        for path in paths:
            self.traces.append(os.path.relpath(path, self.output_dir))
        if self._window_open:
            self.partial_traces += 1
        else:
            self.windows_completed += 1
        self._safe_write_status()

    def _finish(self) -> None:
        """The window is saved: stop the profiler, then wait for the next chosen call (range mode) or only count."""
        self._guard("stop", self.profiler.stop)
        self.profiler = None
        self._release()
        restore_default_sigterm()  # the process's one window is over: no other records now
        if self.state == RUNNING:
            self.state = DONE
            if self._watcher is not None:  # on-demand: back to waiting for the next request
                self.state = WAITING
                self._start_at = float("inf")
                self._request_config = None
            elif self._calls is not None and self._windows_started < len(self._calls):
                self.state = WAITING
                self._start_at = max(self._calls[self._windows_started], self.steps + 1)
        self._safe_write_status()

    def _claim(self) -> bool:
        """Take the process's one profiler; when another session has it, wait for the next step."""
        global _running
        with _slot:
            holder = _running
            if holder is None or holder is self:
                _running = self
                return True
        self._waiting_for = holder
        self.note_warning(
            f"{self.clock_name or 'this clock'}: a window was due while the profiler of this process recorded "
            f"{holder.clock_name or 'another clock'}; it started at the first step after that"
        )
        return False

    def _release(self) -> None:
        global _running
        with _slot:
            if _running is self:
                _running = None

    def flush(self, reason: str) -> None:
        """Stop an open window now (exit, SIGTERM) and save what it recorded, marked partial."""
        if self.state != RUNNING or os.getpid() != self._pid:
            return
        if threading.current_thread() is not self._thread:
            self.note_warning(
                f"window cut short by {reason} at step {self.steps}: its profiler runs on another thread, and "
                "stopping it from this one could crash the process, so this window is lost"
            )
            self.state = DONE
            self.profiler = None
            self._release()
            return
        self._window_open = True
        self.note_warning(f"window cut short by {reason} at step {self.steps}; its trace is partial")
        self._guard("stop", self.profiler.stop)
        if self.state == RUNNING:
            self.state = DONE
        self.profiler = None
        self._release()

    def _yield_to_job_profiler(self) -> None:
        """The job starts a torch profiler of its own: stop ours first (see coexist.py), then only count."""
        if self.state != RUNNING:
            return
        self.flush("the job's own torch profiler")
        self._decline(coexist.REASON)
        self._safe_write_status()

    def at_exit(self) -> None:
        if os.getpid() != self._pid:
            return
        self.flush("the end of the process")
        self._safe_write_status()

    def abandon(self) -> None:
        """In a forked child: forget the parent's profiler without stopping it, write nothing.

        Stopping it would export the parent's window from the child. A profiler that was recording
        is silenced instead (forking.py), and our SIGTERM handler is taken back: in the child it
        would write the parent's status record (torchrun SIGTERMs data-loader workers too).
        """
        restore_default_sigterm()
        if self.state == RUNNING:
            from npuprof_launch import forking

            try:
                forking.silence_inherited_profiler()
            except Exception as exc:  # noqa: BLE001 - the child must run whatever happens here
                self.warn(f"forked child {os.getpid()}: could not silence the inherited profiler: {exc!r}")
        self.state = OFF
        self.profiler = None

    def _install_sigterm_flush(self) -> None:
        """Flush on SIGTERM (torchrun's way to stop workers) when the program has no handler of its own."""
        try:
            if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
                return
            signal.signal(signal.SIGTERM, self._on_sigterm)
        except ValueError:  # not the main thread: leave signals alone
            pass

    def _on_sigterm(self, signum, frame) -> None:
        running = _running
        for session in (self,) if running in (None, self) else (self, running):
            session.flush("SIGTERM")
            if os.getpid() == session._pid:  # a forked child never writes its parent's record
                session._safe_write_status()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    # -- failures and the record ----------------------------------------------------------------

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
        self.warn(f"{message}; the job goes on unprofiled")
        self.state = FAILED
        profiler, self.profiler = self.profiler, None
        if profiler is not None and what != "profiler stop":
            try:
                profiler.stop()
            except Exception:  # noqa: BLE001 - already reported the first failure
                pass
        self._release()
        self._safe_write_status()

    def _turn_off(self, reason: str, write: bool = True) -> None:
        self.state = OFF
        self.warnings.append(reason)
        if write:
            self._safe_write_status()

    def _decline(self, reason: str) -> None:
        """Another profiler owns this process: say why once, start nothing, keep counting steps."""
        self.declined = reason
        self.note_warning(reason)
        self.state = OFF
        self._release()
        self._safe_write_status()

    def note_warning(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            self.warn(message)

    def windows_planned(self) -> int:
        """Windows the schedule asks for; in range mode each recorded call is a window; on demand, each request."""
        if self._watcher is not None:
            return len(self.requests)
        return len(self._calls) if self._calls is not None else self.config.repeat

    def record(self) -> dict:
        config = self.config
        mean_step = None
        if self._timed_steps > 1 and self.first_step_time is not None:
            mean_step = (self.last_step_time - self.first_step_time) / (self._timed_steps - 1)
        return {
            "host": naming.host(),
            "pid": self._pid,
            "rank": self.rank,
            "worker": self.worker,
            "run_id": self._run_id,
            "argv": list(sys.argv),
            "state": self.state,
            "clock": self.clock_name,
            "target": self.target,
            "stage": self.stage,
            "range": self._calls is not None,
            "on_demand": self._watcher is not None,
            "requests": list(self.requests),
            "backend": self.backend.name if self.backend is not None else None,
            "options": config.as_dict(),
            "steps": self.steps,
            "mean_step_s": mean_step,
            "window_steps": list(self.window_steps) if self.window_steps else None,
            "schedule_steps": config.schedule_length(),
            "windows_planned": self.windows_planned() if self.state != OFF else 0,
            "windows_completed": self.windows_completed,
            "partial_traces": self.partial_traces,
            "traces": list(self.traces),
            "warnings": list(self.warnings),
            "errors": list(self.errors),
            "declined": self.declined,
            "started_ns": self.started_ns,
            "updated_ns": time.time_ns(),
        }

    def write_status(self) -> None:
        status.write_json(self._status_path, self.record())

    def _safe_write_status(self) -> None:
        try:
            self.write_status()
        except Exception as exc:  # noqa: BLE001 - a full disk or a removed directory must not break the job
            message = f"could not write the status record {self._status_path}: {exc}"
            if message not in self.errors:
                self.errors.append(message)
                self.warn(message)
