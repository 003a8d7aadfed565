"""The step times of one session: the arithmetic on its clock readings, and the file they go to.

A clock appends ``time.perf_counter()`` at the end of each step to ``session.times`` itself (the
optimizer clock's lean mode does it without calling the session: stepwrapper.py), so the list
stays a plain attribute of the session and nothing here runs at a step. What is here runs at a
checkpoint or at the end: the measured step time that spaces the checkpoints (a step count, so
that no step reads a clock for it), the durations appended to the file beside the record
(steptimes.py), and the process's own step statistics at its end (stepstats.py, imported only
then: this code runs in every process of the job).
"""

from __future__ import annotations

import operator
import os

from npuprof_launch.common import files, steptimes

#: How many of the latest clock readings the recent step time is measured over.
RECENT_STEPS = 64
#: The tool's checkpoints kept in the record (the costliest), and the least cost kept: below it a
#: checkpoint decides no spike (a spike is stepstats.SPIKE_MIN_S longer than the median at least).
CHECKPOINTS_KEPT = 64
CHECKPOINT_KEPT_S = 0.001


def steps_in(seconds: float, step_s: float | None) -> int:
    """How many steps take about ``seconds`` (at least one; one while the step time is unknown)."""
    if not step_s or step_s <= 0:
        return 1
    return max(1, int(seconds / step_s))


def keep_largest(kept: list[list], item: list, most: int) -> list | None:
    """Add ``item`` (its last value its size) to ``kept``, and past ``most`` items drop the
    smallest: the record keeps a bounded few of the costliest. Returns the item dropped, if any."""
    kept.append(item)
    if len(kept) <= most:
        return None
    least = min(kept, key=operator.itemgetter(-1))
    kept.remove(least)
    return least


def recent_step_s(times: list[float]) -> float | None:
    """The mean step time over the latest readings (up to ``RECENT_STEPS``), or None below two."""
    if len(times) >= 2:
        window = min(len(times), RECENT_STEPS)
        return (times[-1] - times[-window]) / (window - 1)
    return None


def mean_step_s(first_time: float | None, times: list[float], steps: int) -> float | None:
    """The mean step time since the end of the first step (``first_time``), or None while unknown."""
    last = times[-1] if times else None
    if first_time is None or last is None or steps < 2 or last <= first_time:
        return None
    return (last - first_time) / (steps - 1)


class CheckpointTimes:
    """How long the tool's own checkpoints (the record, the step times, a poll for requests) took
    of the job's steps: ``[step, seconds]``, the step whose duration holds it (the one after the
    boundary it ran at), in this process's numbering as the step times are.

    Written files cost well under a millisecond of CPU, but on a loaded machine each one can wait
    for the CPU: tens of ms on a 2-core machine at load 7 (measured: 4-63 ms of wall time for
    0.8-0.9 ms of CPU), and the step after a checkpoint was named a spike of a healthy job. The
    report takes this time off such a step before it judges it (stepstats.rank_stats)."""

    def __init__(self) -> None:
        self.kept: list[list] = []

    def note(self, step: int, seconds: float) -> None:
        if seconds < CHECKPOINT_KEPT_S:
            return
        keep_largest(self.kept, [step, round(seconds, 6)], CHECKPOINTS_KEPT)


class StepTimesFile:
    """The file of a session's step durations, beside its status record (steptimes.py)."""

    def __init__(self, path: str, note_error) -> None:
        self.path = path
        #: How many durations the file holds: none, and the record names no file.
        self.written = 0
        #: What the tool's checkpoints took of the steps after them (the record's ``checkpoint_s``).
        self.checkpoints = CheckpointTimes()
        self._note_error = note_error

    def write(self, times: list[float], enabled: bool) -> None:
        """Append the durations of the steps timed since the last write (``times``, the session's
        own list, emptied here but for its last reading: the next step's duration starts there).
        With ``enabled`` false (--step-times 0) the readings are dropped and nothing is written."""
        if len(times) < 2:
            return
        if not enabled:
            del times[:-1]
            return
        durations = map(operator.sub, times[1:], times[:-1])  # over copies, in C loops: no Python one
        del times[:-1]
        try:
            files.make_dirs(os.path.dirname(self.path))
            self.written += steptimes.append(self.path, durations)
        except OSError as exc:
            self._note_error(f"could not write the step times {self.path}: {exc}")

    def stats(
        self, results: list[dict], steps: int, warmup: int, offset: int = 0, cpu_wait: dict | None = None
    ) -> dict | None:
        """At the end: this process's own step statistics (stepstats.rank_stats), so the report of a
        thousand ranks reads a few numbers each instead of sorting every step time of the run;
        None when they cannot be had (the report computes them itself then)."""
        from npuprof_launch.common import stepstats

        try:
            profiled = stepstats.ToolSteps(results, steps, warmup, offset, self.checkpoints.kept)
            return stepstats.rank_stats(steptimes.read(self.path), profiled, cpu_wait)
        except Exception:  # noqa: BLE001 - the report computes them itself then
            return None

    def relative_to(self, output_dir: str) -> str | None:
        """The file as the record names it (relative to the output directory), or None when empty."""
        return os.path.relpath(self.path, output_dir) if self.written else None
