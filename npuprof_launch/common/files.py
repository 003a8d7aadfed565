"""Files the tool writes into a job's output: never half-written, never world-writable.

Records are written atomically (a temporary file, then ``os.replace``), so a process killed with
SIGKILL still leaves its last known state and a reader never sees half a record; log lines are
appended with one ``write`` each. Standard library only: the hook writes through this.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

#: Bits never granted on what we create, whatever the umask: nothing world-writable.
NOT_WORLD_WRITABLE = ~0o002


def make_dirs(path: str) -> None:
    """Create ``path`` with the user's umask, and never world-writable.

    The path is normalized first: ``OUT/session/.`` (a file at the top of a tree, its folder
    joined with ``relpath`` = ``.``), ``OUT/a/..`` and ``OUT/a/`` name the folder they lead to, and
    that folder's parents are made before it."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent != path:
        make_dirs(parent)  # os.makedirs would give the parents 0o777 less the umask
    try:
        os.mkdir(path, 0o775)
    except FileExistsError:
        if not os.path.isdir(path):
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory (a file is in its place)", path) from None


def restrict(path: str) -> None:
    """Take away world-write from a file someone else created for us (a trace export)."""
    mode = os.stat(path).st_mode & 0o7777
    if mode & 0o002:
        os.chmod(path, mode & NOT_WORLD_WRITABLE)


def write_json(path: str, data: Mapping, mode: int = 0o664) -> None:
    """Write ``data`` to ``path`` atomically, created with ``mode`` less the umask."""
    import json  # not at module level: the hook imports this module in every process

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


def append_bytes(path: str, data: bytes) -> None:
    """Append ``data`` to ``path`` (created never world-writable), with one ``write``."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o664)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def append_line(path: str, line: str) -> None:
    """Append one line with one ``write`` (O_APPEND), so lines of concurrent processes never mix."""
    append_bytes(path, (line.rstrip("\n") + "\n").encode())


def read_json_lines(path: str) -> list[dict]:
    """The JSON objects of a log file, one per line; a torn or foreign line is skipped."""
    import json

    try:
        with open(path) as handle:
            lines = handle.readlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            found.append(item)
    return found
