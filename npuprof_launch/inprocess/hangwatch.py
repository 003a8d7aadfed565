"""The hang watch: a process that stops stepping writes where it is stuck, with no code of ours running.

At each checkpoint of its sessions (every few seconds of steps, never every step) the process
arms the standard library's ``faulthandler.dump_traceback_later``: if no checkpoint re-arms it
within the threshold, faulthandler's watchdog thread (C, no GIL) writes the Python stacks of all
threads to the process's stacks file (common/stalls.py reads it), and again every threshold
while the stall goes on. A main thread blocked in a collective, a data loader or a sleep is dumped
all the same, and the dump is on disk before anyone kills the job. A healthy job pays one re-arm
(a thread handed over in C, tens of microseconds) every CHECKPOINT_S seconds, and no thread of
ours ever takes the GIL.

The threshold: ``--hang-after SECONDS``, else STEP_MULTIPLE times the recent step time with a
floor of FLOOR_S; 0 turns the watch off. It is measured from the last checkpoint, which comes
every few seconds of steps, so the dump's timer adds that interval.

faulthandler has one such timer per process. The watch never takes it from the job: when the job
arms or cancels one of its own (pytest's faulthandler_timeout, a framework's watchdog), the
watch stands down for good. Its watchdog thread does not survive a fork, and cancelling its timer
in a forked child deadlocks on the parent's lock, so the watch cancels before a fork and re-arms
after it in the parent (``os.register_at_fork``); a child starts with no timer and arms its own.
"""

from __future__ import annotations

import faulthandler
import operator
import os
import threading
import time
from typing import TextIO

from npuprof_launch.common import stalls

#: The default threshold: this many recent step times, and never less than FLOOR_S.
STEP_MULTIPLE = 20
FLOOR_S = 30.0

_watch: HangWatch | None = None
_job_owns_timer = False
_real_later = faulthandler.dump_traceback_later
_real_cancel = faulthandler.cancel_dump_traceback_later


class HangWatch:
    """The process's one watch, armed from its sessions' checkpoints."""

    def __init__(self, status_file: str, fixed_s: float | None) -> None:
        self.path = stalls.stacks_path(status_file)
        self.fixed_s = fixed_s
        self.threshold_s: float | None = None
        self.main_thread = threading.main_thread().ident
        self._pid = os.getpid()
        self._file: TextIO | None = None
        self._timeout_s: float | None = None
        self.stood_down = False

    def threshold(self, step_s: float | None) -> float:
        if self.fixed_s:
            return float(self.fixed_s)
        return max(FLOOR_S, STEP_MULTIPLE * (step_s or 0.0))

    def arm(self, step_s: float | None, interval_s: float) -> None:
        """The process stepped: (re)start the timer, threshold plus the time to the next checkpoint."""
        if self.stood_down or os.getpid() != self._pid:
            return
        if _job_owns_timer:
            self.stand_down()
            return
        if self._file is None:
            # Kept open (faulthandler writes to its fd); created 0o664 less the umask, as every output.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o664)
            self._file = os.fdopen(fd, "a", encoding="utf-8")
        self.threshold_s = self.threshold(step_s)
        self._timeout_s = self.threshold_s + max(interval_s, 1.0)
        _real_later(self._timeout_s, repeat=True, file=self._file)

    def disarm(self) -> None:
        """Before a fork, and at the process's end: no timer left running."""
        if self._timeout_s is not None and os.getpid() == self._pid and not _job_owns_timer:
            _real_cancel()

    def rearm_after_fork(self) -> None:
        if self._timeout_s is not None and os.getpid() == self._pid and not self.stood_down and not _job_owns_timer:
            assert self._file is not None  # arm() opened it before it set the timeout
            _real_later(self._timeout_s, repeat=True, file=self._file)

    def stand_down(self) -> None:
        self.stood_down = True
        self._timeout_s = None

    def relative_to(self, output_dir: str) -> str:
        return os.path.relpath(self.path, output_dir)

    def dumps(self) -> int:
        """How many dumps the stacks file holds (read only after a pause: rare)."""
        return len(stalls.read(self.path) or ())

    def record(self, output_dir: str) -> dict:
        """The record's ``hang_watch``: where the stacks go, the threshold, the main thread's id."""
        return {"stacks": self.relative_to(output_dir), "after_s": self.threshold_s, "main_thread": self.main_thread}


