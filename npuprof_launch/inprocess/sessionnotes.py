"""What a session says and keeps of what happened: its warnings, outcomes, errors and the profiler's
own messages, each said once on the ``npuprof:`` voice and kept for the status record.

A part of Session (session.py) with its own state: the clocks, the backends and the parts beside
the session tell it something through these (the session hands its ``note_*`` methods out), and
nothing here decides a step or reads the session. The session writes the record; these lists are
some of its fields (sessionrecord.py).
"""

from __future__ import annotations

from collections.abc import Callable

from npuprof_launch.common import names, outcomes


class Notes:
    """A session's notes: each said once and kept, in the order they came."""

    def __init__(self, say: Callable[[str], None]) -> None:
        #: The ``npuprof:`` voice (names.say, or a test's).
        self.say = say
        self.warnings: list[str] = []
        #: What happened, as data (outcomes.py): the report decides on these, never on the sentences.
        self.outcomes: list[dict] = []
        self.errors: list[str] = []
        #: How many errors and warnings the profiler itself logged.
        self.profiler_messages: dict[str, int] = {}
        #: The errors the profiler printed, its own words (the report tells each, once).
        self.profiler_errors: list[str] = []

    def note_warning(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            self.say(message)

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
            if text not in self.profiler_errors:
                self.profiler_errors.append(text)
                self.say(names.PROFILER_ERROR + text)
        else:
            self.note_warning(f"the profiler logged a warning: {text}")

    def note_error_once(self, message: str) -> None:
        if message not in self.errors:
            self.errors.append(message)
            self.say(message)
