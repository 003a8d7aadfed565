"""The job's numbering of a session's steps, and ``--from-step``'s windows placed by it.

A part of Session (session.py) in a module of its own, as sessionnotes.py is: the session counts
this process's steps (``steps``, and the schedule's ``--skip-first`` counts them too, so a resumed
run is profiled at the same steps of the process as before), while everything a person reads
numbers them as the job does (common/numbering.py): ``iteration#N``, ``ProfilerStep#N``, the
record's windows and outcomes carry ``steps + step_offset``. The clock tells the session its
offset once, at the first step (inprocess/resumed.py); nothing here runs per step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npuprof_launch.common import numbering, outcomes
from npuprof_launch.common.schedule import placed

if TYPE_CHECKING:
    from collections.abc import Callable

    from npuprof_launch.common.options import Config
    from npuprof_launch.common.schedule import Schedule, Window


class JobNumbering:
    """The session's offset and its source; Session inherits them (and ``_windows``, ``schedule``,
    ``config``, ``note_outcome`` come from it)."""

    #: The job's number of the step before this process's first: the job's step N is the process's N - offset.
    step_offset = 0
    #: Where the offset came from: a key of numbering.SOURCES.
    numbered_by = numbering.FRESH

    # Session's, which this part reads and sets.
    config: Config
    schedule: Schedule
    steps: int
    _windows: list[Window]
    _next: int
    note_outcome: Callable[..., None]

    def number_from(self, offset: int, source: str) -> None:
        """The job numbers this process's step N as ``N + offset`` (numbering.SOURCES says how it
        knows). Told before the first ``step_ended``: ``--from-step`` places its windows here, by the
        job's numbers where they are known, else by the process's (and says so)."""
        self.step_offset, self.numbered_by = offset, source
        config = self.config
        if config.from_step is None or config.on_demand:
            return
        known = numbering.known(source)
        if not known:
            self.note_outcome(outcomes.NUMBERING_UNKNOWN, None, from_step=config.from_step, source=source)
        kept, passed = placed(self.schedule.windows(), config.from_step - (offset if known else 0))
        self._windows = kept
        self._next = 0
        while self._next < len(kept) and kept[self._next].first <= self.steps:
            self._next += 1  # a re-executed image counts on from its steps (session.go_on_from)
        for window in passed:
            self.note_outcome(
                outcomes.FROM_STEP_PASSED,
                offset + 1,
                first=window.first_recorded + offset,
                last=window.last + offset,
                began=offset + 1,
                source=source,
            )