class Pauses:
    """One session's side of the watch: it makes the process's watch at its first checkpoint, arms
    it at each, and notes the pauses that ended (a gap between steps past the threshold, with the
    number of stack dumps written by then), and one before the process ends well."""

    def __init__(self, status_file: str, hang_after: float | None) -> None:
        self._status_file = status_file
        self._hang_after = hang_after
        #: The process's HangWatch, made at the first checkpoint; None before it, and when off.
        self.watch: HangWatch | None = None
        #: {"step" (the last step before it), "seconds", "dumps", "at_end" (then the process ended)}.
        self.found: list[dict] = []
        self._checkpoint_time: float | None = None

    def at_checkpoint(self, times: list[float], steps: int, now: float) -> None:
        """A gap between the steps since the last checkpoint longer than the threshold was a pause that
        ended: note it before the watch is armed again. ``times``: the readings since then."""
        if self._checkpoint_time is None:  # the first checkpoint
            self.watch = watch_for(self._status_file, self._hang_after)
        watch, last, self._checkpoint_time = self.watch, self._checkpoint_time, now
        threshold = watch.threshold_s if watch else None
        if watch is None or threshold is None or last is None or now - last <= threshold:
            return
        index, gap = longest_gap(times)
        if gap > threshold:
            step = steps - (len(times) - 1 - index)
            self.found.append({"step": step - 1, "seconds": round(gap, 1), "dumps": watch.dumps()})

    def arm(self, step_s: float | None, interval_s: float) -> None:
        if self.watch:
            self.watch.arm(step_s, interval_s)

    def at_end(self, times: list[float], steps: int, ended_well: bool) -> None:
        """A process that stopped stepping and then ended well by itself paused at its end (a last
        evaluation, a save); one stopped by a signal, an error or a kill stays stuck in the report."""
        if not self.watch:
            return
        self.watch.disarm()
        idle = time.perf_counter() - times[-1] if times else 0.0
        if ended_well and self.watch.threshold_s and idle > self.watch.threshold_s:
            self.found.append({"step": steps, "seconds": round(idle, 1), "dumps": self.watch.dumps(), "at_end": True})

    def record(self, output_dir: str) -> dict | None:
        return self.watch.record(output_dir) if self.watch else None


def longest_gap(times: list[float]) -> tuple[int, float]:
    """The index in ``times`` of the reading that ended the longest gap between two readings, and
    the gap (C loops over the few seconds of readings since the last checkpoint)."""
    gaps = list(map(operator.sub, times[1:], times[:-1]))
    if not gaps:
        return 0, 0.0
    longest = max(gaps)
    return gaps.index(longest) + 1, longest


def watch_for(status_file: str, fixed_s: float | None) -> HangWatch | None:
    """The process's watch, made by its first session that steps (None with --hang-after 0)."""
    global _watch
    if fixed_s == 0:
        return None
    if _watch is None or _watch._pid != os.getpid():
        _watch = HangWatch(status_file, fixed_s)
        _install()
    return _watch


_installed = False


def _install() -> None:
    """Once a process: notice the job's own use of the timer, and keep ours across forks."""
    global _installed
    if _installed:
        return
    _installed = True
    faulthandler.dump_traceback_later = _jobs_later
    faulthandler.cancel_dump_traceback_later = _jobs_cancel
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent)


def _jobs_later(*args, **kwargs):
    _job_takes_timer()
    return _real_later(*args, **kwargs)


def _jobs_cancel(*args, **kwargs):
    _job_takes_timer()
    return _real_cancel(*args, **kwargs)


def _job_takes_timer() -> None:
    global _job_owns_timer
    _job_owns_timer = True
    if _watch is not None:
        _watch.stand_down()


def _before_fork() -> None:
    if _watch is not None:
        _watch.disarm()


def _after_fork_in_parent() -> None:
    if _watch is not None:
        _watch.rearm_after_fork()
