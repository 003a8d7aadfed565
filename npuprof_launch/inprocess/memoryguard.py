"""--max-window-mb: how much this process grew while a window recorded, and when that is too much.

The profiler keeps a window's events in memory until the window ends, so a long or busy window can
take the job's host memory with it. The session reads the process's resident memory when a window
starts and, at each step inside it, asks here whether the growth since passed the limit; if so it
stops the window (its trace saved, marked partial), recording how much it grew. It reads Linux's
/proc and nothing else (standard library only: this runs in every process of the job); where
there is no /proc the size reads 0 and the guard never fires.
"""

from __future__ import annotations

import os

MB = 2**20


def rss_bytes() -> int:
    """This process's resident memory (Linux /proc; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def past_limit(window_rss: int, limit_mb: int | None) -> int | None:
    """The MB this process grew by since it had ``window_rss`` bytes (at the window's start), when
    that is more than ``limit_mb`` and the window must stop now; None while it is within the limit,
    and without one (``--max-window-mb`` unset)."""
    if limit_mb is None:
        return None
    grown = rss_bytes() - window_rss
    if grown > limit_mb * MB:
        return round(grown / MB)
    return None
