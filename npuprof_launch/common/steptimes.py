"""Whole-run step times: one small binary file per process, beside its status record.

The file holds one little-endian float32 per step from step 2 on: the wall time in seconds
between the boundary that ended the step before and the one that ended this step (the same
boundaries as the profiler's). Step 1 has no boundary before it, so it has no entry. Four bytes
a step: a million-step run is 4 MB per rank. The session appends to it at its checkpoints
(every few seconds), at window edges and at its end, so a process killed with SIGKILL loses at
most the last interval.
"""

from __future__ import annotations

import array
import sys

from npuprof_launch.common import files


def append(path: str, durations) -> int:
    """Append step durations (seconds); returns how many were written."""
    data = array.array("f", durations)
    if sys.byteorder != "little":
        data.byteswap()
    files.append_bytes(path, data.tobytes())
    return len(data)


def read(path: str) -> array.array:
    """The durations of steps 2, 3, ... of one process (empty when the file is missing)."""
    data = array.array("f")
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        return data
    data.frombytes(raw[: len(raw) - len(raw) % data.itemsize])
    if sys.byteorder != "little":
        data.byteswap()
    return data


def read_tail(path: str, count: int) -> tuple[int, array.array]:
    """The durations of one process's last ``count`` steps, and the step of the first of them: the
    job's findings compare the ranks' latest steps, a few KB each, at any length of run."""
    data = array.array("f")
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2) // data.itemsize
            start = max(0, size - count)
            handle.seek(start * data.itemsize)
            raw = handle.read((size - start) * data.itemsize)
    except OSError:
        return 2, data
    data.frombytes(raw[: len(raw) - len(raw) % data.itemsize])
    if sys.byteorder != "little":
        data.byteswap()
    return start + 2, data
