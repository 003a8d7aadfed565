"""How long the stepping thread waited for a CPU, by short blocks of steps: what tells a loaded
machine's stall from a spike of the job's own.

A step can be long because the job did more (a sleep, a data wait, a slow collective) or because
its thread was runnable and no core ran it: other processes, or the job's own threads and data
loader workers, had the cores. The step times cannot tell these apart; the kernel can. Linux keeps,
per thread, the time it spent waiting on a run queue (the second field of
``/proc/thread-self/schedstat``, in ns, since Linux 2.6 with scheduler statistics: every distribution
kernel). On a 2-core machine beside a CPU hog, steps 5x their median on every rank at once were
named spikes of a healthy job; this is the evidence that keeps them out of the findings.

Read at a step boundary every ``BLOCK_S`` of steps (a step count, as the checkpoints are: the
per-step path reads no clock for it), never every step: one read is a few microseconds, ten a
second a few hundredths of a percent of a core. The block
``[first, last, seconds]`` holds steps ``first..last`` of this process (numbered as the step times
are). Kept: the ``KEPT`` largest waits of ``KEPT_S`` or more; every block not kept waited at most
``at_most_s``, a bound the report may use as well as a reading.

The same line's first field is the time the thread ran on a CPU. Kept for each profiled step (a
block of its own: lockstep.py), each of the ``RAN_BEFORE`` steps before a window planned and of the
``RAN_AFTER`` after one (read at each of their boundaries too: a few microseconds a step, beside a
window only), ``RAN_KEPT`` of them at most, each with its wait for a CPU (``waited``: below KEPT_S
it is no block, and a 0.5 ms job's 2.5 ms a step is the whole of its excess):
in lockstep every rank's step takes as long as the slowest one's, and where the machine is shared,
the order in which ranks reach a collective moves with the scheduler; the time a rank's stepping
thread ran does not. A rank that computes 30 % more runs 30 % longer in each step, whoever held the
cores (lockstep.py). Standard library only: this runs in every process of the job.
"""

from __future__ import annotations

import threading

from npuprof_launch.inprocess import steptiming

SCHEDSTAT = "/proc/thread-self/schedstat"
#: The length of a block, in the job's own step time: short enough that a spike's block is mostly
#: the spike (a step of this length or more is a block of its own). The whole block's wait is
#: taken off a spike in it (findings.spike_with_cpu_wait), so a longer block over-explains.
BLOCK_S = 0.1
#: The blocks kept (the longest waits), and the least wait kept: a spike is 5 ms long at least.
KEPT = 64
KEPT_S = 0.005
#: The steps whose time on a CPU is kept (the first ones, in order).
RAN_KEPT = 512
#: After each window, the steps read one by one: a default window's 3 steps are too few for the
#: test (6 at 4 ranks, 11 at 2: lockstep.py), the job's next steps are the same work without the
#: profiler. From the second step after the window: the first holds the profiler's stop and export.
RAN_AFTER = 32
#: ...and before a window planned (a window asked for while the job runs has none): a job that ends
#: soon after its window still has them. Up to the step before the window (where the watch of the
#: job's ranges begins: a step of the tool's).
RAN_BEFORE = 16


def read_ns(path: str = SCHEDSTAT) -> tuple[int, int] | None:
    """The calling thread's time on a CPU and its run-queue wait so far, in ns; None where the
    kernel does not say."""
    try:
        with open(path, "rb") as handle:
            ran, wait = handle.read().split()[:2]
        return int(ran), int(wait)
    except (OSError, ValueError):
        return None


