"""Slow storage for the window-end benchmark: a FUSE passthrough that makes every write wait.

Figure 6 of run.py compares the step stall at a window's end when the trace goes straight to a
slow shared filesystem (Lustre, NFS, an object-store mount under load) with ``--stage-dir``,
which writes to a local disk and moves the window home off the training path. The slow
filesystem is this one: every file operation goes from the kernel to this process through
``/dev/fuse`` (no page-cache write-back: each ``write()`` of the job waits for our answer), and
before answering a ``WRITE`` it sleeps ``latency + bytes / bandwidth``; creating, renaming and
removing files waits ``latency`` too. The data lands in an ordinary directory (the backing).

It speaks the kernel's FUSE protocol itself (``linux/fuse.h``, protocol 7.31), with ``mount(2)``
through ctypes: no libfuse, no Python package, so it runs wherever the benchmark runs as root
with ``/dev/fuse``; elsewhere ``unavailable()`` says why and the figure is skipped.

    python benchmarks/slowfs.py BACKING MOUNTPOINT [--latency-ms 1] [--mbps 20]

mounts, prints ``ready``, serves until SIGTERM, then unmounts; ``mounted()`` does all that from
run.py and hands back the counters (requests, bytes, seconds slept) at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import errno
import json
import os
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

# -- the protocol (linux/fuse.h) -------------------------------------------------------------------

LOOKUP, FORGET, GETATTR, SETATTR, READLINK, SYMLINK = 1, 2, 3, 4, 5, 6
MKNOD, MKDIR, UNLINK, RMDIR, RENAME, LINK, OPEN, READ, WRITE, STATFS = 8, 9, 10, 11, 12, 13, 14, 15, 16, 17
RELEASE, FSYNC, FLUSH, INIT, OPENDIR, READDIR, RELEASEDIR, FSYNCDIR = 18, 20, 25, 26, 27, 28, 29, 30
ACCESS, CREATE, INTERRUPT, DESTROY, BATCH_FORGET, RENAME2 = 34, 35, 36, 38, 42, 45
NO_REPLY = {FORGET, BATCH_FORGET, INTERRUPT}

IN_HEADER = struct.Struct("<IIQQIIIHH")  # len, opcode, unique, nodeid, uid, gid, pid, extlen, pad
OUT_HEADER = struct.Struct("<IiQ")  # len, error, unique
ATTR = struct.Struct("<QQQQQQIIIIIIIIII")  # fuse_attr: 88 bytes
ENTRY_HEAD = struct.Struct("<QQQQII")  # nodeid, generation, entry_valid, attr_valid, their nsec
ATTR_HEAD = struct.Struct("<QII")  # attr_valid, nsec, dummy
INIT_IN = struct.Struct("<IIII")
INIT_OUT = struct.Struct("<IIIIHHIIHHI7I")  # 64 bytes
OPEN_OUT = struct.Struct("<QII")
WRITE_IN = struct.Struct("<QQIIQII")  # 40 bytes, the data follows
READ_IN = struct.Struct("<QQIIQII")
SETATTR_IN = struct.Struct("<IIQQQQQQIIIIIIII")  # 88 bytes
KSTATFS = struct.Struct("<QQQQQIIII6I")  # 80 bytes
DIRENT = struct.Struct("<QQII")

FATTR_MODE, FATTR_UID, FATTR_GID, FATTR_SIZE = 1, 2, 4, 8
FATTR_ATIME, FATTR_MTIME, FATTR_FH, FATTR_ATIME_NOW, FATTR_MTIME_NOW = 16, 32, 64, 128, 256
FUSE_BIG_WRITES, FUSE_MAX_PAGES = 1 << 5, 1 << 22
FUSE_GETATTR_FH = 1
MAJOR, MINOR = 7, 31
MAX_WRITE = 128 * 1024
#: What the kernel is told about block size: stdio and Python size their buffers by it (a
#: network filesystem reports its large transfer size, NFS its wsize).
BLKSIZE = MAX_WRITE
#: Attributes and names are cached this long by the kernel (seconds): we are the only writer.
VALID_S = 1

MNT_DETACH = 2


class Server:
    """Answers the kernel's requests for one mount, from several threads."""

    def __init__(self, fd: int, backing: str, latency_s: float, bytes_per_s: float) -> None:
        self.fd = fd
        self.backing = os.path.realpath(backing)
        self.latency_s = latency_s
        self.bytes_per_s = bytes_per_s
        self.lock = threading.Lock()
        self.paths: dict[int, str] = {1: ""}
        self.ids: dict[str, int] = {"": 1}
        self.next_id = 2
        self.dirs: dict[int, list[tuple[str, int]]] = {}
        self.next_dir = 1
        self.counters = {"write_requests": 0, "write_bytes": 0, "slept_s": 0.0, "requests": 0}

    # -- names and nodes --

    def real(self, nodeid: int, name: str | None = None) -> str:
        with self.lock:
            relative = self.paths[nodeid]
        if name is not None:
            relative = os.path.join(relative, name) if relative else name
        return os.path.join(self.backing, relative)

    def relative(self, nodeid: int, name: str) -> str:
        with self.lock:
            parent = self.paths[nodeid]
        return os.path.join(parent, name) if parent else name

    def node(self, relative: str) -> int:
        with self.lock:
            found = self.ids.get(relative)
            if found is None:
                found = self.ids[relative] = self.next_id
                self.paths[found] = relative
                self.next_id += 1
            return found

    def drop(self, relative: str) -> None:
        """A name that no longer exists: a file made there later gets a new node id."""
        with self.lock:
            for path in [p for p in self.ids if p == relative or p.startswith(relative + "/")]:
                del self.ids[path]

    def moved(self, old: str, new: str) -> None:
        self.drop(new)
        with self.lock:
            for path in [p for p in self.ids if p == old or p.startswith(old + "/")]:
                nodeid = self.ids.pop(path)
                renamed = new + path[len(old) :]
                self.ids[renamed] = nodeid
                self.paths[nodeid] = renamed

    # -- replies --

    def attr(self, st: os.stat_result) -> bytes:
        return ATTR.pack(
            st.st_ino,
            st.st_size,
            st.st_blocks,
            int(st.st_atime),
            int(st.st_mtime),
            int(st.st_ctime),
            st.st_atime_ns % 10**9,
            st.st_mtime_ns % 10**9,
            st.st_ctime_ns % 10**9,
            st.st_mode,
            st.st_nlink,
            st.st_uid,
            st.st_gid,
            st.st_rdev & 0xFFFFFFFF,
            BLKSIZE,
            0,
        )

    def entry(self, relative: str) -> bytes:
        st = os.lstat(os.path.join(self.backing, relative))
        return ENTRY_HEAD.pack(self.node(relative), 0, VALID_S, VALID_S, 0, 0) + self.attr(st)

    def wait(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)
            with self.lock:
                self.counters["slept_s"] += seconds

    # -- the loop --

    def serve(self) -> None:
        size = MAX_WRITE + 64 * 1024
        while True:
            try:
                request = os.read(self.fd, size)
            except OSError as exc:
                if exc.errno in (errno.EINTR, errno.EAGAIN, errno.ENOENT):
                    continue
                return  # ENODEV: unmounted
            if not request:
                return
            length, opcode, unique, nodeid, uid, gid, pid, _, _ = IN_HEADER.unpack_from(request)
            body = request[IN_HEADER.size : length]
            with self.lock:
                self.counters["requests"] += 1
            try:
                reply = self.handle(opcode, nodeid, body)
                error = 0
            except OSError as exc:
                reply, error = b"", -(exc.errno or errno.EIO)
            except Exception:  # noqa: BLE001 - a bug here must not hang the job: answer EIO
                reply, error = b"", -errno.EIO
            if opcode in NO_REPLY:
                continue
            if opcode == DESTROY:
                reply, error = b"", 0
            try:
                os.write(self.fd, OUT_HEADER.pack(OUT_HEADER.size + len(reply), error, unique) + reply)
            except OSError:
                pass  # the request was interrupted, or the mount is gone

    def handle(self, opcode: int, nodeid: int, body: bytes) -> bytes:
        if opcode == INIT:
            major, minor, readahead, flags = INIT_IN.unpack_from(body)
            wanted = flags & (FUSE_BIG_WRITES | FUSE_MAX_PAGES)
            return INIT_OUT.pack(MAJOR, MINOR, readahead, wanted, 16, 12, MAX_WRITE, 1, MAX_WRITE // 4096, 0, 0,
                                 *([0] * 7))  # fmt: skip
        if opcode == LOOKUP:
            return self.entry(self.relative(nodeid, _name(body)))
        if opcode == FORGET or opcode == BATCH_FORGET or opcode == INTERRUPT:
            return b""
        if opcode == GETATTR:
            flags, _, fh = struct.unpack_from("<IIQ", body)
            st = os.fstat(fh) if flags & FUSE_GETATTR_FH else os.lstat(self.real(nodeid))
            return ATTR_HEAD.pack(VALID_S, 0, 0) + self.attr(st)
        if opcode == SETATTR:
            return self.setattr(nodeid, body)
        if opcode == OPEN:
            flags = struct.unpack_from("<I", body)[0]
            fd = os.open(self.real(nodeid), flags & ~(os.O_CREAT | os.O_EXCL | os.O_NOCTTY | os.O_APPEND))
            return OPEN_OUT.pack(fd, 0, 0)
        if opcode == CREATE:
            flags, mode, _umask, _ = struct.unpack_from("<IIII", body)
            relative = self.relative(nodeid, _name(body[16:]))
            self.wait(self.latency_s)
            fd = os.open(os.path.join(self.backing, relative), (flags | os.O_CREAT) & ~os.O_APPEND, mode & 0o7777)
            return self.entry(relative) + OPEN_OUT.pack(fd, 0, 0)
        if opcode == READ:
            fh, offset, size, *_ = READ_IN.unpack_from(body)
            return os.pread(fh, size, offset)
        if opcode == WRITE:
            fh, offset, size, *_ = WRITE_IN.unpack_from(body)
            data = body[WRITE_IN.size : WRITE_IN.size + size]
            self.wait(self.latency_s + len(data) / self.bytes_per_s)
            written = os.pwrite(fh, data, offset)
            with self.lock:
                self.counters["write_requests"] += 1
                self.counters["write_bytes"] += written
            return struct.pack("<II", written, 0)
        if opcode == FLUSH:
            return b""
        if opcode == RELEASE:
            os.close(struct.unpack_from("<Q", body)[0])
            return b""
        if opcode == FSYNC:
            self.wait(self.latency_s)
            os.fsync(struct.unpack_from("<Q", body)[0])
            return b""
        if opcode == MKDIR:
            mode, _umask = struct.unpack_from("<II", body)
            relative = self.relative(nodeid, _name(body[8:]))
            self.wait(self.latency_s)
            os.mkdir(os.path.join(self.backing, relative), mode & 0o7777)
            return self.entry(relative)
        if opcode in (UNLINK, RMDIR):
            relative = self.relative(nodeid, _name(body))
            self.wait(self.latency_s)
            (os.unlink if opcode == UNLINK else os.rmdir)(os.path.join(self.backing, relative))
            self.drop(relative)
            return b""
        if opcode in (RENAME, RENAME2):
            newdir = struct.unpack_from("<Q", body)[0]
            flags = struct.unpack_from("<I", body, 8)[0] if opcode == RENAME2 else 0
            rest = body[16:] if opcode == RENAME2 else body[8:]
            old_name, new_name = rest.split(b"\0")[:2]
            old = self.relative(nodeid, old_name.decode("utf-8", "surrogateescape"))
            new = self.relative(newdir, new_name.decode("utf-8", "surrogateescape"))
            if flags & ~1:
                raise OSError(errno.EINVAL, "rename flags")
            if flags & 1 and os.path.lexists(os.path.join(self.backing, new)):
                raise OSError(errno.EEXIST, "exists")
            self.wait(self.latency_s)
            os.rename(os.path.join(self.backing, old), os.path.join(self.backing, new))
            self.moved(old, new)
            return b""
        if opcode == OPENDIR:
            path = self.real(nodeid)
            listing = [(".", stat.S_IFDIR), ("..", stat.S_IFDIR)]
            with os.scandir(path) as entries:
                for item in entries:
                    kind = stat.S_IFDIR if item.is_dir(follow_symlinks=False) else stat.S_IFREG
                    listing.append((item.name, kind))
            with self.lock:
                handle = self.next_dir
                self.next_dir += 1
                self.dirs[handle] = listing
            return OPEN_OUT.pack(handle, 0, 0)
        if opcode == READDIR:
            fh, offset, size, *_ = READ_IN.unpack_from(body)
            with self.lock:
                listing = self.dirs.get(fh, [])
            out = bytearray()
            for index in range(offset, len(listing)):
                name, kind = listing[index]
                raw = name.encode("utf-8", "surrogateescape")
                record = DIRENT.pack(0xFFFFFFFF, index + 1, len(raw), kind >> 12) + raw
                record += b"\0" * (-len(record) % 8)
                if len(out) + len(record) > size:
                    break
                out += record
            return bytes(out)
        if opcode == RELEASEDIR:
            with self.lock:
                self.dirs.pop(struct.unpack_from("<Q", body)[0], None)
            return b""
        if opcode == FSYNCDIR or opcode == ACCESS or opcode == DESTROY:
            return b""
        if opcode == STATFS:
            vfs = os.statvfs(self.backing)
            return KSTATFS.pack(vfs.f_blocks, vfs.f_bfree, vfs.f_bavail, vfs.f_files, vfs.f_ffree, vfs.f_bsize,
                                vfs.f_namemax, vfs.f_frsize, 0, *([0] * 6))  # fmt: skip
        raise OSError(errno.ENOSYS, "not implemented")

    def setattr(self, nodeid: int, body: bytes) -> bytes:
        valid, _, fh, size, _, atime, mtime, _, atimensec, mtimensec, _, mode, _, uid, gid, _ = SETATTR_IN.unpack_from(
            body
        )
        path = self.real(nodeid)
        if valid & FATTR_MODE:
            os.chmod(path, mode & 0o7777)
        if valid & (FATTR_UID | FATTR_GID):
            os.chown(path, uid if valid & FATTR_UID else -1, gid if valid & FATTR_GID else -1)
        if valid & FATTR_SIZE:
            self.wait(self.latency_s)
            if valid & FATTR_FH:
                os.ftruncate(fh, size)
            else:
                os.truncate(path, size)
        if valid & (FATTR_ATIME | FATTR_MTIME | FATTR_ATIME_NOW | FATTR_MTIME_NOW):
            st = os.lstat(path)
            now = time.time_ns()
            a = now if valid & FATTR_ATIME_NOW else (atime * 10**9 + atimensec if valid & FATTR_ATIME else None)
            m = now if valid & FATTR_MTIME_NOW else (mtime * 10**9 + mtimensec if valid & FATTR_MTIME else None)
            os.utime(path, ns=(a if a is not None else st.st_atime_ns, m if m is not None else st.st_mtime_ns))
        return ATTR_HEAD.pack(VALID_S, 0, 0) + self.attr(os.lstat(path))


