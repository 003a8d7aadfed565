"""The HTML report's data: each process's whole-run step times, downsampled to a rank x step grid.

Its own module because it is the one part of the page whose cost grows with the job (htmlreport.py
says what the page shows; htmlcharts.py draws this grid). The grid's rows are the processes and
its columns buckets of ``k`` consecutive steps from step 2, so any run fits the page:

- at most MAX_COLUMNS step columns: a longer run is downsampled into buckets of ``k`` steps and
  each column holds the *maximum* of its bucket, so that a one-step spike survives (the page says
  so, and how many steps a column holds);
- at most MAX_ROWS rows: past that, consecutive rows are merged the same way;
- the step-times files (steptimes.py) are read one at a time, so memory stays at one file's size.

For a heat map (more than LINE_ROWS rows) the buckets' maxima are taken on the float32's top 16
bits (``bucket_max_keys``: a few big-integer operations per round, no Python step per value),
about 3x faster than ``max`` over each slice: 1024 x 100,000 steps is about a second or two. Lines
keep each bucket's ``max`` in floats: at most 8 x 1000 points, exact.

It also reads the few fields of a process dict (report.py) that both the grid and the process
table show (``process_label``, ``median_s``, ``process_windows``), so that they read alike.
Standard library only; it imports no other module of the page.
"""

from __future__ import annotations

import array
import math
import os
import struct
import sys

from npuprof_launch.common import steptimes
from npuprof_launch.launcher import wording

#: The most step columns drawn; a longer run is downsampled (the max of each bucket).
MAX_COLUMNS = 1000
#: The most rows drawn; past that, consecutive rows are merged (the max again).
MAX_ROWS = 2048
#: Up to this many rows the step times are lines; past it, a heat map.
LINE_ROWS = 8


class Grid:
    """Rows (processes, or merged runs of them) by columns (buckets of ``k`` steps from step 2)."""

    def __init__(self, heat: bool) -> None:
        #: A heat map keeps each column's maximum as its float32's top 16 bits (``bucket_max_keys``);
        #: lines keep it as the float itself.
        self.heat = heat
        self.labels: list[str] = []
        self.slow: list[bool] = []
        self.medians: list[float | None] = []
        #: Per row, the maximum of each column's steps: seconds (lines) or keys (heat map); a short
        #: row has fewer columns; 0: no step.
        self.values: list[list] = []
        #: Per row, its windows: (first_step, last_step, complete).
        self.windows: list[list[tuple[int, int, bool]]] = []
        self.k = 1
        self.columns = 0
        self.first = 2
        self.last = 1
        self.merged = 1
        #: The smallest and the largest column value, in seconds (and as keys, for a heat map).
        self.lo = self.hi = 0.0
        self.lo_key = self.hi_key = 0

    @property
    def steps(self) -> int:
        return self.last - self.first + 1


def read(processes: list[dict], out: str) -> Grid:
    """The grid of these processes' step times (their files under ``out``), rows in the processes' order."""
    merged = max(1, math.ceil(len(processes) / MAX_ROWS))
    grid = Grid(heat=math.ceil(len(processes) / merged) > LINE_ROWS)
    grid.merged = merged
    paths = [os.path.join(out, p["step_times"]) if p.get("step_times") else None for p in processes]
    lengths = [_length(path) for path in paths]
    longest = max(lengths, default=0)
    if longest:
        grid.k = math.ceil(longest / MAX_COLUMNS)
        grid.columns = math.ceil(longest / grid.k)
        grid.last = grid.first + longest - 1
    lo, hi = math.inf, 0
    for start in range(0, len(processes), grid.merged):
        members = processes[start : start + grid.merged]
        values: list = []
        for offset in range(len(members)):
            path = paths[start + offset]
            if path is None or not lengths[start + offset]:
                continue
            durations = steptimes.read(path)
            if grid.heat:
                row: list[int] | list[float] = bucket_max_keys(_little_endian(durations), grid.k)
            else:
                row = _bucket_max(durations, grid.k)
            values = row if not values else _elementwise_max(values, row)
        usable = _usable(values, INF_KEY if grid.heat else math.inf)
        if usable:
            lo, hi = min(lo, min(usable)), max(hi, max(usable))
        grid.values.append(values)
        grid.labels.append(_row_label(members))
        grid.slow.append(any(p.get("slowest_rank") for p in members))
        medians = [m for m in (median_s(p) for p in members) if m]
        grid.medians.append(max(medians) if medians else None)
        grid.windows.append(sorted({w for p in members for w in process_windows(p, by_process=True)}))
    if hi:
        if grid.heat:
            grid.lo_key, grid.hi_key = int(lo), int(hi)  # a heat map's values are keys (whole numbers)
            grid.lo, grid.hi = key_value(grid.lo_key), key_value(grid.hi_key)
        else:
            grid.lo, grid.hi = lo, hi
    return grid


def _usable(values: list, infinite) -> list:
    """The values that can be scaled: above 0, below infinity (most rows have no other)."""
    if 0 in values:
        values = list(filter(None, values))
    if values and max(values) >= infinite or min(values, default=1) < 0:
        values = [v for v in values if 0 < v < infinite]
    return values


