"""On-demand windows: ``npuprof-run --trigger DIR`` asks a running job for one window, no restart.

The request travels as a small JSON file in ``DIR/npuprof_requests/``; nothing listens on a port.
Each process of the job looks for new files from its step clock, at most ``POLL_INTERVAL``
times a second and with no system call at all in between (a monotonic-clock read is a vDSO
call). A request is accepted only when its file and folder belong to the job's own user and
are writable by nobody else; a malformed one is reported once and ignored.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

from npuprof_launch.common import files, names, options, record

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

POLL_INTERVAL = 0.25
REQUEST_SUFFIX = ".request.json"
#: The schedule fields a request may carry (whole numbers), with their lower bounds.
REQUEST_FIELDS = {key: options.MINIMUMS[options.BY_NAME[key].kind] for key in names.REQUEST_KEYS}
#: Seconds of a process's steps between where it is estimated to be (its last written count, plus
#: its step time times the record's age) and the step its window starts on: time for the request
#: to reach it (it looks four times a second) before it gets there.
REQUEST_LEAD_S = 1.5


def requests_dir(output_dir: str) -> str:
    return names.requests_dir(output_dir)


def write_request(
    output_dir: str,
    active: int,
    warmup: int,
    wait: int,
    ranks,
    start_step: int | None = None,
    align: int | None = None,
    reason: str | None = None,
) -> dict:
    """Write one request atomically, readable and writable by this user only.

    ``start_step``: the step every taker opens its window on (the first traced step), so all
    ranks record the same steps; ``align``: instead, each taker rounds its next step up to a
    multiple of it (plus one), as dynolog's iteration round-up does. ``reason``: why the window
    is asked for (--on-slowdown says which slowdown), kept in the takers' records.
    """
    created = time.time_ns()
    request: dict[str, Any] = {
        "id": f"{created}-{os.getpid()}",
        "active": active,
        "warmup": warmup,
        "wait": wait,
        "ranks": list(ranks) if ranks is not None else None,
        "start_step": start_step,
        "align": align,
        "created_ns": created,
    }
    if reason:
        request["reason"] = reason
    files.write_json(os.path.join(requests_dir(output_dir), request["id"] + REQUEST_SUFFIX), request, mode=0o600)
    return request


def common_start(records: Sequence[Mapping[str, Any]], ranks=None, now_ns: int | None = None) -> int | None:
    """A step no process of the running job has reached yet, by the time it sees the request.

    From each running record: its last written count, plus what it ran since (its mean step time
    and the record's age) and what it may run within REQUEST_LEAD_S, plus one. None when no
    running process has a count to go by.
    """
    now_ns = time.time_ns() if now_ns is None else now_ns
    candidates = []
    for found in records:
        takes = found.get("on_demand") or (found.get("options") or {}).get("on-slowdown")
        if found.get("ended") or found.get("state") == "off" or not takes:
            continue
        if ranks is not None and (found.get("rank") or 0) not in ranks:
            continue
        steps = found.get("steps") or 0
        step_s = found.get("mean_step_s")
        ahead = 0
        if step_s and step_s > 0:
            age_s = max(0.0, (now_ns - (found.get("updated_ns") or now_ns)) / 1e9)
            ahead = int((age_s + REQUEST_LEAD_S) / step_s) + 1
        candidates.append(steps + ahead + 1)
    return max(candidates) if candidates else None


def withdraw(output_dir: str, request_id: str) -> None:
    try:
        os.unlink(os.path.join(requests_dir(output_dir), request_id + REQUEST_SUFFIX))
    except FileNotFoundError:
        pass


def pickups(output_dir: str, request_id: str) -> list[record.ReadRecord]:
    """The status records of the processes that took request ``request_id``."""
    records = record.read_dir(output_dir)
    return [r for r in records if request_id in (r.get("requests") or [])]


def unsafe_reason(st: os.stat_result, what: str) -> str | None:
    """Why a request file or folder with these attributes must not be trusted, or None."""
    if st.st_uid != os.getuid():
        return f"{what} belongs to uid {st.st_uid}, not to this job's user (uid {os.getuid()})"
    if st.st_mode & 0o022:
        return f"{what} is writable by other users (mode {st.st_mode & 0o777:o})"
    return None


def parse_request(text: str) -> dict:
    """Validate a request's JSON; raises ValueError naming the first bad field."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise ValueError("not a request object with an id")
    for field, minimum in REQUEST_FIELDS.items():
        value = data.get(field)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ValueError(f"{field} must be a whole number >= {minimum}, got {value!r}")
    ranks = data.get("ranks")
    if ranks is not None and (not isinstance(ranks, list) or not all(isinstance(r, int) for r in ranks)):
        raise ValueError(f"ranks must be a list of whole numbers or null, got {ranks!r}")
    for field in ("start_step", "align"):
        value = data.get(field)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"{field} must be a whole number >= 1 or null, got {value!r}")
    if not isinstance(data.get("created_ns"), int):
        raise ValueError("created_ns must be a whole number")
    if data.get("reason") is not None and not isinstance(data["reason"], str):
        raise ValueError(f"reason must be text or absent, got {data['reason']!r}")
    return data


class RequestWatcher:
    """Finds new requests for this process; cheap enough to be asked at every step."""

    #: How often the session asks (it turns this into a step count from the step time).
    interval_s = POLL_INTERVAL

    def __init__(self, output_dir: str, rank: int | None, since_ns: int, note_warning) -> None:
        self.folder = requests_dir(output_dir)
        self.rank = 0 if rank is None else rank
        self.since_ns = since_ns
        self.note_warning = note_warning
        self._next_look = 0.0
        self._folder_mtime: int | None = None
        self._seen: set[str] = set()

    def poll(self) -> dict | None:
        """A new request for this process, or None. Looks at the disk at most POLL_INTERVAL apart."""
        now = time.monotonic()
        if now < self._next_look:
            return None
        self._next_look = now + POLL_INTERVAL
        try:
            st = os.stat(self.folder)
        except OSError:
            return None
        if st.st_mtime_ns == self._folder_mtime:
            return None
        self._folder_mtime = st.st_mtime_ns
        reason = unsafe_reason(st, f"request folder {self.folder}")
        if reason:
            self.note_warning(f"{reason}: on-demand requests ignored")
            return None
        for name in sorted(os.listdir(self.folder)):
            if not name.endswith(REQUEST_SUFFIX) or name in self._seen:
                continue
            self._seen.add(name)
            request = self._read(os.path.join(self.folder, name))
            if request is None or request["created_ns"] < self.since_ns:
                continue
            if request["ranks"] is not None and self.rank not in request["ranks"]:
                continue
            self._folder_mtime = None  # look again next time: more requests may be waiting
            return request
        return None

    def _read(self, path: str) -> dict | None:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            self.note_warning(f"on-demand request {path} ignored: {exc.strerror or exc}")
            return None
        with os.fdopen(fd) as handle:
            reason = unsafe_reason(os.fstat(handle.fileno()), f"on-demand request {path}")
            if reason:
                self.note_warning(f"{reason}: ignored")
                return None
            try:
                return parse_request(handle.read())
            except ValueError as exc:
                self.note_warning(f"on-demand request {path} is malformed ({exc}): ignored")
                return None