class CpuWait:
    """The run-queue waits of one session's stepping thread, block by block."""

    def __init__(self, read=read_ns) -> None:
        self._read = read
        #: The step count at which the next reading is due (the session calls at it).
        self.at: float = 1
        self.kept: list[list] = []
        #: The largest wait dropped from ``kept`` (every block not kept waited at most this or KEPT_S).
        self.dropped_s = 0.0
        #: The steps the readings cover, as [first, last] ranges (a change of thread leaves a gap).
        self.covered: list[list[int]] = []
        #: ``[step, seconds]``: the time the thread ran on a CPU in each profiled step.
        self.ran: list[list] = []
        #: ``[step, seconds]``: its wait for a CPU in each of those steps, however short.
        self.waited: list[list] = []
        self._last: tuple[int, int, int, int] | None = None  # (step, wait ns, thread, ran ns)
        #: The steps read one by one beside a window: before the next (before_window), after the
        #: last (after_window).
        self._follow = [(0, -1), (0, -1)]

    def before_window(self, first: int) -> None:
        """A window is planned from step ``first``: keep the time on a CPU of the RAN_BEFORE steps
        before the step before it."""
        if self._follow[0][1] != first - 2:
            self._follow[0] = (first - 1 - RAN_BEFORE, first - 2)
            self.at = min(self.at, max(first - 2 - RAN_BEFORE, 1))

    def after_window(self, last: int) -> None:
        """A window's last step was ``last``: read each boundary from the one that ends ``last + 1``
        (the stop and the export) and keep the time on a CPU of steps ``last + 2`` on."""
        self._follow[1] = (last + 2, last + 1 + RAN_AFTER)
        self.at = min(self.at, last + 1)

    def note(self, steps: int, times: list[float], profiled: bool = False) -> None:
        """At the boundary that ended step ``steps``: close the block since the last reading (on the
        same thread: a reading is the calling thread's own) and plan the next; ``profiled``: the
        step was a window's, and its time on a CPU is kept when it is the block's one step."""
        read = self._read()
        if read is None:
            self.at = float("inf")
            return
        ran_ns, wait_ns = read
        thread = threading.get_ident()
        last = self._last
        if last is not None and last[2] == thread and steps > last[0]:
            self._cover(last[0] + 1, steps)
            self._keep(last[0] + 1, steps, (wait_ns - last[1]) / 1e9)
            followed = any(first <= steps <= end for first, end in self._follow)
            if (profiled or followed) and steps == last[0] + 1 and len(self.ran) < RAN_KEPT:
                self.ran.append([steps, round((ran_ns - last[3]) / 1e9, 6)])
                self.waited.append([steps, round((wait_ns - last[1]) / 1e9, 6)])
        self._last = (steps, wait_ns, thread, ran_ns)
        self.at = steps + steptiming.steps_in(BLOCK_S, steptiming.recent_step_s(times))
        for first, end in self._follow:
            if first - 1 <= steps < end:
                self.at = steps + 1
            elif steps < first - 1:
                self.at = min(self.at, first - 1)

    def _cover(self, first: int, last: int) -> None:
        if self.covered and self.covered[-1][1] == first - 1:
            self.covered[-1][1] = last
        elif len(self.covered) < KEPT:  # beyond: the later steps have no bound (as without readings)
            self.covered.append([first, last])

    def _keep(self, first: int, last: int, seconds: float) -> None:
        if seconds < KEPT_S:
            return
        dropped = steptiming.keep_largest(self.kept, [first, last, round(seconds, 6)], KEPT)
        if dropped is not None:
            self.dropped_s = max(self.dropped_s, dropped[-1])

    def record(self) -> dict | None:
        """The record's ``cpu_wait``: the kept ``blocks``, the ``covered`` steps and the bound
        ``at_most_s`` on the other blocks in them, ``ran``, the time on a CPU of the profiled steps
        and those beside each window, and ``waited``, their waits; None where no block was read."""
        if not self.covered:
            return None
        return {
            "blocks": [list(block) for block in self.kept],
            "covered": [list(span) for span in self.covered],
            "at_most_s": max(KEPT_S, self.dropped_s),
            "ran": [list(one) for one in self.ran],
            "waited": [list(one) for one in self.waited],
        }