def _name(body: bytes) -> str:
    return body.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


# -- mounting ------------------------------------------------------------------------------------


def _libc():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return libc


def unavailable() -> str | None:
    """Why this machine cannot mount the slow filesystem, or None when it can (as far as can be seen)."""
    if not sys.platform.startswith("linux"):
        return f"FUSE needs Linux, this is {sys.platform}"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine"
    if os.geteuid() != 0:
        return "mounting a FUSE filesystem without fusermount needs root"
    try:
        with open("/proc/filesystems") as handle:
            if not any(line.split()[-1:] == ["fuse"] for line in handle):
                return "the kernel has no fuse filesystem (modprobe fuse)"
    except OSError:
        pass
    return None


def mount(backing: str, mountpoint: str) -> int:
    """Mount a FUSE filesystem at ``mountpoint``; returns the /dev/fuse descriptor that serves it."""
    fd = os.open("/dev/fuse", os.O_RDWR)
    options = f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other,max_read={MAX_WRITE}"
    libc = _libc()
    if libc.mount(b"slowfs", os.fsencode(mountpoint), b"fuse.slowfs", 6, options.encode()) != 0:  # nosuid, nodev
        code = ctypes.get_errno()
        os.close(fd)
        raise OSError(code, f"mount of a FUSE filesystem at {mountpoint}: {os.strerror(code)}")
    return fd


