"""The step mark: each process's step count in shared memory, read while the process is stuck.

The status record is written every few seconds of steps (inprocess/session.py, CHECKPOINT_S), so
a launcher that read only the record said "last recorded step 8" of a job that had stopped after
step 15. Each step therefore also stores its count in an 8-byte file beside the record, mapped
into the process (``mmap``, shared): one store into a memoryview, about 20 ns and no system call
a step. The kernel's page cache holds that store, so a launcher on the same host reads the step
the process stopped after, while its main thread is blocked and no code of ours runs in it. A
reader on another host (a shared file system) sees the page when the kernel writes it back, so
the reader takes the larger of the mark and the record's count.

The slot is a plain list until the process's first checkpoint: a process that never steps makes
no file, and a forked child drops its parent's mapping (``Session.after_fork``) before it counts.
Standard library only: it runs in every process of the job.
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from typing import Union

#: The file beside a status record ``NAME.json``: ``NAME.mark``.
SUFFIX = ".mark"
#: One signed 64-bit count in the machine's own byte order: what a memoryview cast to "q" stores.
_FORMAT = "=q"
_SIZE = struct.calcsize(_FORMAT)

#: Where a process stores its count: ``slot[0] = steps``.
Slot = Union[list, memoryview]


def path_of(status_file: str) -> str:
    """The mark of the process whose status record is ``status_file``: beside it, same stem."""
    return status_file[: -len(".json")] + SUFFIX


def unmapped() -> Slot:
    """A slot that stores the count in this process only: before the first checkpoint, after a
    fork, and where the mapping failed."""
    return [0]


def mapped(status_file: str, steps: int) -> Slot:
    """The process's slot in its mark file, holding ``steps`` now. Raises OSError (or ValueError
    where the file system cannot map a file): the caller keeps its unmapped slot then."""
    fd = os.open(path_of(status_file), os.O_RDWR | os.O_CREAT, 0o664)
    try:
        # Written, not truncated to size: the file's block is allocated now, so a store into the
        # page never needs one (a sparse page of a full tmpfs would kill the job with SIGBUS).
        if os.pwrite(fd, struct.pack(_FORMAT, steps), 0) != _SIZE:
            raise OSError("the step mark could not be written")
        # Before 3.13 the mmap object keeps a duplicate of fd (not inherited by children), as the
        # hang watch keeps its stacks file open; 3.13 can map without it.
        extra = {"trackfd": False} if sys.version_info >= (3, 13) else {}
        memory = mmap.mmap(fd, _SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, **extra)
    finally:
        os.close(fd)  # the mapping holds the file
    slot = memoryview(memory).cast("q")
    slot[0] = steps
    return slot


def read(status_file: str) -> int | None:
    """The count a process's mark holds now, or None where it has none (an older version of the
    tool, a process that never checkpointed, a file system that refused the mapping)."""
    try:
        with open(path_of(status_file), "rb") as file:
            data = file.read(_SIZE)
    except OSError:
        return None
    if len(data) != _SIZE:
        return None
    return struct.unpack(_FORMAT, data)[0]
