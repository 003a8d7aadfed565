"""The page's text helpers, below both its sections (htmlsections.py) and its charts (htmlcharts.py):
every value the page shows from the job is escaped here, and every time is written one way."""

from __future__ import annotations

import html


def esc(value) -> str:
    """HTML-escaped text (quotes too, for attributes); None as nothing."""
    return html.escape("" if value is None else str(value), quote=True)


def ms_text(seconds) -> str:
    """Seconds as milliseconds, to about three figures; ``-`` for none (or 0)."""
    if not seconds:
        return "-"
    ms = seconds * 1e3
    if ms >= 1000:
        return f"{ms:,.0f}"
    return f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"
