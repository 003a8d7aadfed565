"""Keeping torch's warnings about the tool's own calls out of the job's stderr, and nothing else.

``warnings.catch_warnings`` would do it, but on its way in and out it tells the warnings machinery
that its filters changed, which forgets every "already shown" mark: a warning the job's filter
shows once per location (Python's default) was shown again after each of our windows' starts
(nanoGPT's, or any job's, once-only warnings came back under the tool). So ``ignoring`` puts one
filter of its own at the head of the list for the duration of the call and takes exactly that one
out again, without that signal; ``-W error`` and the job's own filters still apply to everything
else. Standard library only.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator


@contextlib.contextmanager
def ignoring(message: str | None = None, category: type[Warning] = Warning) -> Iterator[None]:
    """Ignore warnings of ``category`` whose text starts with ``message`` (any, when None) while
    the block runs, on every thread (as catch_warnings did; the blocks are short calls into torch)."""
    entry = ("ignore", re.compile(re.escape(message)) if message else None, category, None, 0)
    filters: list = warnings.filters  # type: ignore[assignment]  # typeshed says Sequence; it is the module's list
    filters.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # the job replaced or reset the list meanwhile
            filters.remove(entry)
