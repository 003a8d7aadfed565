"""The children a process forked in its window's stop and left running when it ended there.

torch_npu's export parses in a pool of worker processes forked at the stop (a
``ProcessPoolExecutor``: its ``MultiProcessPool``). A job killed meanwhile (the out-of-memory killer
during an export is the case) leaves them behind: each finishes the parse it began, then waits on
the pool's queue for its dead parent's next task for ever (it holds the queue's write end itself),
with a copy of the job's memory and the job's output open, so a pipe from the job never closes.
The stand-in's workers, built after the real sources, did so in the suite.

They are found as the processes that hold the dead process's stacks file open (hangwatch.py keeps
it open; a forked child inherits it) and began no earlier than the stop, to the second: the kernel
tells a process's start in ticks since boot, and the boot time in whole seconds. Only on this
host, only for a record that ended in its stop (record.stop_under_way): nothing is read otherwise.
"""

from __future__ import annotations

import os

from npuprof_launch.common import names
from npuprof_launch.common.record import ReadRecord, stop_under_way

PROC = "/proc"


def forked_in_stop(record: ReadRecord, output_dir: str, proc: str = PROC) -> list[int]:
    """The pids of the processes ``record``'s process forked in the stop it ended in, still running."""
    window = stop_under_way(record)
    stacks = (record.get("hang_watch") or {}).get("stacks")
    if window is None or not stacks or record.get("host") != names.host():
        return []
    target = os.path.realpath(os.path.join(output_dir, stacks))
    since_s = window["stop_began_ns"] / 1e9 - 1.0  # the boot time's whole second
    boot_s = _boot_s(proc)
    found = []
    for pid in sorted(int(name) for name in _listdir(proc) if name.isdigit()):
        if pid == record.get("pid") or not _holds(os.path.join(proc, str(pid), "fd"), target):
            continue
        started = _started_s(os.path.join(proc, str(pid), "stat"), boot_s)
        if started is not None and started >= since_s:
            found.append(pid)
    return found


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _holds(fds: str, target: str) -> bool:
    """Whether a process has ``target`` open (another user's processes cannot be read: no)."""
    for fd in _listdir(fds):
        try:
            if os.readlink(os.path.join(fds, fd)) == target:
                return True
        except OSError:
            continue
    return False


def _boot_s(proc: str) -> float | None:
    try:
        with open(os.path.join(proc, "stat")) as handle:
            for line in handle:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _started_s(stat: str, boot_s: float | None) -> float | None:
    """A process's start, in seconds since the epoch: field 22 of its stat, in clock ticks since boot."""
    if boot_s is None:
        return None
    try:
        with open(stat) as handle:
            fields = handle.read().rpartition(")")[2].split()
        return boot_s + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
