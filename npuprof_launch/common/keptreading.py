"""What ``--check`` reads of an NPU session's parse output, read once, at the window's end, and kept.

A torch window's aftercare summarizes its trace once, so that the report of a thousand ranks reads
small files (aftercare.py, launcher/windowcheck.py). An NPU session's parse output is alike, and
most of it grows with the job: trace_view.json (tens of MB and more, decoded whole only to see that
it is JSON and holds events), communication.json (every HCCL operation with its bandwidth per link,
of which the judge reads four numbers), kernel_details.csv (a row per kernel, summed by type), the
db export's files (``PRAGMA quick_check`` reads every page). The window's aftercare reads the
session once, when torch_npu's parse has finished, with the very functions ``--check`` calls
(``now``), and keeps the outcome in its result with the size and modification time of every file
those functions read. ``--check`` takes a reading whose files are all as they were then, and reads
the files where any differs (parsed again, copied, written after the aftercare stopped waiting):
what it finds is the same either way.

Only what passed is vouched for (deliverables.Sound): a file with a problem is read again, so its
problem is told with the words and the path of that reading.
"""

from __future__ import annotations

import os

from npuprof_launch.common import deliverables, hcclcollectives

#: The shape of a reading; one of another shape (an older tool's) is not used.
VERSION = 1
#: Where a window's aftercare result keeps its sessions' readings, by session directory name.
RESULT_KEY = "readings"
#: The files of ASCEND_PROFILER_OUTPUT/ that the readers below open, besides the db export's.
READ = (
    deliverables.TRACE_VIEW,
    deliverables.KERNEL_DETAILS,
    deliverables.OP_STATISTIC,
    hcclcollectives.COMMUNICATION,
    hcclcollectives.STEP_TRACE_TIME,
    hcclcollectives.ANALYSIS_DB,
)


class Reading:
    """What ``--check`` takes of one session besides its small files: the deliverables already
    found sound (``sound``), its HCCL operations as hcclcollectives.of_session reads them
    (``collectives``), its step times (hcclcollectives.step_times) and its device time per
    operator type (deliverables.npu_operator_totals)."""

    def __init__(
        self,
        *,
        sound: deliverables.Sound,
        collectives: hcclcollectives.Read | None,
        step_times: tuple[int, float, float] | None,
        operator_totals: dict[str, float],
    ) -> None:
        self.sound = sound
        self.collectives = collectives
        self.step_times = step_times
        self.operator_totals = operator_totals


def of_session(session: str, kept: object) -> Reading:
    """The session's reading: ``kept`` (what its window's aftercare kept, ``read``) where every file it
    read is as it was then, else the files read now."""
    return unchanged(session, kept) or now(session)


def now(session: str) -> Reading:
    """The session read now, as ``--check`` reads one its aftercare kept nothing of: nothing vouched
    for (check_ascend_dir reads each deliverable it expects)."""
    return Reading(
        sound=deliverables.Sound(),
        collectives=hcclcollectives.of_session(session),
        step_times=hcclcollectives.step_times(session),
        operator_totals=deliverables.npu_operator_totals(session),
    )


def read(session: str) -> dict | None:
    """A session's reading, to keep (JSON): its files' sizes and times, what deliverables.sound_files
    vouches for, and what ``now`` reads, each operation's group named once. None where the session
    has no parse output, or where a file changed while it was read (a parse still writing)."""
    output = os.path.join(session, deliverables.ASCEND_OUTPUT)
    before = _files(output)
    if before is None:
        return None
    sound = deliverables.sound_files(output)
    found = now(session)
    if _files(output) != before:
        return None
    groups: dict[str, int] = {}
    items = []
    for key, group, step, wait, start in found.collectives or ():
        name = key[: -len(group) - 1]
        if f"{name}@{group}" != key:  # every key is its op's name and its group's (hcclcollectives)
            return None
        items.append([name, groups.setdefault(group, len(groups)), step, wait, start])
    return {
        "version": VERSION,
        "files": before,
        "passed": sorted(sound.passed),
        "db_tables": sound.db_tables,
        "source": found.collectives.source if found.collectives is not None else None,
        "groups": list(groups),
        "items": items,
        "step_times": found.step_times,
        "operator_totals": list(found.operator_totals.items()),  # in the order read: a dict's are sorted
    }


def unchanged(session: str, kept: object) -> Reading | None:
    """``kept`` where every file it read is as it was then; None where one changed, or it is not a
    reading this tool keeps."""
    if not isinstance(kept, dict) or kept.get("version") != VERSION:
        return None
    if _files(os.path.join(session, deliverables.ASCEND_OUTPUT)) != kept.get("files"):
        return None
    try:
        groups = kept["groups"]
        collectives = None
        if kept["source"] is not None:
            # One comprehension, no call an operation: --check reads 512 of them a rank.
            collectives = hcclcollectives.Read(
                (f"{name}@{groups[g]}", groups[g], step, wait, start) for name, g, step, wait, start in kept["items"]
            )
            collectives.source = str(kept["source"])
        timed = kept["step_times"]
        return Reading(
            sound=deliverables.Sound(frozenset(kept["passed"]), dict(kept["db_tables"])),
            collectives=collectives,
            step_times=(int(timed[0]), float(timed[1]), float(timed[2])) if timed is not None else None,
            operator_totals={str(kind): float(us) for kind, us in kept["operator_totals"]},
        )
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def _files(output: str) -> dict[str, list[int] | None] | None:
    """The size and modification time (ns) of each file the readers open, None for one that is not
    there; None where the output directory is not."""
    try:
        names = deliverables.db_names(output)
    except OSError:
        return None
    found: dict[str, list[int] | None] = {}
    for name in (*READ, *names):
        try:
            stat = os.stat(os.path.join(output, name))
        except OSError:
            found[name] = None
            continue
        found[name] = [stat.st_size, stat.st_mtime_ns]
    return found
