"""The HTML report: ``npuprof_report.html`` in the output directory, the whole run on one page.

One static file that opens anywhere, with no network: the styles and the one small script are
inline, and a Content-Security-Policy meta tag (``default-src 'none'``, the script allowed by its
hash) forbids every load, so a copy of the directory on an offline cluster renders the same. The
trace links are relative, so the directory can be copied whole. Standard library only.

What it shows, from the report dict (report.py) and each process's step-times file
(steptimes.py): the headline and the step-time figures; the problems and the findings; step time
by rank over the whole run, with the profiled windows and the spikes marked; each rank's median
step time with the slow ranks marked; the spikes; the next commands; a table of the processes
with links to their traces, and how to open them.

The step axis is in the job's step numbers: the time of step ``s`` is the wall time between the
boundaries that end steps ``s - 1`` and ``s``, so step 1 has none and the axis starts at step 2.

Size and speed at any scale. At most MAX_COLUMNS step columns: a longer run is downsampled into
buckets of ``k`` consecutive steps and each column shows the *maximum* of its bucket, so that a
one-step spike survives (the page says so, and how many steps a column holds). At most MAX_ROWS
rows: past that, consecutive rows are merged the same way. The files are read one at a time, so
memory stays at one file's size.

Two drawings, chosen by the number of rows:

- up to LINE_ROWS (8) rows: lines, as inline SVG written here (a log time axis, the windows as
  shaded bands, the spikes as markers, the slow ranks in red). At most 8 x 1000 points: small,
  exact (each bucket's ``max`` in floats), and it needs no script at all;
- more rows: a rank x step heat map on a ``<canvas>``. The cells travel in a compact data block,
  one byte each (0: no step there; 1-255: the step time on a log scale), base64 in an
  ``application/json`` script element; the inline script turns them into one pixel per cell (an
  ImageData), scales that up unsmoothed, and draws the axes, the window outlines, the spike marks,
  the colour legend and, aligned with the rows, each rank's median as a bar; hovering shows the
  values. 1024 ranks x 1000 columns is 1 MB of cells (1.4 MB of base64) and draws in a few
  hundred milliseconds at most; as SVG it would be a million elements. The colours span the
  middle 99 % of the cells (SCALE_CLIP at each end, at least SCALE_RATIO wide), so that one spike
  does not flatten a 1.3x slow rank into the background; a cell beyond is drawn at the end of the
  scale, and the legend says so (>=). The buckets' maxima are taken on the float32's top 16 bits
  (``_bucket_max_keys``: a few big-integer operations per round, no Python step per value), about
  3x faster than ``max`` over each slice: 1024 x 100,000 steps is about a second or two.

Past TABLE_ROWS processes, the table shows the first few and the flagged ones (slow, errors,
windows missing) and keeps all of them in a closed ``<details>``, which a browser lays out only
when it is opened: a thousand rows would otherwise be most of the page's time to show.

Everything that comes from the job (paths, names, commands, messages) is HTML-escaped, and the
JSON block has ``<`` escaped, so nothing in it can end the element.
"""

from __future__ import annotations

import array
import base64
import collections
import datetime
import hashlib
import html
import json
import math
import os
import shlex
import struct
import sys
import urllib.parse

from npuprof_launch.common import names, stepstats, steptimes
from npuprof_launch.launcher import jobview

FILE_NAME = "npuprof_report.html"
#: The most step columns drawn; a longer run is downsampled (the max of each bucket).
MAX_COLUMNS = 1000
#: The most rows drawn; past that, consecutive rows are merged (the max again).
MAX_ROWS = 2048
#: Up to this many rows the step times are lines; past it, a heat map.
LINE_ROWS = 8
#: The heat map's colours span the cells but this share at each end (drawn at the scale's end), so
#: that a few spikes do not flatten the rest; and at least this ratio of times.
SCALE_CLIP = 0.005
SCALE_RATIO = 1.5
#: Operators shown per process in the table.
TABLE_OPERATORS = 3
#: Up to this many processes the table shows them all; past it, the first ROWS_FIRST and the
#: flagged ones, and all of them in a closed <details>.
TABLE_ROWS = 16
ROWS_FIRST = 8

PERFETTO = "https://ui.perfetto.dev"
#: Colours: a line per rank (red is kept for the slow ranks), and the marks.
LINE_COLOURS = ("#4e79a7", "#59a14f", "#76b7b2", "#b07aa1", "#9c755f", "#2f4b7c", "#edc948", "#7f7f7f")
SLOW_COLOUR = "#d62728"
WINDOW_COLOUR = "#c2187a"
SPIKE_COLOUR = "#f28e2b"
#: The heat map's colour scale (viridis, as matplotlib defines it), from the fastest to the slowest.
SCALE_STOPS = ("#440154", "#472c7a", "#3b518b", "#2c718e", "#21908d", "#27ad81", "#5cc863", "#aadc32", "#fde725")
NO_DATA_COLOUR = "#e9e9ee"


def render(report: dict) -> str:
    """The HTML text of the report; the step times are read from ``report["output_dir"]``."""
    out = report.get("output_dir") or "."
    processes = report.get("processes") or []
    job = report.get("job") or {}
    grid = _grid(processes, out)
    parts = [
        _head(report, job),
        _header(report, job),
        _problems_and_findings(report),
        _step_chart(grid, job),
        _medians(grid, job),
        _spikes(job),
        _next_commands(job),
        _process_table(processes, report, job),
        _how_to_open(processes, out),
        f"<footer>Written by npuprof-run from {_e(out)}. Standard library only; no network: "
        f"the page loads nothing.</footer>\n</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n",
    ]
    return "".join(parts)


def write(report: dict) -> str:
    """Write ``OUTPUT_DIR/npuprof_report.html`` atomically (a temporary file, then ``os.replace``),
    created with mode 0o664 less the umask; returns its path."""
    path = os.path.join(report.get("output_dir") or ".", FILE_NAME)
    text = render(report)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o664)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


# ---------------------------------------------------------------------------------------------
# The step times, downsampled


class _Grid:
    """Rows (processes, or merged runs of them) by columns (buckets of ``k`` steps from step 2)."""

    def __init__(self, heat: bool) -> None:
        #: A heat map keeps each column's maximum as its float32's top 16 bits (``_bucket_max_keys``);
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


def _grid(processes: list[dict], out: str) -> _Grid:
    merged = max(1, math.ceil(len(processes) / MAX_ROWS))
    grid = _Grid(heat=math.ceil(len(processes) / merged) > LINE_ROWS)
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
            if not lengths[start + offset]:
                continue
            durations = steptimes.read(paths[start + offset])
            if grid.heat:
                row = _bucket_max_keys(_little_endian(durations), grid.k)
            else:
                row = _bucket_max(durations, grid.k)
            values = row if not values else _elementwise_max(values, row)
        usable = _usable(values, INF_KEY if grid.heat else math.inf)
        if usable:
            lo, hi = min(lo, min(usable)), max(hi, max(usable))
        grid.values.append(values)
        grid.labels.append(_row_label(members))
        grid.slow.append(any(p.get("slowest_rank") for p in members))
        medians = [m for m in (_median_s(p) for p in members) if m]
        grid.medians.append(max(medians) if medians else None)
        grid.windows.append(sorted({w for p in members for w in _windows(p)}))
    if hi:
        if grid.heat:
            grid.lo_key, grid.hi_key = lo, hi
            grid.lo, grid.hi = _key_value(lo), _key_value(hi)
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


def _bucket_max_keys(raw: bytes, k: int) -> list[int]:
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