def unmount(mountpoint: str) -> None:
    _libc().umount2(os.fsencode(mountpoint), MNT_DETACH)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backing")
    parser.add_argument("mountpoint")
    parser.add_argument("--latency-ms", type=float, default=1.0, help="wait per write request and per metadata change")
    parser.add_argument("--mbps", type=float, default=20.0, help="write bandwidth, MB/s (10^6 bytes)")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--stats", help="write the counters here as JSON at the end")
    args = parser.parse_args(argv)
    os.makedirs(args.backing, exist_ok=True)
    os.makedirs(args.mountpoint, exist_ok=True)
    fd = mount(args.backing, args.mountpoint)
    server = Server(fd, args.backing, args.latency_ms / 1e3, args.mbps * 1e6)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    for _ in range(args.threads):
        threading.Thread(target=server.serve, daemon=True).start()
    os.statvfs(args.mountpoint)  # answered once INIT is: the mount is usable
    print("ready", flush=True)
    done.wait()
    unmount(args.mountpoint)
    if args.stats:
        with open(args.stats, "w") as handle:
            json.dump(server.counters, handle)
    os._exit(0)  # the serving threads sit in read(): closing the device ends the connection


@contextlib.contextmanager
def mounted(backing: str, mountpoint: str, *, latency_ms: float, mbps: float):
    """A slow filesystem at ``mountpoint`` for the body; yields a dict filled with its counters at the end."""
    counters: dict = {}
    stats = tempfile.NamedTemporaryFile(suffix=".json", delete=False)
    stats.close()
    argv = [sys.executable, os.path.abspath(__file__), backing, mountpoint, "--latency-ms", str(latency_ms)]
    argv += ["--mbps", str(mbps), "--stats", stats.name]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline().strip()
        if line != "ready":
            server.wait(timeout=10)
            raise OSError(f"the slow filesystem did not mount: {line} {server.stderr.read().strip()[-500:]}")
        yield counters
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        unmount(mountpoint)  # in case it died without unmounting (EINVAL when it did: harmless)
        try:
            with open(stats.name) as handle:
                counters.update(json.load(handle))
        except (OSError, ValueError):
            pass
        os.unlink(stats.name)


if __name__ == "__main__":
    sys.exit(main())
