"""The schedule: which steps each window traces and records, from the user's five numbers.

This is ``torch.profiler.schedule``'s arithmetic, counted in the job's own steps from 1:
``skip_first`` steps are ignored, then each of ``repeat`` windows has ``wait`` idle steps,
``warmup`` steps traced but discarded, and ``active`` recorded steps. A window after
``--skip-first 2 --active 2`` records steps 3 and 4. Range mode records each chosen call as a
window of its own; an on-demand request is one window that starts where the request lands.

Everything that needs "which steps, how many windows, how long, what does the report print"
asks this module: the options check, the session, the report. It is pure (no torch, no I/O),
so its tests run in microseconds.
"""

from __future__ import annotations

from typing import NamedTuple


class Window(NamedTuple):
    """One window: the profiler runs from the start of step ``first`` to the end of step ``last``."""

    #: The first step traced, warmup included.
    first: int
    warmup: int
    active: int

    @property
    def first_recorded(self) -> int:
        return self.first + self.warmup

    @property
    def last(self) -> int:
        return self.first + self.warmup + self.active - 1

    def steps_due(self, steps: int) -> int:
        """How many times a profiler started before step ``first`` must have been stepped once
        ``steps`` steps have ended: one per boundary inside the window, the last one saves it."""
        return max(0, min(steps + 1, self.last + 1) - self.first)

    def saved_by(self, steps: int) -> bool:
        """Whether the window's last step has ended once ``steps`` steps have."""
        return steps >= self.last

    def moved_to(self, first: int) -> Window:
        """The same window starting later (a start that could not happen at ``first``)."""
        return Window(first, self.warmup, self.active)


class Schedule:
    """The user's schedule, and the windows it asks for."""

    __slots__ = ("skip_first", "wait", "warmup", "active", "repeat", "range_mode")

    def __init__(
        self,
        *,
        skip_first: int = 0,
        wait: int = 0,
        warmup: int = 0,
        active: int = 1,
        repeat: int = 1,
        range_mode: bool = False,
    ) -> None:
        self.skip_first = skip_first
        self.wait = wait
        self.warmup = warmup
        self.active = active
        self.repeat = repeat
        #: Each recorded call is a window of its own (``warmup`` must then be 0).
        self.range_mode = range_mode

    @classmethod
    def of(cls, config) -> Schedule:
        """The schedule of a resolved configuration (options.Config or anything with its fields)."""
        return cls(
            skip_first=config.skip_first,
            wait=config.wait,
            warmup=config.warmup,
            active=config.active,
            repeat=config.repeat,
            range_mode=bool(getattr(config, "range", False)),
        )

    def length(self) -> int:
        """Steps the schedule needs: ``skip_first + (wait + warmup + active) * repeat``."""
        return self.skip_first + (self.wait + self.warmup + self.active) * self.repeat

    def formula(self) -> str:
        """The length as the report and the refusals print it."""
        return (
            f"skip_first + (wait + warmup + active) x repeat = {self.skip_first} + ({self.wait} + {self.warmup} + "
            f"{self.active}) x {self.repeat} = {self.length()}"
        )

    def flags(self) -> str:
        return (
            f"--skip-first {self.skip_first} --wait {self.wait} --warmup {self.warmup} --active {self.active} "
            f"--repeat {self.repeat}"
        )

    def windows(self) -> tuple[Window, ...]:
        """The windows in order. In range mode every recorded call is a one-step window."""
        period = self.wait + self.warmup + self.active
        found: list[Window] = []
        for index in range(self.repeat):
            first = self.skip_first + index * period + self.wait + 1
            if self.range_mode:
                found.extend(Window(first + self.warmup + call, 0, 1) for call in range(self.active))
            else:
                found.append(Window(first, self.warmup, self.active))
        return tuple(found)


def on_demand_window(next_step: int, *, wait: int, warmup: int, active: int) -> Window:
    """The window of an on-demand request that a process takes before step ``next_step``."""
    return Window(next_step + wait, warmup, active)


def aligned_start(next_step: int, align: int) -> int:
    """The first step at or after ``next_step`` that is a multiple of ``align`` plus one, so that
    every rank that rounds up this way opens its window on the same step (dynolog's round-up)."""
    if align <= 1:
        return next_step
    return ((next_step - 1 + align - 1) // align) * align + 1


def placed(windows: tuple[Window, ...], first_recorded: int) -> tuple[list[Window], list[Window]]:
    """``--from-step``: the windows moved together so that the first one's first recorded step is
    ``first_recorded`` (a step of this process: the job's step less the steps it made before), and
    those whose first recorded step came before the process's step 1 (a job resumed past it).

    Returns (kept, passed). The windows keep their spacing (``wait``, ``repeat``); a kept window
    whose warmup would begin before step 1 begins at step 1 with the warmup steps that fit.
    """
    if not windows:
        return [], []
    shift = first_recorded - windows[0].first_recorded
    kept, passed = [], []
    for window in windows:
        moved = Window(window.first + shift, window.warmup, window.active)
        if moved.first_recorded < 1:
            passed.append(moved)
        elif moved.first < 1:
            kept.append(Window(1, moved.first_recorded - 1, moved.active))
        else:
            kept.append(moved)
    return kept, passed
