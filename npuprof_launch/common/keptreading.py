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

A reading (JSON, in the window's aftercare result under ``readings``, by session directory name)::

    {"version": 2,
     "files": {name: [size, mtime_ns] or null, ...},   # each file the readers open, as it was read
     "passed": [...], "db_tables": {db name: [filled table, ...]},          # deliverables.Sound
     "collectives": null or {                           # hcclcollectives.of_session, in its order
         "source": "communication.json",
         "groups": [group, ...],
         "keys": "key\\nkey\\n...",                       # each operation's key, a line each
         "runs": [[step, group index, operations], ...], # each run of one step's, one group's
         "waits": base64, "starts": base64},            # float64, little-endian, an operation each
     "step_times": [steps, window_us, collective_us] or null,
     "computing": [[profiler step, device s], ...] or null,     # hcclcollectives.computing
     "operator_totals": [[operator type, device us], ...]}

The operations are kept in columns, their times as the floats themselves (base64 of their bytes):
``--check`` of a thousand ranks takes 510 of them a rank, and decoding a column is a few calls
where decoding a list of lists was some 2,500 tokens a rank (version 1, which this tool no longer
takes: its sessions are read again, as its own readings are by an older tool). Version 3 added
``computing``, each step's device time, for the judge of the rank the others wait for.
"""

from __future__ import annotations

import array
import base64
import os
import sys
from itertools import chain, repeat

from npuprof_launch.common import deliverables, hcclcollectives

#: The shape of a reading; one of another shape (an older or newer tool's) is not used.
VERSION = 3
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
    (``collectives``), its step times (hcclcollectives.totals), its device's computing time in
    each step (hcclcollectives.computing) and its device time per operator type
    (deliverables.npu_operator_totals)."""

    def __init__(
        self,
        *,
        sound: deliverables.Sound,
        collectives: hcclcollectives.Read | None,
        step_times: tuple[int, float, float] | None,
        computing: list[tuple[int, float]] | None,
        operator_totals: dict[str, float],
    ) -> None:
        self.sound = sound
        self.collectives = collectives
        self.step_times = step_times
        self.computing = computing
        self.operator_totals = operator_totals


def of_session(session: str, kept: object) -> Reading:
    """The session's reading: ``kept`` (what its window's aftercare kept, ``read``) where every file it
    read is as it was then, else the files read now."""
    return unchanged(session, kept) or now(session)


def now(session: str) -> Reading:
    """The session read now, as ``--check`` reads one its aftercare kept nothing of: nothing vouched
    for (check_ascend_dir reads each deliverable it expects)."""
    rows = hcclcollectives.step_rows(session)
    return Reading(
        sound=deliverables.Sound(),
        collectives=hcclcollectives.of_session(session),
        step_times=hcclcollectives.totals(rows),
        computing=hcclcollectives.computing(rows),
        operator_totals=deliverables.npu_operator_totals(session),
    )


def read(session: str) -> dict | None:
    """A session's reading, to keep (JSON): its files' sizes and times, what deliverables.sound_files
    vouches for, and what ``now`` reads. None where the session has no parse output, or where a
    file changed while it was read (a parse still writing)."""
    output = os.path.join(session, deliverables.ASCEND_OUTPUT)
    before = _files(output)
    if before is None:
        return None
    sound = deliverables.sound_files(output)
    found = now(session)
    if _files(output) != before:
        return None
    collectives = packed(found.collectives) if found.collectives is not None else None
    if found.collectives is not None and collectives is None:
        return None
    return {
        "version": VERSION,
        "files": before,
        "passed": sorted(sound.passed),
        "db_tables": sound.db_tables,
        "collectives": collectives,
        "step_times": found.step_times,
        "computing": found.computing,
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
        collectives = None
        if kept["collectives"] is not None:
            collectives = unpacked(kept["collectives"])
            if collectives is None:
                return None
        timed, computing = kept["step_times"], kept["computing"]
        return Reading(
            sound=deliverables.Sound(frozenset(kept["passed"]), dict(kept["db_tables"])),
            collectives=collectives,
            step_times=(int(timed[0]), float(timed[1]), float(timed[2])) if timed is not None else None,
            computing=[(int(step), float(s)) for step, s in computing] if computing is not None else None,
            operator_totals={str(kind): float(us) for kind, us in kept["operator_totals"]},
        )
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def packed(collectives: hcclcollectives.Read) -> dict | None:
    """The operations in columns (the reading's ``collectives``); None where one cannot be kept so
    and read back the same (a key holding a line break, a time that is not a float)."""
    groups: dict[str, int] = {}
    keys: list[str] = []
    runs: list[list[int]] = []
    waits, starts = array.array("d"), array.array("d")
    for key, group, step, wait, start in collectives:
        if "\n" in key or type(wait) is not float or type(start) is not float or type(step) is not int:
            return None
        index = groups.setdefault(group, len(groups))
        if runs and runs[-1][0] == step and runs[-1][1] == index:
            runs[-1][2] += 1
        else:
            runs.append([step, index, 1])
        keys.append(key)
        waits.append(wait)
        starts.append(start)
    return {
        "source": collectives.source,
        "groups": list(groups),
        "keys": "\n".join(keys),
        "runs": runs,
        "waits": _text_of(waits),
        "starts": _text_of(starts),
    }


def unpacked(kept: dict) -> hcclcollectives.Read | None:
    """The operations ``packed`` kept, as hcclcollectives.of_session gave them; None where the
    columns do not agree (raises KeyError, TypeError or ValueError where one is not a column).
    No call an operation: ``--check`` takes 512 of them a rank."""
    groups, runs, lines = kept["groups"], kept["runs"], kept["keys"]
    if not (isinstance(groups, list) and isinstance(runs, list) and isinstance(lines, str)):
        return None
    if not all(isinstance(group, str) for group in groups):
        return None
    keys = lines.split("\n") if lines else []
    waits, starts = _floats_of(kept["waits"]), _floats_of(kept["starts"])
    for step, index, count in runs:
        if not (type(step) is type(index) is type(count) is int and 0 <= index < len(groups) and count > 0):
            return None
    if not len(keys) == len(waits) == len(starts) == sum(count for *_, count in runs):
        return None
    found = hcclcollectives.Read(
        zip(
            keys,
            chain.from_iterable(repeat(groups[index], count) for _, index, count in runs),
            chain.from_iterable(repeat(step, count) for step, _, count in runs),
            waits,
            starts,
        )
    )
    found.source = str(kept["source"])
    return found


def _text_of(values: array.array) -> str:
    """Floats as base64 of their little-endian bytes: read back the very same (``_floats_of``)."""
    if sys.byteorder != "little":
        values = array.array("d", values)
        values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


def _floats_of(text: str) -> list[float]:
    """What ``_text_of`` wrote (ValueError where it is not that: binascii.Error, a length that is
    not a float's)."""
    values = array.array("d")
    values.frombytes(base64.b64decode(text, validate=True))
    if sys.byteorder != "little":
        values.byteswap()
    return values.tolist()


def _files(output: str) -> dict[str, list[int] | None] | None:
    """The size and modification time (ns) of each file the readers open, None for one that is not
    there; None where the output directory is not. One listing, and a stat of each file there."""
    try:
        with os.scandir(output) as listing:
            present = {entry.name: entry for entry in listing}
    except OSError:
        return None
    found: dict[str, list[int] | None] = {}
    for name in (*READ, *deliverables.db_names(output, present)):
        entry = present.get(name)
        try:
            stat = entry.stat() if entry is not None else None
        except OSError:
            stat = None
        found[name] = [stat.st_size, stat.st_mtime_ns] if stat is not None else None
    return found