def _length(path: str | None) -> int:
    if not path:
        return 0
    try:
        return os.path.getsize(path) // 4
    except OSError:
        return 0


def _bucket_max(durations, k: int) -> list[float]:
    """The maximum of each run of ``k`` steps: a spike of one step survives the downsampling."""
    if k == 1:
        return durations.tolist()
    return [max(durations[i : i + k]) for i in range(0, len(durations), k)]


#: The key of +inf: a key at or above it (inf, NaN) is no time to scale by.
INF_KEY = 0x7F80
_GUARDS: dict[int, int] = {}
#: Clears the sign bit of a float32's top byte (a negative time counts as its size).
_NO_SIGN = bytes(b & 0x7F for b in range(256))


def bucket_max_keys(raw: bytes, k: int) -> list[int]:
    """The maximum of each run of ``k`` steps, as the top 16 bits of the float32 (its "key").

    For floats of one sign the bits order like the values, so the key of the maximum is the
    maximum of the keys (to 1/128 of an octave, 0.5 %: finer than a colour). The maximum is taken
    without a Python step per value: the keys are laid out column by column (bytes slicing), so
    that run ``i`` of every bucket is one stripe of ``cols`` 16-bit lanes of one big integer; then
    halves of the stripes are compared lane by lane (SWAR: a guard bit per lane shows which is
    larger, with no borrow across lanes) until one stripe is left. Each round is a few big-integer
    operations, in C: about 3x faster than ``max`` over each bucket's slice.
    """
    n = len(raw) // 4
    if not n:
        return []
    cols = -(-n // k)
    raw = raw + bytes(4 * (cols * k - n))  # the last bucket, padded with zeros (no step: never the max)
    step = 4 * k
    lanes = bytearray(2 * cols * k)
    lanes[0::2] = b"".join([raw[4 * i + 2 :: step] for i in range(k)])
    lanes[1::2] = b"".join([raw[4 * i + 3 :: step] for i in range(k)]).translate(_NO_SIGN)
    whole = int.from_bytes(lanes, "little")
    count, stripe_bits = k, cols * 16
    while count > 1:
        half = (count + 1) // 2
        a = whole & ((1 << (half * stripe_bits)) - 1)
        b = whole >> (half * stripe_bits)  # one stripe fewer when count is odd: zeros
        guards = _GUARDS.get(half * cols)
        if guards is None:
            guards = _GUARDS[half * cols] = int.from_bytes(b"\x00\x80" * (half * cols), "little")
        a_wins = (((a | guards) - b) & guards) >> 15  # 1 in each lane where a >= b
        whole = b ^ ((a ^ b) & (a_wins * 0xFFFF))
        count = half
    keys = array.array("H")
    keys.frombytes(whole.to_bytes(2 * cols, "little"))
    if sys.byteorder != "little":
        keys.byteswap()
    return keys.tolist()


def _little_endian(durations) -> bytes:
    """The step times as the file holds them: little-endian float32."""
    if sys.byteorder == "little":
        return durations.tobytes()
    swapped = array.array("f", durations)
    swapped.byteswap()
    return swapped.tobytes()


def key_value(key: int) -> float:
    """The smallest float32 with this key (its top 16 bits)."""
    return struct.unpack("<f", struct.pack("<I", key << 16))[0]


def _elementwise_max(a: list, b: list) -> list:
    longer, shorter = (a, b) if len(a) >= len(b) else (b, a)
    return [max(x, y) for x, y in zip(shorter, longer)] + longer[len(shorter) :]


def _row_label(members: list[dict]) -> str:
    if len(members) == 1:
        return process_label(members[0])
    ranks = [p["rank"] for p in members if p.get("rank") is not None]
    return wording.who(ranks) if ranks else f"{len(members)} processes"


# ---------------------------------------------------------------------------------------------
# A process's fields, as the grid and the table show them


def process_label(process: dict) -> str:
    """How the page names a process (``rank 3``, ``pid 12``, with its attempt and stage): one name in the charts
    and the table."""
    rank = process.get("rank")
    label = f"rank {rank}" if rank is not None else f"pid {process.get('pid')}"
    if process.get("attempt"):  # after a torchelastic restart: the same rank again, another process
        label += f" restart {process['attempt']}"
    return f"{label} stage {process['stage']}" if process.get("stage") else label


def median_s(process: dict) -> float | None:
    """Its median step time, or the mean where an older record has no median."""
    return process.get("median_step_s") or process.get("mean_step_s")


def process_windows(process: dict, *, by_process: bool = False) -> list[tuple[int, int, bool]]:
    """Its windows that began: (first_step, last_step, complete), as the table lists them (the job's
    step numbers) or, ``by_process``, as the charts mark them over its step times (this process's)."""
    found = []
    shift = int(process.get("step_offset") or 0) if by_process else 0
    for window in process.get("windows") or ():
        first = window.get("first_step")
        if first is None:
            continue
        last = window.get("last_step") or first
        found.append((int(first) - shift, int(last) - shift, bool(window.get("complete"))))
    return found
