"""What a session says and keeps of what happened: its warnings, outcomes, errors and the profiler's
own messages, each said once on the ``npuprof:`` voice and kept for the status record, and the
writing of that record (its fields: sessionrecord.py).

A part of Session (session.py) in a module of its own: the clocks, the backends and the parts
beside the session call these to tell it something, and nothing here decides a step.
"""

from __future__ import annotations

import os

from npuprof_launch.common import names, outcomes, record
from npuprof_launch.common.record import StatusRecord
from npuprof_launch.inprocess import sessionrecord


class SessionNotes:
    """The notes of a session; Session inherits them, so its record and callers read them as before."""

    # Session's, which this part reads.
    _pid: int
    _status_path: str

    def __init__(self, say) -> None:
        self._say = say
        self.warnings: list[str] = []
        #: What happened, as data (outcomes.py): the report decides on these, never on the sentences.
        self.outcomes: list[dict] = []
        self.errors: list[str] = []
        #: How many errors and warnings the profiler itself logged.
        self.profiler_messages: dict[str, int] = {}

    def note_warning(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            self._say(message)

    def note_outcome(self, kind: str, step: int | None, **fields) -> None:
        """Record an outcome (outcomes.py) and say its sentence, once."""
        outcome = outcomes.make(kind, step, **fields)
        if outcomes.sentence(outcome) not in self.warnings:
            self.outcomes.append(outcome)
            self.note_warning(outcomes.sentence(outcome))

    def note_profiler(self, kind: str, text: str) -> None:
        """What the profiler itself logged: its errors fail --check, its warnings are told."""
        counts = self.profiler_messages
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "error":
            self._note_error_once(names.PROFILER_ERROR + text)
        else:
            self.note_warning(f"the profiler logged a warning: {text}")

    def _note_error_once(self, message: str) -> None:
        if message not in self.errors:
            self.errors.append(message)
            self._say(message)

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
            self._note_error_once(f"could not write the status record {self._status_path}: {exc}")
