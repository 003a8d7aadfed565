"""The job's numbering of a session's steps, and ``--from-step``'s windows placed by it.

A part of Session (session.py) with its own state, as sessionnotes.py is: the session counts this
process's steps (``steps``, and the schedule's ``--skip-first`` counts them too, so a resumed run
is profiled at the same steps of the process as before), while everything a person reads numbers
them as the job does (common/numbering.py): ``iteration#N``, ``ProfilerStep#N``, the record's
windows and outcomes carry ``steps + step_offset``. The clock tells the session its offset once,
at the first step (inprocess/resumed.py); the session hands it here and takes back the windows
placed by it; nothing here runs per step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npuprof_launch.common import numbering, outcomes
from npuprof_launch.common.schedule import placed

if TYPE_CHECKING:
    from collections.abc import Callable

    from npuprof_launch.common.options import Config
    from npuprof_launch.common.schedule import Window


class JobNumbering:
    """The offset of a session's steps in the job's numbering, and where it came from."""

    def __init__(self, config: Config, note_outcome: Callable[..., None]) -> None:
        self._config = config
        self._note_outcome = note_outcome
        #: The job's number of the step before this process's first: the job's step N is the process's N - offset.
        self.step_offset = 0
        #: Where the offset came from: a key of numbering.SOURCES.
        self.numbered_by = numbering.FRESH

    def number_from(
        self, offset: int, source: str, scheduled: tuple[Window, ...], steps: int
    ) -> tuple[list[Window], int] | None:
        """The job numbers this process's step N as ``N + offset`` (numbering.SOURCES says how it
        knows). Told before the first ``step_ended``: ``--from-step`` places the ``scheduled``
        windows here, by the job's numbers where they are known, else by the process's (and says
        so). Returns the windows placed and the index of the first still ahead after ``steps``, or
        None when --from-step places nothing (on demand, or not given)."""
        self.step_offset, self.numbered_by = offset, source
        config = self._config
        if config.from_step is None or config.on_demand:
            return None
        known = numbering.known(source)
        if not known:
            self._note_outcome(outcomes.NUMBERING_UNKNOWN, None, from_step=config.from_step, source=source)
        kept, passed = placed(scheduled, config.from_step - (offset if known else 0))
        ahead = 0
        while ahead < len(kept) and kept[ahead].first <= steps:
            ahead += 1  # a re-executed image counts on from its steps (session.go_on_from)
        for window in passed:
            self._note_outcome(
                outcomes.FROM_STEP_PASSED,
                offset + 1,
                first=window.first_recorded + offset,
                last=window.last + offset,
                began=offset + 1,
                source=source,
            )
        return kept, ahead