def _key_value(key: int) -> float:
    """The smallest float32 with this key (its top 16 bits)."""
    return struct.unpack("<f", struct.pack("<I", key << 16))[0]


def _elementwise_max(a: list, b: list) -> list:
    longer, shorter = (a, b) if len(a) >= len(b) else (b, a)
    return [max(x, y) for x, y in zip(shorter, longer)] + longer[len(shorter) :]


def _row_label(members: list[dict]) -> str:
    if len(members) == 1:
        return _process_label(members[0])
    ranks = [p["rank"] for p in members if p.get("rank") is not None]
    return jobview.who(ranks) if ranks else f"{len(members)} processes"


def _process_label(process: dict) -> str:
    rank = process.get("rank")
    label = f"rank {rank}" if rank is not None else f"pid {process.get('pid')}"
    return f"{label} stage {process['stage']}" if process.get("stage") else label


def _median_s(process: dict) -> float | None:
    return process.get("median_step_s") or process.get("mean_step_s")


def _windows(process: dict) -> list[tuple[int, int, bool]]:
    found = []
    for window in process.get("windows") or ():
        first = window.get("first_step")
        if first is None:
            continue
        last = window.get("last_step") or first
        found.append((int(first), int(last), bool(window.get("complete"))))
    return found


# ---------------------------------------------------------------------------------------------
# The page's parts


def _head(report: dict, job: dict) -> str:
    title = f"npuprof report: {_headline(report, job)}"
    policy = (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src '{SCRIPT_HASH}'; img-src data:; base-uri 'none'; form-action 'none'"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n"
    )


def _headline(report: dict, job: dict) -> str:
    processes = report.get("processes") or []
    recorded = [p for p in processes if p.get("windows")]
    text = _count(len(recorded), "process") + " profiled"
    if not processes:
        return text
    ranks = sorted({p["rank"] for p in processes if p.get("rank") is not None})
    hosts = _count(job.get("hosts") or 1, "host")
    where = f"{jobview.who(ranks)} on {hosts}" if ranks else hosts
    return f"{text} ({where}), {job.get('windows_completed', 0)} of {job.get('windows_planned', 0)} windows complete"


def _header(report: dict, job: dict) -> str:
    passed = report.get("passed")
    badge = (
        '<span class="badge ok">passed</span>'
        if passed
        else f'<span class="badge bad">{_count(len(report.get("problems") or []), "problem")}</span>'
    )
    run = report.get("run") or {}
    facts = [("output", f"<code>{_e(report.get('output_dir'))}</code>")]
    if run.get("command"):
        facts.append(("command", f"<code>{_e(shlex.join(str(a) for a in run['command']))}</code>"))
    when = []
    if run.get("started_ns"):
        started = datetime.datetime.fromtimestamp(run["started_ns"] / 1e9)
        when.append(f"started {started:%Y-%m-%d %H:%M:%S}")
        if run.get("ended_ns"):
            when.append(f"ran {_duration((run['ended_ns'] - run['started_ns']) / 1e9)}")
    if run.get("signal"):
        when.append(f"killed by signal {_e(run['signal'])}")
    elif run.get("status") is not None:
        when.append(f"exit status {_e(run['status'])}")
    if run.get("run_id"):
        when.append(f"run {_e(run['run_id'])}")
    if when:
        facts.append(("run", ", ".join(when)))
    rows = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in facts)
    step = job.get("step_time_s") or {}
    tiles = [
        ("ranks", _int(job.get("ranks"))),
        ("hosts", _int(job.get("hosts"))),
        ("steps", _int(job.get("steps"))),
        ("windows", f"{_int(job.get('windows_completed'))} / {_int(job.get('windows_planned'))}"),
        ("median step", _ms_unit(step.get("median"))),
        ("p90 of the ranks' medians", _ms_unit(step.get("p90"))),
        ("slowest step", _ms_unit(step.get("max"))),
    ]
    slow = [s["rank"] for s in job.get("slow_ranks") or () if s.get("rank") is not None]
    if slow:
        tiles.append(
            (
                "slow " + ("rank" if len(slow) == 1 else "ranks"),
                f'<span class="slowname">{_e(jobview.compact_ranks(slow))}</span>',
            )
        )
    if job.get("spikes"):
        tiles.append(("spikes (the worst)", _int(len(job["spikes"]))))
    tile_html = "".join(f'<div class="tile"><div class="v">{v}</div><div class="k">{k}</div></div>' for k, v in tiles)
    return (
        f'<header><h1>npuprof report {badge}</h1><p class="headline">{_e(_headline(report, job))}</p>'
        f'<table class="facts">{rows}</table><div class="tiles">{tile_html}</div></header>\n'
    )


def _problems_and_findings(report: dict) -> str:
    problems = report.get("problems") or []
    findings = report.get("findings") or []
    parts = ['<section id="verdict"><h2>Problems and findings</h2>']
    if problems:
        items = "".join(f"<li>{_e(p)}</li>" for p in problems)
        parts.append(f'<div class="box bad"><h3>{_count(len(problems), "problem")}</h3><ul>{items}</ul></div>')
    else:
        parts.append(
            '<div class="box ok"><h3>No problems</h3><p>Every window completed and every trace parses.</p></div>'
        )
    if findings:
        items = "".join(f"<li>{_e(f)}</li>" for f in findings)
        parts.append(f'<div class="box note"><h3>Findings</h3><ul>{items}</ul></div>')
    elif report.get("processes"):
        parts.append('<div class="box"><h3>Findings</h3><p>No slow rank and no spike stood out.</p></div>')
    for name in report.get("replaced") or ():
        parts.append(f"<p>{_e(name)} replaced itself with os.exec and counted on there.</p>")
    if report.get("idle_processes"):
        parts.append(f"<p>{_count(report['idle_processes'], 'other process')} imported torch but never stepped.</p>")
    parts.append("</section>\n")
    return "".join(parts)


def _step_chart(grid: _Grid, job: dict) -> str:
    head = '<section id="steps"><h2>Step time by rank, whole run</h2>'
    if not grid.columns or not grid.hi:
        return (
            f"{head}<p>No step times were recorded (no process reached a second step, or its records come from "
            "an older npuprof that kept none).</p></section>\n"
        )
    rows = len(grid.values)
    what = (
        f"{_count(rows, 'row')}, {grid.steps:,} steps (steps {grid.first:,} to {grid.last:,})"
        if rows > LINE_ROWS
        else f"steps {grid.first:,} to {grid.last:,}"
    )
    notes = [
        f'<p class="caption">{what}. The time of step <i>s</i> is the wall time between the boundaries that end '
        "steps <i>s</i>&minus;1 and <i>s</i>, so step 1 has none: the axis starts at step 2.</p>"
    ]
    if grid.k > 1:
        notes.append(
            f'<p class="caption"><b>Downsampled:</b> {grid.steps:,} steps in {grid.columns:,} columns of {grid.k:,} '
            f"steps each; each column shows the <b>slowest</b> step of its {grid.k:,}, so a one-step spike stays "
            "visible (a column's typical time is lower than it shows).</p>"
        )
    if grid.merged > 1:
        notes.append(
            f'<p class="caption"><b>Rows merged:</b> each row holds {grid.merged} consecutive processes, showing '
            "the slowest of them in each column.</p>"
        )
    body = _lines_svg(grid, job) if rows <= LINE_ROWS else _heatmap(grid, job)
    return f"{head}{body}{''.join(notes)}</section>\n"


