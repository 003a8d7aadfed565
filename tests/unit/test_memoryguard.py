"""--max-window-mb (memoryguard.py): the process's resident size, and the reason a window stops."""

from __future__ import annotations

import os

import pytest

from npuprof_launch.inprocess import memoryguard


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_the_resident_size_grows_with_memory_touched():
    before = memoryguard.rss_bytes()
    held = bytearray(64 * memoryguard.MB)  # zeroed: every page is touched
    assert memoryguard.rss_bytes() - before > 32 * memoryguard.MB
    del held


def test_without_proc_the_size_reads_zero(monkeypatch):
    def missing(*args, **kwargs):
        raise OSError("no /proc")

    monkeypatch.setattr("builtins.open", missing)
    assert memoryguard.rss_bytes() == 0


def test_growth_past_the_limit_gives_the_growth_and_within_it_none(monkeypatch):
    monkeypatch.setattr(memoryguard, "rss_bytes", lambda: 1000 * memoryguard.MB)
    assert memoryguard.past_limit(900 * memoryguard.MB, 100) is None, "exactly the limit is within it"
    assert memoryguard.past_limit(600 * memoryguard.MB, 256) == 400
