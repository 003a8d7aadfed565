"""A window's stop on its record: when it began, while it runs, and how long it took.

The stop exports the window: the profiler's step that saves it, or its stop, writes the trace out
(torch_npu parses it there too, minutes for a large window, unless --async-mode), and the job waits
in the step after the window. That export holds the window's events in memory: a process the
out-of-memory killer takes there runs no handler. So the record is written as the stop begins,
with ``stop_began_ns``, and says the stop is over (``stop_s``, a cost told past a second) when it
returns: a record that keeps ``stop_began_ns`` is one whose process ended in that stop, which the
answer tells with what the stop left (launcher/reasons.py, launcher/leftovers.py). A signal's
handler may close the window within the stop (``depth``): that inner close leaves the outer stop's
mark alone. Standard library only: this runs in every process of the job.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator


class Stops:
    """The stops of one session's windows: the one under way, and how many are nested in it."""

    def __init__(self) -> None:
        self.depth = 0  # the stops under way: a signal's handler closes a window within one
        self._began = 0.0

    @contextlib.contextmanager
    def under_way(self, window: dict, write: Callable[[], None]) -> Iterator[None]:
        """The calls that stop ``window`` run in this: the first stop marks it and writes the record;
        ``depth`` counts the stops under way until each returns (an exception, a KeyboardInterrupt
        the export let through to the job, included)."""
        self.depth += 1
        if "stop_began_ns" not in window:
            window["stop_began_ns"], self._began = time.time_ns(), time.perf_counter()
            write()
        try:
            yield
        finally:
            self.depth -= 1

    def end(self, window: dict | None) -> None:
        """The stop returned or failed: its time is kept, and the record no longer says it runs."""
        if window is not None and window.pop("stop_began_ns", None) is not None:
            window["stop_s"] = round(time.perf_counter() - self._began, 3)
