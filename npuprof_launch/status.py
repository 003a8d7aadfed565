"""The per-process status record: what the chain did in this process, kept on disk as it happens.

Written when the session is created, when its profiler starts, at each window's end and at exit,
each time atomically (a temporary file, then ``os.replace``), so a process killed with SIGKILL
still leaves its last known state, and a reader never sees half a record.
"""

from __future__ import annotations

import json
import os

#: Bits never granted on what we create, whatever the umask: nothing world-writable.
NOT_WORLD_WRITABLE = ~0o002


def make_dirs(path: str) -> None:
    """Create ``path`` with the user's umask, and never world-writable."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(os.path.abspath(path))
    if parent != path:
        make_dirs(parent)  # os.makedirs would give the parents 0o777 less the umask
    try:
        os.mkdir(path, 0o775)
    except FileExistsError:
        if not os.path.isdir(path):
            raise


def restrict(path: str) -> None:
    """Take away world-write from a file someone else created for us (a trace export)."""
    mode = os.stat(path).st_mode & 0o7777
    if mode & 0o002:
        os.chmod(path, mode & NOT_WORLD_WRITABLE)


def write_json(path: str, data: dict, mode: int = 0o664) -> None:
    """Write ``data`` to ``path`` atomically, created with ``mode`` less the umask."""
    make_dirs(os.path.dirname(path))
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_records(status_dir: str) -> list[dict]:
    """Every status record in ``status_dir``; unreadable ones come back as error records."""
    records = []
    try:
        names = sorted(os.listdir(status_dir))
    except FileNotFoundError:
        return records
    for name in names:
        if not name.endswith(".json"):
            continue
        path = os.path.join(status_dir, name)
        try:
            with open(path) as handle:
                record = json.load(handle)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            record = {"file": name, "unreadable": str(exc)}
        record["file"] = name
        records.append(record)
    return records
