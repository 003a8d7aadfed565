"""Where a process that stopped stepping is stuck: its stack dumps read back, and ranks grouped by place.

The hang watch of each process (inprocess/hangwatch.py) has the standard library's
``faulthandler`` write the Python stacks of all its threads to a file beside its status record
when it has not stepped for a while: a watchdog thread in C writes them, without the GIL, so a main
thread blocked in a collective or a sleep is dumped all the same. This module reads those dumps
(the launcher while the job runs, the report at its end) and says, for each process, *where* its
main thread is: the call it is in (a collective such as ``all_reduce``, or the call on the job's
own line, ``time.sleep``) and the job's file and line, the job's own frames in front of the
library's. Ranks stuck at the same place are one group; the odd one out (the smallest group)
comes first, since in a collective hang every rank but one waits for that one.

Standard library only: both wings import it.
"""

from __future__ import annotations

import linecache
import os
import re

#: The file beside a status record that holds its process's stack dumps.
STACKS_SUFFIX = ".stacks"

_TIMEOUT = re.compile(r"^Timeout \((\d+):(\d\d):(\d\d)(?:\.\d+)?\)!")
_THREAD = re.compile(r"^(?:Current thread|Thread) (0x[0-9a-fA-F]+)")
_FRAME = re.compile(r'^\s+File "(?P<file>.*)", line (?P<line>\d+) in (?P<function>.+)$')
#: A call on a line of code: the dotted name before its opening parenthesis (the first one is the
#: outermost: ``time.sleep(float(arg))`` gives ``time.sleep``).
_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")
#: Path parts that mark a library's file, not the job's.
_LIBRARY_PARTS = ("site-packages", "dist-packages", f"{os.sep}lib{os.sep}python", "<frozen ", "npuprof_launch")


def stacks_path(status_file: str) -> str:
    """The stack dumps of the process whose status record is ``status_file``: beside it, same stem."""
    return status_file[: -len(".json")] + STACKS_SUFFIX


def parse(text: str) -> list[dict]:
    """Each dump of a stacks file, oldest first: ``{"after_s": S, "threads": {ident: [frame, ...]}}``,
    each frame ``(file, line, function)`` most recent call first (faulthandler's order)."""
    dumps: list[dict] = []
    frames: list | None = None
    for raw in text.splitlines():
        timeout = _TIMEOUT.match(raw)
        if timeout:
            hours, minutes, seconds = (int(part) for part in timeout.groups())
            dumps.append({"after_s": hours * 3600 + minutes * 60 + seconds, "threads": {}})
            frames = None
            continue
        thread = _THREAD.match(raw)
        if thread and dumps:
            frames = dumps[-1]["threads"].setdefault(int(thread.group(1), 16), [])
            continue
        frame = _FRAME.match(raw)
        if frame and frames is not None:
            frames.append((frame["file"], int(frame["line"]), frame["function"]))
    return dumps


def is_library(path: str) -> bool:
    return any(part in path for part in _LIBRARY_PARTS)


def where(frames: list, read_line=linecache.getline) -> dict:
    """Where a thread is, from its frames (most recent first): ``call`` (the library function the
    job called into, or the call on the job's innermost line), ``at`` (``file:line`` of the job's
    innermost frame) and ``frames`` (the job's frames, innermost first, then the library's)."""
    job = [frame for frame in frames if not is_library(frame[0])]
    library = [frame for frame in frames if is_library(frame[0])]
    found: dict = {"call": None, "at": None, "frames": [_frame_text(f) for f in job + library]}
    if not job:
        found["call"] = frames[0][2] if frames else None
        return found
    innermost = job[0]
    found["at"] = f"{os.path.basename(innermost[0])}:{innermost[1]}"
    index = frames.index(innermost)
    if index > 0:  # the job called into a library: the outermost library frame below the job's line
        found["call"] = _library_call(frames[:index])
    else:
        calls = _CALL.findall(read_line(innermost[0], innermost[1]) or "")
        found["call"] = calls[0] if calls else None
    return found


#: Methods a job calls by iterating (``for batch in loader``, ``next(batches)``): named with their
#: module, ``dataloader.__next__``, since the public names inside (a queue's ``get``) say nothing.
ITERATION = ("__next__", "__iter__", "__anext__", "__aiter__")


def _library_call(library_frames: list) -> str:
    """The library function a job's line is in: the public one nearest the job (``all_reduce``,
    not ``wrapper``), an iterator's method with its module (``dataloader.__next__``), else the
    innermost's name."""
    path, _, called = library_frames[-1]
    if called in ITERATION:
        return f"{os.path.splitext(os.path.basename(path))[0]}.{called}"
    for _, _, function in reversed(library_frames):
        if not function.startswith(("_", "<")) and function not in ("wrapper", "inner", "decorate_context"):
            return function
    return library_frames[0][2]


def _frame_text(frame) -> str:
    return f"{os.path.basename(frame[0])}:{frame[1]} in {frame[2]}"


def read(path: str) -> list[dict] | None:
    """The dumps of a stacks file (``parse``), or None when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return parse(handle.read())
    except OSError:
        return None


def main_frames(dump: dict, main_thread: int | None) -> list:
    """A dump's frames of the main thread, or of the first thread listed when that one is unknown."""
    threads = dump["threads"]
    return threads.get(main_thread) or (next(iter(threads.values())) if threads else [])


def group(stuck: list[dict]) -> list[dict]:
    """Processes (``rank``, ``where``, ...) grouped by where they are, the smallest group first
    (the odd one out: the rank the others wait for), then by their first rank."""
    groups: dict[tuple, list[dict]] = {}
    for item in stuck:
        place = item["where"]
        groups.setdefault((place.get("call"), place.get("at")), []).append(item)
    ordered = sorted(
        groups.values(),
        key=lambda items: (
            len(items),
            is_collective(items[0]["where"].get("call")),
            min((i.get("rank") for i in items), key=_rank_key),
        ),
    )
    return [
        {
            "call": items[0]["where"].get("call"),
            "at": items[0]["where"].get("at"),
            "frames": items[0]["where"].get("frames", [])[:8],
            "ranks": sorted(i["rank"] for i in items if i.get("rank") is not None),
            "processes": len(items),
        }
        for items in ordered
    ]


#: The calls in which a rank waits for the others: among groups of one size, those outside one
#: come first (in a collective hang, the rank outside the collective is the one the others wait for).
COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_to_all",
    "all_to_all_single",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "broadcast",
    "barrier",
    "monitored_barrier",
    "reduce",
    "gather",
    "scatter",
    "send",
    "recv",
    "wait",
    "batch_isend_irecv",
)


def is_collective(call: str | None) -> bool:
    return call is not None and call.rsplit(".", 1)[-1] in COLLECTIVES


def _rank_key(rank) -> float:
    return float("inf") if rank is None else rank


def place_text(item: dict) -> str:
    """``in all_reduce (train.py:42)``: where a group is."""
    call, at = item.get("call"), item.get("at")
    if call and at:
        return f"in {call} ({at})"
    return f"in {call}" if call else (f"at {at}" if at else "at an unknown place")