def _lines_svg(grid: _Grid, job: dict) -> str:
    width, height = 1200, 400
    ml, mr, mt, mb = 70, 110, 34, 50
    pw, ph = width - ml - mr, height - mt - mb
    span = grid.columns * grid.k
    x_lo, x_hi = grid.first - 0.5, grid.first + span - 0.5

    def x(step: float) -> float:
        return ml + (step - x_lo) / (x_hi - x_lo) * pw

    lo_ms, hi_ms = grid.lo * 1e3 / 1.2, grid.hi * 1e3 * 1.3
    if hi_ms / lo_ms < 2:
        centre = math.sqrt(lo_ms * hi_ms)
        lo_ms, hi_ms = centre / 1.5, centre * 1.5
    log_lo, log_hi = math.log(lo_ms), math.log(hi_ms)

    def y(ms: float) -> float:
        return mt + ph - (math.log(max(ms, lo_ms)) - log_lo) / (log_hi - log_lo) * ph

    svg = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="step time by rank">'
    ]
    # the windows, shaded, labelled above the plot
    bands: dict[tuple[int, int, bool], list[str]] = {}
    for label, windows in zip(grid.labels, grid.windows):
        for window in windows:
            bands.setdefault(window, []).append(label)
    for (first, last, complete), labels in sorted(bands.items()):
        x0, x1 = x(first - 0.5), x(last + 0.5)
        dash = "" if complete else ' stroke-dasharray="4 3"'
        who = "" if len(labels) == len(grid.labels) else f" ({', '.join(labels)})"
        title = f"profiled window: steps {first}-{last}{who}{'' if complete else ', incomplete'}"
        svg.append(
            f'<rect x="{x0:.1f}" y="{mt}" width="{max(x1 - x0, 2):.1f}" height="{ph}" fill="{WINDOW_COLOUR}" '
            f'fill-opacity="0.10" stroke="{WINDOW_COLOUR}" stroke-opacity="0.6"{dash}><title>{_e(title)}</title></rect>'
            f'<text x="{(x0 + x1) / 2:.1f}" y="{mt - 8}" class="mark" fill="{WINDOW_COLOUR}" text-anchor="middle">'
            f"window {first}-{last}{_e(who)}</text>"
        )
    # the axes and their grid lines
    for ms in _log_ticks(lo_ms, hi_ms):
        yy = y(ms)
        svg.append(
            f'<line x1="{ml}" x2="{ml + pw}" y1="{yy:.1f}" y2="{yy:.1f}" class="grid"/>'
            f'<text x="{ml - 8}" y="{yy + 4:.1f}" text-anchor="end" class="tick">{_tick_ms(ms)}</text>'
        )
    for step in _step_ticks(grid.first, grid.last, 14):
        xx = x(step)
        svg.append(
            f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{mt + ph}" y2="{mt + ph + 5}" class="axis"/>'
            f'<text x="{xx:.1f}" y="{mt + ph + 20}" text-anchor="middle" class="tick">{step:,}</text>'
        )
    per_point = f"; each point: the slowest of its {grid.k:,} steps" if grid.k > 1 else ""
    svg.append(
        f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" class="frame"/>'
        f'<text x="{ml + pw / 2}" y="{height - 8}" text-anchor="middle" class="label">'
        f"step (the job's step numbers{per_point})</text>"
        f'<text transform="translate(16 {mt + ph / 2}) rotate(-90)" text-anchor="middle" class="label">'
        "step time (ms, log scale)</text>"
    )
    median = (job.get("step_time_s") or {}).get("median")
    if median:
        yy = y(median * 1e3)
        svg.append(
            f'<line x1="{ml}" x2="{ml + pw}" y1="{yy:.1f}" y2="{yy:.1f}" class="median"/>'
            f'<text x="{ml + 6}" y="{yy - 5:.1f}" class="tick">job median '
            f"{_ms(median)} ms</text>"
        )
    # the lines, the slow ranks last (on top)
    order = sorted(range(len(grid.values)), key=lambda i: grid.slow[i])
    for index in order:
        values = grid.values[index]
        if not values:
            continue
        points = " ".join(
            f"{x(_column_step(grid, j)):.1f},{y(v * 1e3):.1f}" for j, v in enumerate(values) if v > 0 and v < math.inf
        )
        colour = SLOW_COLOUR if grid.slow[index] else LINE_COLOURS[index % len(LINE_COLOURS)]
        width_px = 3 if grid.slow[index] else 1.8
        label = grid.labels[index] + (" (slow)" if grid.slow[index] else "")
        svg.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="{width_px}" '
            f'stroke-linejoin="round" data-row="{_e(grid.labels[index])}"><title>{_e(label)}</title></polyline>'
        )
        if grid.slow[index]:
            last = max((j for j, v in enumerate(values) if 0 < v < math.inf), default=None)
            if last is not None:
                svg.append(
                    f'<text x="{x(_column_step(grid, last)) + 8:.1f}" y="{y(values[last] * 1e3) + 4:.1f}" '
                    f'class="mark" fill="{SLOW_COLOUR}">{_e(grid.labels[index])} (slow)</text>'
                )
        if len(values) <= 60:
            svg.extend(
                f'<circle cx="{x(_column_step(grid, j)):.1f}" cy="{y(v * 1e3):.1f}" r="2.6" fill="{colour}">'
                f"<title>{_e(grid.labels[index])}, step {_column_step(grid, j):g}: {_ms(v)} ms</title></circle>"
                for j, v in enumerate(values)
                if 0 < v < math.inf
            )
    # the spikes
    for spike in job.get("spikes") or ():
        xx, yy = x(spike["step"]), y(spike["step_s"] * 1e3)
        stage = f"stage {spike['stage']} " if spike.get("stage") else ""
        text = f"{stage}step {spike['step']:,}: {spike['vs_median']:.1f}x the median"
        anchor = "end" if xx > ml + pw * 0.8 else "start"
        dx = -10 if anchor == "end" else 10
        svg.append(
            f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{mt}" y2="{mt + ph}" stroke="{SPIKE_COLOUR}" '
            f'stroke-dasharray="3 3"/><circle cx="{xx:.1f}" cy="{yy:.1f}" r="6" fill="none" stroke="{SPIKE_COLOUR}" '
            f'stroke-width="2.5"/><text x="{xx + dx:.1f}" y="{yy + 4:.1f}" text-anchor="{anchor}" class="mark" '
            f'fill="#b35806">spike: {_e(text)}</text>'
        )
    svg.append("</svg>")
    legend = []
    for index, label in enumerate(grid.labels):
        if grid.slow[index]:
            legend.append(
                f'<span class="key slow"><i style="background:{SLOW_COLOUR};height:4px"></i>{_e(label)} (slow)</span>'
            )
        else:
            colour = LINE_COLOURS[index % len(LINE_COLOURS)]
            legend.append(f'<span class="key"><i style="background:{colour}"></i>{_e(label)}</span>')
    legend.append(
        f'<span class="key"><i style="background:{WINDOW_COLOUR};opacity:.35;height:12px"></i>profiled window</span>'
        f'<span class="key"><b style="color:{SPIKE_COLOUR}">&#9711;</b> spike</span>'
        '<span class="key"><i class="dashed"></i>job median</span>'
    )
    return f'<div class="scroll">{"".join(svg)}</div><div class="legend">{"".join(legend)}</div>'


def _column_step(grid: _Grid, column: int) -> float:
    """The middle step of a column, where its point is drawn."""
    first = grid.first + column * grid.k
    last = min(first + grid.k - 1, grid.last)
    return (first + last) / 2


