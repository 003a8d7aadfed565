"""Progress of the launcher's long work on stderr: ``--check`` over a big output, ``--analyse DIR``,
the end-of-run wait for the windows' moves.

Nothing is shown for work that ends within SHOW_AFTER_S, so a small run prints what it always
printed. After that, a terminal gets one line rewritten in place; a log (stderr not a terminal:
CI, Slurm, ``2> file``) gets a plain line every LOG_EVERY_S, so it grows slowly and reads in
order. Each line says how much is done and, once there is a rate to go by, about how long is
left. stdout is never touched, so ``--check --json`` stays parseable.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

from npuprof_launch.common import names

#: Work that ends sooner shows nothing.
SHOW_AFTER_S = 2.0
#: How often a log gets a line; a terminal's line is rewritten at most every TTY_EVERY_S.
LOG_EVERY_S = 10.0
TTY_EVERY_S = 0.25


class Progress:
    """``done`` of ``total`` items (processes read, sessions parsed, files moved) of one piece of work."""

    def __init__(
        self,
        what: str,
        total: int,
        unit: str,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self.total = total
        self.unit = unit
        self.done = 0
        self._stream = stream
        self._clock = clock
        self._started = clock()
        self._shown_at: float | None = None
        self._in_place = False

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    def advance(self, count: int = 1) -> None:
        self.set(self.done + count)

    def set(self, done: int) -> None:
        """``done`` items are finished now; shows a line when it is time to."""
        self.done = min(done, self.total)
        now = self._clock()
        elapsed = now - self._started
        if elapsed < SHOW_AFTER_S or self.done >= self.total:
            return
        tty = _is_tty(self.stream)
        every = TTY_EVERY_S if tty else LOG_EVERY_S
        if self._shown_at is not None and now - self._shown_at < every:
            return
        self._shown_at = now
        self._write(self.line(elapsed), tty)

    def line(self, elapsed: float) -> str:
        text = f"{names.VOICE} {self.what}: {self.done}/{self.total} {self.unit}"
        if self.done:
            left = elapsed / self.done * (self.total - self.done)
            text += f", about {_duration(left)} left"
        return text

    def finish(self) -> None:
        """Ends the in-place line (a terminal) with the total time; a log gets one closing line."""
        if self._shown_at is None:
            return
        elapsed = self._clock() - self._started
        text = f"{names.VOICE} {self.what}: {self.done}/{self.total} {self.unit} in {_duration(elapsed)}"
        self._write(text, _is_tty(self.stream))
        if self._in_place:
            self.stream.write("\n")
            self.stream.flush()
            self._in_place = False

    def _write(self, text: str, tty: bool) -> None:
        try:
            if tty:
                self.stream.write("\r\033[K" + text)
                self._in_place = True
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr: progress is never worth an error
            pass


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
