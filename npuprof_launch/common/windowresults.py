"""The windows' aftercare results, as their readers see them: where each is, and which still run.

Each saved window's aftercare (inprocess/aftercare.py, a process of its own) writes one result
file; the job's session names it in its status record, and the launcher waits for them before
its report. Both sides meet here, on the common floor, so that the launcher reads results without
importing the code that writes them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

from npuprof_launch.common import names
from npuprof_launch.common.record import ReadRecord

#: The results live in a folder of their own: a status record is every ``*.json`` of npuprof_status/.
RESULTS_DIR = "windows"


def result_path(status_file: str, window: int) -> str:
    """Where the result of a record's ``window``-th window goes: npuprof_status/windows/, named after the record."""
    folder, name = os.path.split(status_file)
    return os.path.join(folder, RESULTS_DIR, f"{name[: -len('.json')]}.window{window}.json")


def unfinished(output_dir: str, records: list[ReadRecord]) -> list[str]:
    """The results of windows whose aftercare still runs (its result says so, or is not written yet)."""
    waiting = []
    for found in records:
        for window in found.get("windows") or ():
            path = window.get("aftercare")
            if not path:
                continue
            try:
                with open(os.path.join(output_dir, path)) as handle:
                    status = json.load(handle).get("status")
            except (OSError, ValueError, AttributeError):
                status = None
            if status in (None, "running") and _alive(found, window):
                waiting.append(path)
    return waiting


def _alive(found: ReadRecord, window: dict) -> bool:
    """A result not written yet only matters while its process or its aftercare may still write
    it. A process killed outright (SIGKILL, the OOM killer) leaves its aftercare running alone."""
    if found.get("ended") is not None or found.get("host") != names.host():
        return True
    return _pid_alive(found.get("pid")) or _pid_alive(window.get("aftercare_pid"))


def _pid_alive(pid) -> bool:
    """Whether a process of this host is still there (a zombie, never reaped where the container's
    first process reaps nothing, is not)."""
    try:
        os.kill(int(pid), 0)
    except (OSError, TypeError, ValueError):
        return False
    try:
        with open(f"/proc/{int(pid)}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def wait(
    output_dir: str, records: list[ReadRecord], timeout: float, tick: Callable[[int, int], None] | None = None
) -> list[str]:
    """Wait (at most ``timeout`` seconds) for the windows' aftercare; ``tick(done, total)`` at every
    look (the launcher's progress line). Returns the results still unfinished."""
    deadline = time.monotonic() + timeout
    total = None
    while True:
        waiting = unfinished(output_dir, records)
        total = len(waiting) if total is None else max(total, len(waiting))
        if tick is not None:
            tick(total - len(waiting), total)
        if not waiting or time.monotonic() >= deadline:
            return waiting
        time.sleep(0.2)