def _heatmap(grid: _Grid, job: dict) -> str:
    rows = len(grid.values)
    row_px = max(1, min(22, 640 // rows))
    layout = {"ml": 110, "mt": 64, "pw": 1000, "ph": rows * row_px, "rh": row_px, "gap": 14, "mw": 100, "mr": 14}
    layout["w"] = layout["ml"] + layout["pw"] + layout["gap"] + layout["mw"] + layout["mr"]
    layout["h"] = layout["mt"] + layout["ph"] + 128
    lo_key, hi_key = _scale_keys(grid)
    lo, hi = _key_value(lo_key), _key_value(hi_key)
    codes = _key_codes(lo_key, hi_key)
    cells = bytearray(rows * grid.columns)
    for row, keys in enumerate(grid.values):
        base = row * grid.columns
        cells[base : base + len(keys)] = bytes(map(codes.__getitem__, keys))
    clip_lo, clip_hi = grid.lo_key < lo_key, grid.hi_key > hi_key
    ticks = [[0.0, ("\u2264 " if clip_lo else "") + _tick_ms(lo * 1e3)]]
    for ms in _log_ticks(lo * 1e3, hi * 1e3):
        where = math.log(ms / (lo * 1e3)) / math.log(hi / lo)
        if 0.1 < where < 0.9:
            ticks.append([round(where, 4), _tick_ms(ms)])
    ticks.append([1.0, ("\u2265 " if clip_hi else "") + _tick_ms(hi * 1e3)])
    data = {
        "layout": layout,
        "rows": grid.labels,
        "slow": [i for i, slow in enumerate(grid.slow) if slow],
        "medians": [round(m * 1e3, 3) if m else None for m in grid.medians],
        "jobMedian": round(((job.get("step_time_s") or {}).get("median") or 0) * 1e3, 3),
        "cols": grid.columns,
        "k": grid.k,
        "first": grid.first,
        "last": grid.last,
        "lo": lo * 1e3,
        "hi": hi * 1e3,
        "clipLo": clip_lo,
        "clipHi": clip_hi,
        "cells": base64.b64encode(bytes(cells)).decode("ascii"),
        "colours": [_rgb(c) for c in SCALE_STOPS],
        "noData": _rgb(NO_DATA_COLOUR),
        "windowColour": WINDOW_COLOUR,
        "spikeColour": SPIKE_COLOUR,
        "slowColour": SLOW_COLOUR,
        "windows": _window_rects(grid),
        "spikes": [
            [s["step"], s["vs_median"], jobview.who(s["ranks"]) if s.get("ranks") else ""]
            for s in job.get("spikes") or ()
        ],
        "stepTicks": _step_ticks(grid.first, grid.last, 10),
        "rowTicks": _row_ticks(rows, row_px, grid.slow),
        "scaleTicks": ticks,
        "downsampled": grid.k > 1,
    }
    block = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    slow_labels = ", ".join(_e(label) for label, slow in zip(grid.labels, grid.slow) if slow)
    fallback = f"Slow: {slow_labels}." if slow_labels else ""
    clipped = ""
    if clip_lo or clip_hi:
        clipped = (
            f" The colours span the middle {100 - 200 * SCALE_CLIP:g}% of the cells ({_tick_ms(lo * 1e3)} to "
            f"{_tick_ms(hi * 1e3)} ms), so that a few spikes do not flatten the rest: a cell beyond is drawn at the "
            f"end of the scale ({_tick_ms(grid.lo * 1e3)} to {_tick_ms(grid.hi * 1e3)} ms in all)."
        )
    return (
        f'<div class="scroll heat"><canvas id="heatmap" width="{layout["w"]}" height="{layout["h"]}" '
        f'aria-label="step time heat map, rank by step">The heat map needs JavaScript. {fallback}</canvas>'
        '<div id="tip" hidden></div></div>'
        f'<script type="application/json" id="npuprof-data">{block}</script>'
        '<p class="caption">Rows: ranks; columns: steps; colour: step time on a log scale (legend below the map; '
        f'grey: no step recorded).{clipped} <span style="color:{WINDOW_COLOUR}">Magenta</span>: the profiled windows '
        f'(dashed: incomplete). <span style="color:#b35806">Orange &#9660;</span>: the spikes. '
        f'<span style="color:{SLOW_COLOUR}">Red &#9654;</span>: the slow ranks. Right: each rank\'s median step. '
        "Hover for the values.</p>"
    )


def _scale_keys(grid: _Grid) -> tuple[int, int]:
    """The keys the colour scale spans: the cells' middle (1 - 2 SCALE_CLIP), at least SCALE_RATIO wide."""
    counts: collections.Counter = collections.Counter()
    for keys in grid.values:
        counts.update(keys)
    ordered = sorted((key, n) for key, n in counts.items() if 0 < key < INF_KEY)
    total = sum(n for _key, n in ordered)
    lo_key, hi_key = grid.lo_key, grid.hi_key
    seen = 0
    for key, n in ordered:
        if seen <= total * SCALE_CLIP:
            lo_key = key
        seen += n
        if seen >= total * (1 - SCALE_CLIP):
            hi_key = key
            break
    if hi_key <= lo_key:
        lo_key, hi_key = grid.lo_key, grid.hi_key
    while _key_value(hi_key) < _key_value(lo_key) * SCALE_RATIO and hi_key < INF_KEY - 1:
        hi_key += 1  # nearly uniform times: a narrow scale would paint noise as contrast
    return lo_key, hi_key


def _key_codes(lo_key: int, hi_key: int) -> list[int]:
    """Each key's cell byte: 0 for no step, 1-255 its time on a log scale from lo_key to hi_key (clamped)."""
    codes = [1] * (lo_key + 1) + [255] * (0x8000 - lo_key - 1)
    codes[0] = 0
    log_lo = math.log(_key_value(lo_key))
    scale = math.log(_key_value(hi_key)) - log_lo
    for key in range(lo_key + 1, hi_key):
        codes[key] = 1 + round(254 * (math.log(_key_value(key)) - log_lo) / scale)
    return codes


def _window_rects(grid: _Grid) -> list[list]:
    """[first_row, last_row, first_step, last_step, complete]: rows in a run that share a window, one rectangle."""
    runs: dict[tuple[int, int, bool], list[list[int]]] = {}
    for row, windows in enumerate(grid.windows):
        for window in windows:
            spans = runs.setdefault(window, [])
            if spans and spans[-1][1] == row - 1:
                spans[-1][1] = row
            else:
                spans.append([row, row])
    return [[a, b, first, last, complete] for (first, last, complete), spans in runs.items() for a, b in spans]


def _row_ticks(rows: int, row_px: int, slow: list[bool]) -> list[int]:
    """The rows labelled on the map's left: every n-th (at least 16 px apart), and never on a slow row's label."""
    every = next(n for n in _nice_counts() if n * row_px >= 16)
    slow_rows = [i for i, s in enumerate(slow) if s]
    ticks = []
    for row in range(0, rows, every):
        if all(abs(row - s) * row_px >= 14 for s in slow_rows):
            ticks.append(row)
    return ticks


def _nice_counts():
    magnitude = 1
    while True:
        for m in (1, 2, 5):
            yield m * magnitude
        magnitude *= 10


def _medians(grid: _Grid, job: dict) -> str:
    slow_ranks = job.get("slow_ranks") or []
    parts = ['<section id="medians"><h2>Median step time per rank</h2>']
    if slow_ranks:
        items = []
        for slow in slow_ranks:
            what = "the slowest" if slow.get("method") == "step_times" else "the one the others wait for"
            how = "by its step times" if slow.get("method") == "step_times" else "by its time in collectives"
            stage = f" in stage {_e(slow['stage'])}" if slow.get("stage") else ""
            items.append(
                f'<li><b class="slowname">rank {_e(slow.get("rank"))}</b> is {what}{stage} ({how}): '
                f"{_e(slow.get('evidence'))}</li>"
            )
        parts.append(f'<ul class="slowlist">{"".join(items)}</ul>')
        if any(s.get("method") == "collectives" for s in slow_ranks):
            parts.append(
                '<p class="caption">In lockstep (data parallel) every rank\'s step takes as long as the slowest '
                "one's, since the others wait for it inside the collective; so its median step time need not stand "
                "out. The traces tell instead: it is the one that waits least in its collectives.</p>"
            )
    else:
        parts.append("<p>No rank stands out.</p>")
    medians = [m for m in grid.medians if m]
    if len(grid.values) > LINE_ROWS:
        parts.append(
            '<p class="caption">The bars right of the heat map show each rank\'s median, aligned with its row.</p>'
        )
    elif medians:
        top = max(medians)
        rows = []
        for label, median, slow in zip(grid.labels, grid.medians, grid.slow):
            width = 100 * (median or 0) / top
            mark = ' <b class="slowname">slow</b>' if slow else ""
            rows.append(
                f'<tr class="{"slow" if slow else ""}"><th>{_e(label)}{mark}</th><td class="barcell">'
                f'<span class="bar" style="width:{width:.1f}%"></span></td><td class="num">{_ms(median)} ms</td></tr>'
            )
        parts.append(f'<table class="bars">{"".join(rows)}</table>')
        parts.append(
            '<p class="caption">The median of each process\'s step times over the whole run (the windows and the '
            "warm-up steps included).</p>"
        )
    parts.append("</section>\n")
    return "".join(parts)


def _spikes(job: dict) -> str:
    spikes = job.get("spikes") or []
    head = '<section id="spikes"><h2>Spikes</h2>'
    if not spikes:
        return (
            f"{head}<p>No step took {stepstats.SPIKE_RATIO:g}x its rank's median or more (the first "
            f"{stepstats.WARMUP_STEPS} timed steps and the profiled steps do not count).</p></section>\n"
        )
    rows = []
    ranks_total = job.get("ranks") or 0
    for spike in spikes:
        ranks = spike.get("ranks") or []
        if ranks and len(ranks) == ranks_total and len(ranks) > 1:
            where = f"all {len(ranks)} ranks"
        elif ranks:
            where = jobview.who(ranks)
        else:
            where = _count(spike.get("processes") or 0, "process")
        rows.append(
            f'<tr><td class="num">{spike["step"]:,}</td><td>{_e(where)}</td><td class="num">{_ms(spike["step_s"])}</td>'
            f'<td class="num">{spike["vs_median"]:.1f}x</td></tr>'
        )
    return (
        f'{head}<table class="grid narrow"><thead><tr><th class="num">step</th><th>where</th>'
        '<th class="num">slowest (ms)</th><th class="num">vs the rank\'s median</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table><p class="caption">A spike: a step '
        f"{stepstats.SPIKE_RATIO:g}x its rank's median or more "
        f"(and {stepstats.SPIKE_MIN_S * 1e3:g} ms longer); the worst "
        f"{jobview.SPIKES_SHOWN} are shown. In lockstep one rank's stall spreads to all.</p></section>\n"
    )


def _next_commands(job: dict) -> str:
    suggestions = job.get("suggestions") or []
    if not suggestions:
        return ""
    items = "".join(f"<li><pre><code>{_e(s)}</code></pre></li>" for s in suggestions)
    return (
        '<section id="next"><h2>Next</h2><p>To look closer: a window on the worst spike, and one on the slow rank.</p>'
        f'<ol class="commands">{items}</ol></section>\n'
    )


def _process_table(processes: list[dict], report: dict, job: dict) -> str:
    """A row per process. Past TABLE_ROWS rows: the first few and the flagged ones (slow, errors, windows
    missing), then all of them in a closed ``<details>``: a browser lays a closed one out only when opened,
    so a thousand rows cost the page nothing until then."""
    if not processes:
        return '<section id="processes"><h2>Processes</h2><p>No process made a record.</p></section>\n'
    out = report.get("output_dir") or "."
    rows = [_process_row(process, out) for process in processes]
    head = '<section id="processes"><h2>Processes</h2>'
    if len(rows) <= TABLE_ROWS:
        return f"{head}{_table(rows)}</section>\n"
    shown = [row for index, (row, p) in enumerate(zip(rows, processes)) if index < ROWS_FIRST or _flagged(p)]
    flagged = len(shown) - min(ROWS_FIRST, len(rows))
    what = f"The first {ROWS_FIRST}"
    if flagged:
        what += f" and the {_count(flagged, 'flagged one')} (slow, errors, windows missing)"
    return (
        f'{head}<p class="caption">{what}; all {len(rows):,} below.</p>{_table(shown)}'
        f'<details class="all"><summary>All {len(rows):,} processes</summary>{_table(rows, tall=True)}</details>'
        "</section>\n"
    )


def _flagged(process: dict) -> bool:
    incomplete = (process.get("windows_completed") or 0) < (process.get("windows_planned") or 0)
    return bool(process.get("slowest_rank") or process.get("errors") or process.get("ended_note") or incomplete)


def _table(rows: list[str], tall: bool = False) -> str:
    return (
        f'<div class="tablewrap{" tall" if tall else ""}"><table class="grid procs"><thead><tr>'
        '<th>rank</th><th>host</th><th class="num">pid</th><th>backend</th><th class="num">steps</th><th>windows</th>'
        '<th class="num">median step (ms)</th>'
        f"<th>top operators (self time in the windows)</th><th>traces</th></tr></thead><tbody>{''.join(rows)}"
        "</tbody></table></div>"
    )


def _process_row(process: dict, out: str) -> str:
    slow = process.get("slowest_rank")
    windows = f"{process.get('windows_completed') or 0}/{process.get('windows_planned') or 0}"
    spans = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b, _complete in _windows(process))
    operators = "".join(
        f'<li><span class="op">{_e(op.get("name"))}</span> {_ms((op.get("self_us") or 0) / 1e6)} ms</li>'
        for op in (process.get("top_operators") or [])[:TABLE_OPERATORS]
    )
    notes = [f'<span class="err">{_e(error)}</span>' for error in process.get("errors") or ()]
    if process.get("ended_note"):
        notes.append(_e(process["ended_note"]))
    notes.extend(_e(warning) for warning in process.get("warnings") or ())
    note_html = (
        f"<details><summary>{_count(len(notes), 'note')}</summary>{'<br>'.join(notes)}</details>" if notes else ""
    )
    return (
        f'<tr class="{"slow" if slow else ""}"><td>{_e(_process_label(process))}'
        f"{' <b class=slowname>slow</b>' if slow else ''}</td>"
        f'<td>{_e(process.get("host"))}</td><td class="num">{_e(process.get("pid"))}</td>'
        f'<td>{_e(process.get("backend") or "-")}</td><td class="num">{_int(process.get("steps"))}</td>'
        f'<td class="nowrap">{windows}{"<br>steps " + _e(spans) if spans else ""}</td>'
        f'<td class="num">{_ms(_median_s(process))}</td><td><ul class="ops">{operators}</ul></td>'
        f"<td>{_trace_links(process, out)}{note_html}</td></tr>"
    )


def _trace_links(process: dict, out: str) -> str:
    listed: list[str] = []
    parts = []
    for window in process.get("windows") or ():
        traces = window.get("traces") or []
        if not traces:
            continue
        first, last = window.get("first_step"), window.get("last_step") or window.get("first_step")
        steps = f"steps {first}-{last}" if first != last else f"step {first}"
        links = " ".join(_link(t, out) for t in traces)
        partial = "" if window.get("complete") else " (partial)"
        parts.append(f'<div class="trace"><span class="steps">{_e(steps)}{partial}:</span> {links}</div>')
        listed.extend(traces)
    for trace in process.get("traces") or ():
        if trace not in listed:
            parts.append(f'<div class="trace">{_link(trace, out)}</div>')
    return "".join(parts) or '<span class="muted">(none)</span>'


def _link(path: str, out: str) -> str:
    """A link relative to the output directory (where the page is), so that the directory can be copied."""
    rel = os.path.relpath(path, out) if os.path.isabs(path) else path
    href = urllib.parse.quote(rel.replace(os.sep, "/"))
    kind = " (MindStudio Insight)" if rel.rstrip("/").endswith(names.ASCEND_DIR_SUFFIX) else ""
    return f'<a href="{_e(href)}" title="{_e(rel)}">{_e(os.path.basename(rel.rstrip("/")))}</a>{kind}'


def _how_to_open(processes: list[dict], out: str) -> str:
    backends = {p.get("backend") for p in processes if p.get("traces")}
    items = []
    if "npu" not in backends or "torch" in backends:
        items.append(
            f"<li><b>A torch trace</b> (<code>.pt.trace.json</code> or <code>.pt.trace.json.gz</code>): open "
            f'<a href="{PERFETTO}">{PERFETTO}</a>, choose <b>Open trace file</b> and pick the file (about 2 GB at most '
            "in the browser). The links above point at the files beside this page: save or copy them from there. "
            "All ranks side by side: Holistic Trace Analysis (README, 'Output').</li>"
        )
    if "npu" in backends:
        items.append(
            "<li><b>NPU data</b> (a <code>*_ascend_pt</code> directory): MindStudio Insight, <b>File &gt; Open</b>, "
            f"the directory. All ranks: <code>msprof-analyze cluster -d {_e(out)}</code>.</li>"
        )
    items.append(
        f"<li>The same report as text: <code>npuprof-run --check {_e(shlex.quote(out))}</code> "
        "(<code>--json</code> for the data).</li>"
    )
    return f'<section id="open"><h2>How to open the traces</h2><ul>{"".join(items)}</ul></section>\n'


# ---------------------------------------------------------------------------------------------
# Numbers and ticks


def _e(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _count(n: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith("process") else "s")
    return f"1 {noun}" if n == 1 else f"{n:,} {plural}"


def _int(value) -> str:
    return f"{value:,}" if isinstance(value, int) else "-"


def _ms(seconds) -> str:
    if not seconds:
        return "-"
    ms = seconds * 1e3
    if ms >= 1000:
        return f"{ms:,.0f}"
    return f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def _ms_unit(seconds) -> str:
    text = _ms(seconds)
    return text if text == "-" else f"{text} ms"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


def _tick_ms(ms: float) -> str:
    if ms >= 100:
        return f"{ms:,.0f}"
    return f"{ms:.3g}"


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Round values between ``lo`` and ``hi`` for a log axis: the coarsest set that gives 4 or more."""
    if not (0 < lo < hi):
        return [lo] if lo > 0 else []
    for mantissas in ((1,), (1, 2, 5), (1, 2, 3, 5), (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = []
        for exponent in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
            for m in mantissas:
                value = m * 10.0**exponent
                if lo <= value <= hi:
                    ticks.append(float(f"{value:.6g}"))
        if len(ticks) >= 4 or (len(ticks) >= 2 and len(mantissas) > 4):
            return ticks[:: max(1, len(ticks) // 12)]
    step = _nice_step((hi - lo) / 4)
    return [float(f"{v:.6g}") for v in _arange(math.ceil(lo / step) * step, hi, step)]


def _step_ticks(first: int, last: int, most: int) -> list[int]:
    """Round step numbers between ``first`` and ``last``, at most ``most`` of them."""
    if last <= first:
        return [first]
    every = next(n for n in _nice_counts() if (last - first) / n <= most - 1)
    start = max(first, math.ceil(first / every) * every)
    return list(range(start, last + 1, every))


def _nice_step(raw: float) -> float:
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)


def _arange(start: float, stop: float, step: float) -> list[float]:
    values = []
    value = start
    while value <= stop + step * 1e-9:
        values.append(value)
        value += step
    return values


def _rgb(colour: str) -> list[int]:
    return [int(colour[i : i + 2], 16) for i in (1, 3, 5)]


# ---------------------------------------------------------------------------------------------
# The page's style and script (inline: the page loads nothing)

STYLE = """
:root{--fg:#1d2330;--muted:#5f6b7a;--line:#d9dee5;--bg:#f6f7f9;--slow:#d62728;--win:#c2187a}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif}
main{max-width:1340px;margin:0 auto;padding:20px 24px 40px}
header,section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px 20px;margin:0 0 16px}
h1{font-size:24px;margin:2px 0 4px;display:flex;align-items:center;gap:12px}
h2{font-size:17px;margin:0 0 10px}
h3{font-size:14px;margin:0 0 4px}
.headline{font-size:16px;margin:0 0 8px}
.badge{font-size:13px;font-weight:600;padding:2px 10px;border-radius:12px;color:#fff}
.badge.ok{background:#2e7d32}.badge.bad{background:var(--slow)}
.facts th{text-align:left;color:var(--muted);font-weight:500;padding:1px 12px 1px 0;vertical-align:top}
.facts td{padding:1px 0;word-break:break-all}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.tiles{display:flex;flex-wrap:wrap;gap:10px;margin-top:12px}
.tile{border:1px solid var(--line);border-radius:6px;padding:6px 14px;min-width:110px}
.tile .v{font-size:19px;font-weight:600}.tile .k{color:var(--muted);font-size:12px}
.box{border-left:4px solid var(--line);padding:6px 12px;margin:0 0 10px;background:#fafbfc}
.box.bad{border-color:var(--slow);background:#fdf1f1}.box.ok{border-color:#2e7d32;background:#f1f8f2}
.box.note{border-color:#f28e2b;background:#fef7ef}
.box ul{margin:2px 0;padding-left:20px}.box p{margin:2px 0}
.caption{color:var(--muted);font-size:13px;margin:6px 0}
.scroll{overflow-x:auto}
.heat{position:relative}
svg.chart{display:block;max-width:100%;height:auto;font-family:inherit}
svg .grid{stroke:#e6e9ee}svg .axis{stroke:#8a94a3}svg .frame{stroke:#b9c0ca}
svg .median{stroke:#5f6b7a;stroke-dasharray:6 4}
svg .tick{font-size:12px;fill:#4a5563}svg .label{font-size:13px;fill:#1d2330}
svg .mark{font-size:12.5px;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin:6px 0 0 70px;font-size:13px}
.key i{display:inline-block;width:22px;height:3px;vertical-align:middle;margin-right:6px}
.key i.dashed{border-top:2px dashed #5f6b7a;height:0}
.key.slow,.slowname{color:var(--slow);font-weight:600}
.slowlist{margin:0 0 8px;padding-left:20px}
table.bars{border-collapse:collapse;width:100%;max-width:900px}
table.bars th{text-align:left;font-weight:500;padding:3px 12px 3px 0;white-space:nowrap;width:1%}
table.bars tr.slow th{color:var(--slow)}
.barcell{width:100%;padding:3px 0}
.bar{display:block;height:14px;background:#8a99a8;border-radius:2px}
tr.slow .bar{background:var(--slow)}
td.num,.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap;padding-left:12px}
table.grid{border-collapse:collapse;width:100%}
table.grid th,table.grid td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
table.grid thead th{position:sticky;top:0;background:#f0f2f5;font-weight:600;font-size:13px}
table.grid tr.slow td{background:#fdf1f1}
table.grid .num{text-align:right}
table.grid.narrow{width:auto;min-width:560px}.nowrap{white-space:nowrap}
.tablewrap.tall{max-height:640px;overflow:auto;border:1px solid var(--line)}
details.all{margin-top:10px}details.all>summary{cursor:pointer;font-weight:600;margin-bottom:6px}
ul.ops{margin:0;padding:0;list-style:none;font-size:12.5px}
.op{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all}
.trace{font-size:12.5px;word-break:break-all}.trace .steps{color:var(--muted)}
.err{color:var(--slow)}.muted{color:var(--muted)}
ol.commands{padding-left:20px}ol.commands pre{margin:4px 0;padding:8px 10px;background:#f0f2f5;border-radius:4px;
white-space:pre-wrap;word-break:break-all;user-select:all}
#tip{position:absolute;pointer-events:none;background:rgba(20,24,32,.92);color:#fff;font-size:12px;
padding:4px 8px;border-radius:4px;white-space:nowrap}
footer{color:var(--muted);font-size:12px;text-align:center}
a{color:#1f5fa8}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var started = performance.now();
  var block = document.getElementById("npuprof-data");
  if (block) { heatmap(JSON.parse(block.textContent)); }
  var root = document.documentElement;
  root.setAttribute("data-render-ms", (performance.now() - started).toFixed(1));
  root.setAttribute("data-rendered", "1");

  function heatmap(d) {
    var L = d.layout, rows = d.rows.length, cols = d.cols;
    var canvas = document.getElementById("heatmap");
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(L.w * dpr); canvas.height = Math.round(L.h * dpr);
    canvas.style.width = L.w + "px"; canvas.style.height = L.h + "px";
    var ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, L.w, L.h);
    var lut = new Uint8ClampedArray(256 * 3), n = d.colours.length;
    lut.set(d.noData, 0);
    for (var q = 1; q < 256; q++) {
      var t = (q - 1) / 254 * (n - 1), i = Math.min(Math.floor(t), n - 2), f = t - i;
      for (var c = 0; c < 3; c++) { lut[q * 3 + c] = d.colours[i][c] * (1 - f) + d.colours[i + 1][c] * f; }
    }
    var bin = atob(d.cells), cells = new Uint8Array(bin.length);
    var image = ctx.createImageData(cols, rows), px = image.data, filled = 0;
    for (var k = 0; k < bin.length; k++) {
      var v = bin.charCodeAt(k); cells[k] = v; if (v) { filled++; }
      var o = k * 4, l = v * 3;
      px[o] = lut[l]; px[o + 1] = lut[l + 1]; px[o + 2] = lut[l + 2]; px[o + 3] = 255;
    }
    var off = document.createElement("canvas");
    off.width = cols; off.height = rows;
    off.getContext("2d").putImageData(image, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, L.ml, L.mt, L.pw, L.ph);
    ctx.strokeStyle = "#b9c0ca"; ctx.lineWidth = 1;
    ctx.strokeRect(L.ml - 0.5, L.mt - 0.5, L.pw + 1, L.ph + 1);
    var span = cols * d.k;
    function x(step) { return L.ml + (step - d.first) / span * L.pw; }
    var slow = {};
    d.slow.forEach(function (r) { slow[r] = true; });
    // the rows' labels, the slow ranks' in red with a marker
    ctx.font = "12px system-ui, sans-serif"; ctx.textAlign = "right"; ctx.textBaseline = "middle";
    ctx.fillStyle = "#4a5563";
    d.rowTicks.forEach(function (r) { ctx.fillText(d.rows[r], L.ml - 8, L.mt + (r + 0.5) * L.rh); });
    ctx.font = "bold 12px system-ui, sans-serif"; ctx.fillStyle = d.slowColour;
    d.slow.forEach(function (r) {
      var y = L.mt + (r + 0.5) * L.rh;
      ctx.fillText(d.rows[r], L.ml - 14, y);
      ctx.beginPath(); ctx.moveTo(L.ml - 11, y - 5); ctx.lineTo(L.ml - 2, y); ctx.lineTo(L.ml - 11, y + 5); ctx.fill();
      if (L.rh >= 6) {
        ctx.strokeStyle = d.slowColour; ctx.lineWidth = 1.5;
        ctx.strokeRect(L.ml - 0.5, L.mt + r * L.rh - 0.5, L.pw + 1, L.rh + 1);
      } else {  // a thin row: marks beside it, none over it
        ctx.fillRect(L.ml + L.pw + 1, y - 0.5, L.gap - 2, 1);
      }
    });
    // the steps' axis
    ctx.font = "12px system-ui, sans-serif"; ctx.fillStyle = "#4a5563"; ctx.textAlign = "center";
    ctx.textBaseline = "top"; ctx.strokeStyle = "#8a94a3";
    var bottom = L.mt + L.ph, half = L.pw / span / 2;
    d.stepTicks.forEach(function (s) {
      var xx = x(s) + half;
      ctx.beginPath(); ctx.moveTo(xx, bottom); ctx.lineTo(xx, bottom + 5); ctx.stroke();
      ctx.fillText(s.toLocaleString("en-US"), xx, bottom + 8);
    });
    ctx.fillStyle = "#1d2330"; ctx.font = "13px system-ui, sans-serif";
    ctx.fillText("step (the job's step numbers" + (d.downsampled ? "; each column: the slowest of its " +
      d.k.toLocaleString("en-US") + " steps)" : ")"), L.ml + L.pw / 2, bottom + 26);
    // the windows: a strip above the map, an outline on the rows that recorded them
    ctx.textAlign = "right"; ctx.textBaseline = "middle"; ctx.fillStyle = "#5f6b7a";
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillText("windows", L.ml - 8, L.mt - 11); ctx.fillText("spikes", L.ml - 8, L.mt - 30);
    var labelled = {}, labelEnd = -1;
    d.windows.forEach(function (w) {
      var x0 = x(w[2]), x1 = Math.max(x(w[3] + 1), x0 + 3), name = w[2] === w[3] ? "" + w[2] : w[2] + "-" + w[3];
      if (!labelled[name] && x0 > labelEnd) {
        labelled[name] = true;
        ctx.font = "bold 11px system-ui, sans-serif"; ctx.textAlign = "left"; ctx.fillStyle = d.windowColour;
        ctx.fillText(name, x1 + 4, L.mt - 11);
        labelEnd = x1 + 10 + ctx.measureText(name).width;
      }
      ctx.fillStyle = d.windowColour; ctx.globalAlpha = w[4] ? 1 : 0.5;
      ctx.fillRect(x0, L.mt - 15, x1 - x0, 8); ctx.globalAlpha = 1;
      ctx.strokeStyle = d.windowColour; ctx.lineWidth = 2; ctx.setLineDash(w[4] ? [] : [4, 3]);
      ctx.strokeRect(x0 - 1, L.mt + w[0] * L.rh - 1, x1 - x0 + 2, (w[1] - w[0] + 1) * L.rh + 2);
      ctx.setLineDash([]);
    });
    // the spikes: a marker above their column, labelled
    ctx.textAlign = "left"; ctx.textBaseline = "alphabetic"; ctx.font = "bold 12px system-ui, sans-serif";
    var taken = [];
    d.spikes.forEach(function (s) {
      var xx = x(s[0]) + half;
      ctx.fillStyle = d.spikeColour;
      ctx.beginPath(); ctx.moveTo(xx - 6, L.mt - 36); ctx.lineTo(xx + 6, L.mt - 36); ctx.lineTo(xx, L.mt - 25);
      ctx.fill();
      var text = "step " + s[0].toLocaleString("en-US") + ": " + s[1].toFixed(1) + "x" +
        (s[2] ? " (" + s[2] + ")" : "");
      var w = ctx.measureText(text).width, tx = Math.min(xx + 8, L.ml + L.pw - w), line = 0;
      while (taken.some(function (t) { return t[2] === line && tx < t[1] && tx + w > t[0]; })) { line++; }
      taken.push([tx, tx + w + 8, line]);
      ctx.fillStyle = "#b35806"; ctx.fillText(text, tx, L.mt - 40 - line * 14);
    });
    // each row's median, aligned with its row
    var mx = L.ml + L.pw + L.gap, top = 0;
    d.medians.forEach(function (m) { if (m && m > top) { top = m; } });
    if (top > 0) {
      d.medians.forEach(function (m, r) {
        if (!m) { return; }
        ctx.fillStyle = slow[r] ? d.slowColour : "#8a99a8";
        ctx.fillRect(mx, L.mt + r * L.rh + (L.rh > 3 ? 1 : 0), m / top * L.mw, Math.max(1, L.rh - (L.rh > 3 ? 2 : 0)));
      });
      if (d.jobMedian) {
        var jm = mx + d.jobMedian / top * L.mw;
        ctx.strokeStyle = "#1d2330"; ctx.setLineDash([4, 3]); ctx.lineWidth = 1;
        ctx.beginPath(); ctx.moveTo(jm, L.mt); ctx.lineTo(jm, bottom); ctx.stroke(); ctx.setLineDash([]);
      }
      ctx.fillStyle = "#1d2330"; ctx.font = "12px system-ui, sans-serif"; ctx.textAlign = "left";
      ctx.fillText("median step (ms)", mx, L.mt - 26);
      ctx.fillStyle = "#4a5563"; ctx.fillText("0", mx, L.mt - 8);
      ctx.textAlign = "right"; ctx.fillText(fmt(top), mx + L.mw, L.mt - 8);
    }
    // the colour scale
    var ly = bottom + 66, lw = 360, lx = L.ml;
    ctx.textAlign = "left"; ctx.textBaseline = "alphabetic"; ctx.fillStyle = "#1d2330";
    ctx.font = "13px system-ui, sans-serif";
    ctx.fillText("step time (ms, log scale" + (d.downsampled ? ", the slowest step of each column)" : ")"), lx, ly - 6);
    for (var p = 0; p < lw; p++) {
      var qq = 1 + Math.round(p / (lw - 1) * 254);
      ctx.fillStyle = "rgb(" + lut[qq * 3] + "," + lut[qq * 3 + 1] + "," + lut[qq * 3 + 2] + ")";
      ctx.fillRect(lx + p, ly, 1, 14);
    }
    ctx.strokeStyle = "#8a94a3"; ctx.strokeRect(lx - 0.5, ly - 0.5, lw + 1, 15);
    ctx.fillStyle = "#4a5563"; ctx.font = "12px system-ui, sans-serif"; ctx.textAlign = "center";
    ctx.textBaseline = "top";
    d.scaleTicks.forEach(function (t) {
      var xx = lx + t[0] * lw;
      ctx.beginPath(); ctx.moveTo(xx, ly + 14); ctx.lineTo(xx, ly + 19); ctx.stroke();
      ctx.textAlign = t[0] === 0 ? "left" : t[0] === 1 ? "right" : "center";
      ctx.fillText(t[1], xx, ly + 21);
    });
    var kx = lx + lw + 30;
    ctx.textAlign = "left"; ctx.textBaseline = "middle";
    ctx.fillStyle = "rgb(" + d.noData.join(",") + ")"; ctx.fillRect(kx, ly, 14, 14);
    ctx.strokeRect(kx - 0.5, ly - 0.5, 15, 15);
    ctx.fillStyle = "#1d2330"; ctx.fillText("no step recorded", kx + 20, ly + 7);
    kx += 140; ctx.strokeStyle = d.windowColour; ctx.lineWidth = 2; ctx.strokeRect(kx, ly + 1, 14, 12);
    ctx.fillText("profiled window", kx + 20, ly + 7);
    kx += 130; ctx.fillStyle = d.spikeColour;
    ctx.beginPath(); ctx.moveTo(kx, ly + 2); ctx.lineTo(kx + 12, ly + 2); ctx.lineTo(kx + 6, ly + 12); ctx.fill();
    ctx.fillStyle = "#1d2330"; ctx.fillText("spike", kx + 18, ly + 7);
    kx += 70; ctx.fillStyle = d.slowColour;
    ctx.beginPath(); ctx.moveTo(kx, ly + 2); ctx.lineTo(kx + 9, ly + 7); ctx.lineTo(kx, ly + 12); ctx.fill();
    ctx.fillText("slow rank", kx + 16, ly + 7);
    kx += 100; ctx.strokeStyle = "#1d2330"; ctx.setLineDash([4, 3]); ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(kx, ly + 7); ctx.lineTo(kx + 22, ly + 7); ctx.stroke(); ctx.setLineDash([]);
    ctx.fillStyle = "#1d2330"; ctx.fillText("job median (right)", kx + 28, ly + 7);
    canvas.setAttribute("data-cells", String(filled));
    canvas.setAttribute("data-rendered", "1");
    // hover: the values under the pointer
    var tip = document.getElementById("tip"), ratio = d.hi / d.lo;
    canvas.addEventListener("mousemove", function (e) {
      var box = canvas.getBoundingClientRect(), px0 = e.clientX - box.left, py = e.clientY - box.top;
      var r = Math.floor((py - L.mt) / L.rh), text = "";
      if (r >= 0 && r < rows && px0 >= L.ml && px0 < L.ml + L.pw) {
        var col = Math.floor((px0 - L.ml) / L.pw * cols), s0 = d.first + col * d.k;
        var s1 = Math.min(s0 + d.k - 1, d.last), v = cells[r * cols + col];
        var steps = s0 === s1 ? "step " + s0.toLocaleString("en-US") : "steps " + s0.toLocaleString("en-US") +
          "\u2013" + s1.toLocaleString("en-US");
        var about = v === 255 && d.clipHi ? "\u2265 " : v === 1 && d.clipLo ? "\u2264 " : "\u2248 ";
        text = d.rows[r] + ", " + steps + ": " + (v ? (d.k > 1 ? "slowest " : "") + about +
          fmt(d.lo * Math.pow(ratio, (v - 1) / 254)) + " ms" : "no step recorded");
      } else if (r >= 0 && r < rows && px0 >= mx && px0 <= mx + L.mw) {
        text = d.rows[r] + ": median " + (d.medians[r] ? fmt(d.medians[r]) + " ms" : "-") + (slow[r] ? " (slow)" : "");
      }
      if (!text) { tip.hidden = true; return; }
      tip.textContent = text; tip.hidden = false;
      tip.style.left = (canvas.offsetLeft + px0 + 14) + "px"; tip.style.top = (canvas.offsetTop + py + 12) + "px";
    });
    canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
  }

  function fmt(ms) {
    if (ms >= 1000) { return Math.round(ms).toLocaleString("en-US"); }
    return ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
  }
})();
"""

#: The Content-Security-Policy lets this one script run, and nothing else.
SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
