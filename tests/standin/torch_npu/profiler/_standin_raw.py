"""STAND-IN ONLY (no such module in torch_npu): the raw data a window leaves in its session directory.

What torch_npu's C++ profiler and CANN write while a window records, in the places they write it:
``FRAMEWORK/`` (torch_npu's own records, ``torch.op_range`` and ``torch.op_mark``: the names its
libtorch_npu.so writes and its FwkFileParserConfig reads) when the CPU is traced, and a CANN
``PROF_{n}_{timestamp}_{letters}/`` with ``host/`` and ``device_{id}/`` (``data/``, ``start_info``,
``info.json``, ``host_start.log``: the files torch_npu's parse reads there) when the NPU is.

The contents are the stand-in's own: the real files are binary records of C++ structs and CANN's
device data. ``torch.op_range`` holds here one JSON line per ``ProfilerStep#`` range the window
recorded (the parse reads them back), the rest is small and plausible. $TORCH_NPU_STANDIN_RAW_MB
sets the size of the device data (a sparse file of zeros: its length is what size checks read).
"""

from __future__ import annotations

import json
import os
import random
import string
import time
from datetime import datetime, timezone
from typing import NamedTuple, Optional

from torch_npu import _switches
from torch_npu.profiler import _standin_collectives as collectives

FRAMEWORK = "FRAMEWORK"
OP_RANGE = "torch.op_range"
OP_MARK = "torch.op_mark"
HOST = "host"
#: CANN's clock: the system counter's frequency in MHz, as host/info.json and start_info give it.
FREQ_MHZ = 100.0


class Range(NamedTuple):
    """A range torch_npu recorded: a ``ProfilerStep#N`` record_function, in ns since the epoch."""

    name: str
    start_ns: int
    end_ns: int
    pid: int
    tid: int
    #: The stepping thread's time on a CPU in the range.
    cpu_ns: int = 0
    #: The FLOPs torch counted in the range's operators ($TORCH_NPU_STANDIN_DEVICE_WORK): the work
    #: the stand-in's device computes in that step.
    flops: int = 0


def with_flops(ranges: list[Range], flops: list[tuple[int, int]]) -> list[Range]:
    """``ranges`` with the FLOPs of the operators that began within each (``flops``: start in ns
    since the epoch, FLOPs; Capture.flops)."""
    return [r._replace(flops=sum(n for start, n in flops if r.start_ns <= start < r.end_ns)) for r in ranges]


def device_id() -> int:
    """The NPU the process uses: its local rank, as a launched job sets its device."""
    try:
        return int(os.environ.get("LOCAL_RANK", "0"))
    except ValueError:
        return 0


def prof_dir(session: str) -> str:
    """The session's CANN directory (``PROF_*``), or "" when the NPU was not traced."""
    for name in sorted(os.listdir(session)):
        if name.startswith("PROF_") and os.path.isdir(os.path.join(session, name)):
            return os.path.join(session, name)
    return ""


def _makedirs(path: str) -> None:
    """Every directory missing on the way, each 0750 (as torch_npu's PathManager.make_dir_safety)."""
    if not os.path.isdir(path):
        _makedirs(os.path.dirname(path))
        os.makedirs(path, mode=0o750, exist_ok=True)


def _write(path: str, text: str) -> None:
    _makedirs(os.path.dirname(path))
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640), "w") as handle:
        handle.write(text)


def start(session: str, cpu: bool, npu: bool) -> None:
    """What a window's start leaves: the FRAMEWORK directory, CANN's PROF_ directory and its start info."""
    if cpu:
        _makedirs(os.path.join(session, FRAMEWORK))
    if not npu:
        return
    stamp = datetime.now(tz=timezone.utc).astimezone().strftime("%Y%m%d%H%M%S%f")[:-3]
    letters = "".join(random.choice(string.ascii_uppercase) for _ in range(16))
    cann = os.path.join(session, f"PROF_000001_{stamp}_{letters}")
    device = os.path.join(cann, f"device_{device_id()}")
    begin = {"collectionTimeBegin": str(time.time_ns() // 1000), "clockMonotonicRaw": str(time.monotonic_ns())}
    counter = str(int(time.monotonic_ns() * FREQ_MHZ / 1000))
    _write(os.path.join(cann, HOST, "start_info"), json.dumps(begin))
    _write(os.path.join(cann, HOST, "info.json"), json.dumps({"CPU": [{"Frequency": f"{FREQ_MHZ:.6f}"}]}))
    _write(
        os.path.join(cann, HOST, "host_start.log"),
        f"[Host]\nclock_monotonic_raw={begin['clockMonotonicRaw']}\ncntvct={counter}\n",
    )
    _write(os.path.join(device, f"start_info.{device_id()}"), json.dumps(begin))
    _write(os.path.join(device, f"info.json.{device_id()}"), json.dumps({"DeviceInfo": [{"id": device_id()}]}))


def stop(session: str, ranges: list[Range], found: Optional[list] = None) -> None:
    """What a window's stop flushes: the recorded ranges and collectives (``torch.standin_comm``,
    _standin_collectives.py), and the device data."""
    framework = os.path.join(session, FRAMEWORK)
    cann = prof_dir(session)
    if os.path.isdir(framework):
        _write(os.path.join(framework, OP_RANGE), "".join(json.dumps(r._asdict()) + "\n" for r in ranges))
        _write(os.path.join(framework, OP_MARK), "")
        collectives.write(framework, found or [])
    end = {"collectionTimeEnd": str(time.time_ns() // 1000), "clockMonotonicRaw": str(time.monotonic_ns())}
    if cann:
        _write(os.path.join(cann, HOST, "end_info"), json.dumps(end))
        _write(os.path.join(cann, HOST, "data", "api_event.data.slice_0"), "api_event\n" * 16)
        device = os.path.join(cann, f"device_{device_id()}")
        _write(os.path.join(device, f"end_info.{device_id()}"), json.dumps(end))
        _write(os.path.join(device, "data", "ts_track.data.0.slice_0"), "ts_track\n" * 16)
    bulk = int(_switches.number(_switches.RAW_MB) * 2**20)
    if bulk:
        where = os.path.join(cann, f"device_{device_id()}", "data") if cann else framework
        path = os.path.join(where, "hwts.data.0.slice_0" if cann else OP_MARK)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o640), "ab") as handle:
            handle.truncate(bulk)


def ranges(session: str) -> list[Range]:
    """The ranges a window recorded, as its FRAMEWORK data holds them (none without it)."""
    try:
        with open(os.path.join(session, FRAMEWORK, OP_RANGE)) as handle:
            return [Range(**json.loads(line)) for line in handle if line.strip()]
    except (OSError, ValueError, TypeError):
        return []


def data_bytes(cann: str) -> int:
    """The size of CANN's raw data (host/data and device_*/data), what the real parse warns about."""
    total = 0
    for folder, _, files in os.walk(cann):
        if os.path.basename(folder) == "data":
            total += sum(os.path.getsize(os.path.join(folder, name)) for name in files)
    return total
