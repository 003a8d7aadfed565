"""The HTML report's charts: step time by rank over the whole run, and each rank's median.

Its own module because the drawings are most of the page's code and all of its arithmetic
(axes, ticks, colour scales); the sections of text are in htmlsections.py, the grid they draw in
htmlgrid.py. Two drawings, chosen by the number of rows:

- up to LINE_ROWS (8) rows: lines, as inline SVG written here (a log time axis, the windows as
  shaded bands, the spikes as markers, the slow ranks in red). At most 8 x 1000 points: small,
  exact (each bucket's ``max`` in floats), and it needs no script at all;
- more rows: a rank x step heat map on a ``<canvas>``. The cells travel in a compact data block,
  one byte each (0: no step there; 1-255: the step time on a log scale), base64 in an
  ``application/json`` script element; the page's script (page/report.js) turns them into one
  pixel per cell (an ImageData), scales that up unsmoothed, and draws the axes, the window
  outlines, the spike marks, the colour legend and, aligned with the rows, each rank's median as a
  bar; hovering shows the values. 1024 ranks x 1000 columns is 1 MB of cells (1.4 MB of base64)
  and draws in a few hundred milliseconds at most; as SVG it would be a million elements. The
  colours span the middle 99 % of the cells (SCALE_CLIP at each end, at least SCALE_RATIO wide),
  so that one spike does not flatten a 1.3x slow rank into the background; a cell beyond is drawn
  at the end of the scale, and the legend says so (>=).

The JSON block has ``<`` escaped, so nothing in it can end the element; every label from the job
is HTML-escaped (``esc``).
"""

from __future__ import annotations

import base64
import collections
import json
import math

from npuprof_launch.launcher import wording
from npuprof_launch.launcher.htmlgrid import INF_KEY, LINE_ROWS, Grid, key_value
from npuprof_launch.launcher.htmltext import esc, ms_text

count = wording.count

#: The heat map's colours span the cells but this share at each end (drawn at the scale's end), so
#: that a few spikes do not flatten the rest; and at least this ratio of times.
SCALE_CLIP = 0.005
SCALE_RATIO = 1.5
#: Colours: a line per rank (red is kept for the slow ranks), and the marks.
LINE_COLOURS = ("#4e79a7", "#59a14f", "#76b7b2", "#b07aa1", "#9c755f", "#2f4b7c", "#edc948", "#7f7f7f")
SLOW_COLOUR = "#d62728"
WINDOW_COLOUR = "#c2187a"
SPIKE_COLOUR = "#f28e2b"
TOOL_COLOUR = "#7f7f7f"
#: The heat map's colour scale (viridis, as matplotlib defines it), from the fastest to the slowest.
SCALE_STOPS = ("#440154", "#472c7a", "#3b518b", "#2c718e", "#21908d", "#27ad81", "#5cc863", "#aadc32", "#fde725")
NO_DATA_COLOUR = "#e9e9ee"


def step_chart(grid: Grid, job: dict, tool_spans: list[tuple[int, int]] | None = None) -> str:
    """The section of step time by rank: lines up to LINE_ROWS rows, a heat map past them, and what was
    downsampled. ``tool_spans``: the steps the tool worked in, marked on the lines (the figures above
    leave them out, so the chart says which they are)."""
    head = '<section id="steps"><h2>Step time by rank, whole run</h2>'
    if not grid.columns or not grid.hi:
        return (
            f"{head}<p>No step times were recorded (no process reached a second step, or its records come from "
            "an older npuprof that kept none).</p></section>\n"
        )
    rows = len(grid.values)
    what = (
        f"{count(rows, 'row')}, {grid.steps:,} steps (steps {grid.first:,} to {grid.last:,})"
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
    body = _lines_svg(grid, job, tool_spans or []) if rows <= LINE_ROWS else _heatmap(grid, job)
    return f"{head}{body}{''.join(notes)}</section>\n"


def _lines_svg(grid: Grid, job: dict, tool_spans: list[tuple[int, int]]) -> str:
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
    # the tool's own steps (its windows and the steps that start and stop them), hatched grey
    for first, last in tool_spans:
        x0, x1 = x(max(first, grid.first) - 0.5), x(min(last, grid.last) + 0.5)
        if x1 <= x0:
            continue
        title = f"the tool's own steps {first}-{last}: left out of the step-time figures and the findings"
        svg.append(
            f'<rect x="{x0:.1f}" y="{mt}" width="{max(x1 - x0, 2):.1f}" height="{ph}" fill="{TOOL_COLOUR}" '
            f'fill-opacity="0.18" class="toolsteps"><title>{esc(title)}</title></rect>'
        )
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
            f'fill-opacity="0.10" stroke="{WINDOW_COLOUR}" stroke-opacity="0.6"{dash}>'
            f"<title>{esc(title)}</title></rect>"
            f'<text x="{(x0 + x1) / 2:.1f}" y="{mt - 8}" class="mark" fill="{WINDOW_COLOUR}" text-anchor="middle">'
            f"window {first}-{last}{esc(who)}</text>"
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
            f"{ms_text(median)} ms</text>"
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
            f'stroke-linejoin="round" data-row="{esc(grid.labels[index])}"><title>{esc(label)}</title></polyline>'
        )
        if grid.slow[index]:
            last_point = max((j for j, v in enumerate(values) if 0 < v < math.inf), default=None)
            if last_point is not None:
                svg.append(
                    f'<text x="{x(_column_step(grid, last_point)) + 8:.1f}" y="{y(values[last_point] * 1e3) + 4:.1f}" '
                    f'class="mark" fill="{SLOW_COLOUR}">{esc(grid.labels[index])} (slow)</text>'
                )
        if len(values) <= 60:
            svg.extend(
                f'<circle cx="{x(_column_step(grid, j)):.1f}" cy="{y(v * 1e3):.1f}" r="2.6" fill="{colour}">'
                f"<title>{esc(grid.labels[index])}, step {_column_step(grid, j):g}: {ms_text(v)} ms</title></circle>"
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
            f'fill="#b35806">spike: {esc(text)}</text>'
        )
    svg.append("</svg>")
    legend = []
    for index, label in enumerate(grid.labels):
        if grid.slow[index]:
            legend.append(
                f'<span class="key slow"><i style="background:{SLOW_COLOUR};height:4px"></i>{esc(label)} (slow)</span>'
            )
        else:
            colour = LINE_COLOURS[index % len(LINE_COLOURS)]
            legend.append(f'<span class="key"><i style="background:{colour}"></i>{esc(label)}</span>')
    legend.append(
        f'<span class="key"><i style="background:{WINDOW_COLOUR};opacity:.35;height:12px"></i>profiled window</span>'
        f'<span class="key"><i style="background:{TOOL_COLOUR};opacity:.35;height:12px"></i>the tool\'s own steps '
        "(not in the figures)</span>"
        f'<span class="key"><b style="color:{SPIKE_COLOUR}">&#9711;</b> spike</span>'
        '<span class="key"><i class="dashed"></i>job median</span>'
    )
    return f'<div class="scroll">{"".join(svg)}</div><div class="legend">{"".join(legend)}</div>'


def _column_step(grid: Grid, column: int) -> float:
    """The middle step of a column, where its point is drawn."""
    first = grid.first + column * grid.k
    last = min(first + grid.k - 1, grid.last)
    return (first + last) / 2


def _heatmap(grid: Grid, job: dict) -> str:
    rows = len(grid.values)
    row_px = max(1, min(22, 640 // rows))
    layout = {"ml": 110, "mt": 64, "pw": 1000, "ph": rows * row_px, "rh": row_px, "gap": 14, "mw": 100, "mr": 14}
    layout["w"] = layout["ml"] + layout["pw"] + layout["gap"] + layout["mw"] + layout["mr"]
    layout["h"] = layout["mt"] + layout["ph"] + 128
    lo_key, hi_key = _scale_keys(grid)
    lo, hi = key_value(lo_key), key_value(hi_key)
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
            [s["step"], s["vs_median"], wording.who(s["ranks"]) if s.get("ranks") else ""]
            for s in job.get("spikes") or ()
        ],
        "stepTicks": _step_ticks(grid.first, grid.last, 10),
        "rowTicks": _row_ticks(rows, row_px, grid.slow),
        "scaleTicks": ticks,
        "downsampled": grid.k > 1,
    }
    block = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    slow_labels = ", ".join(esc(label) for label, slow in zip(grid.labels, grid.slow) if slow)
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


def _scale_keys(grid: Grid) -> tuple[int, int]:
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
    while key_value(hi_key) < key_value(lo_key) * SCALE_RATIO and hi_key < INF_KEY - 1:
        hi_key += 1  # nearly uniform times: a narrow scale would paint noise as contrast
    return lo_key, hi_key


def _key_codes(lo_key: int, hi_key: int) -> list[int]:
    """Each key's cell byte: 0 for no step, 1-255 its time on a log scale from lo_key to hi_key (clamped)."""
    codes = [1] * (lo_key + 1) + [255] * (0x8000 - lo_key - 1)
    codes[0] = 0
    log_lo = math.log(key_value(lo_key))
    scale = math.log(key_value(hi_key)) - log_lo
    for key in range(lo_key + 1, hi_key):
        codes[key] = 1 + round(254 * (math.log(key_value(key)) - log_lo) / scale)
    return codes


def _window_rects(grid: Grid) -> list[list]:
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


#: How a slow rank was named, by its finding's rule (lockstep.py) or method.
HOW_NAMED = {
    "step_times": "by its step times",
    "per_collective": "by who arrived last, collective by collective",
    "cpu_time": "by its time on a CPU, step by step",
    "device_time": "by its NPU's computing time, step by step",
}


def median_chart(grid: Grid, job: dict) -> str:
    """Each rank's median step: the slow ranks and why, and a bar each (past LINE_ROWS the heat map draws them)."""
    slow_ranks = job.get("slow_ranks") or []
    parts = ['<section id="medians"><h2>Median step time per rank</h2>']
    if slow_ranks:
        items = []
        for slow in slow_ranks:
            what = "the slowest" if slow.get("method") == "step_times" else "the one the others wait for"
            how = HOW_NAMED.get(slow.get("rule") or slow.get("method"), "by its time in collectives")
            stage = f" in stage {esc(slow['stage'])}" if slow.get("stage") else ""
            items.append(
                f'<li><b class="slowname">rank {esc(slow.get("rank"))}</b> is {what}{stage} ({how}): '
                f"{esc(slow.get('evidence'))}</li>"
            )
        parts.append(f'<ul class="slowlist">{"".join(items)}</ul>')
        lockstep = [s for s in slow_ranks if s.get("method") == "collectives"]
        if lockstep:
            how = "The traces tell instead: it is the one that waits least in its collectives"
            if all(s.get("rule") == "cpu_time" for s in lockstep):
                how = "Its stepping thread's time on a CPU tells instead: it runs longer than the others, step by step"
            elif all(s.get("rule") == "device_time" for s in lockstep):
                how = "Its NPU's computing time tells instead: it computes longer than the others, step by step"
            parts.append(
                '<p class="caption">In lockstep (data parallel) every rank\'s step takes as long as the slowest '
                "one's, since the others wait for it inside the collective; so its median step time need not stand "
                f"out. {how}.</p>"
            )
    elif job.get("held_back"):  # heldback.py: not slow for its own work; the machine holds it
        held = "".join(
            f'<li><b class="slowname">rank {esc(one["rank"])}</b> is held back by the machine: '
            f"{esc(one['evidence'])}</li>"
            for one in job["held_back"]
        )
        parts.append(f'<ul class="slowlist">{held}</ul>')
    elif job.get("no_rank_stands_out"):
        unjudged = wording.unjudged(job.get("slow_rank_verdict") or {})
        head = f"{unjudged[0].upper()}{unjudged[1:]}" if unjudged else "No rank stands out"
        parts.append(f"<p>{esc(head)}: {esc(job['no_rank_stands_out'])}.</p>")
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
                f'<tr class="{"slow" if slow else ""}"><th>{esc(label)}{mark}</th><td class="barcell">'
                f'<span class="bar" style="width:{width:.1f}%"></span></td>'
                f'<td class="num">{ms_text(median)} ms</td></tr>'
            )
        parts.append(f'<table class="bars">{"".join(rows)}</table>')
        parts.append(
            '<p class="caption">The median of each process\'s step times over the whole run, without the steps '
            "the tool worked in (each window, its schedule's warm-up steps, and the steps just before and after "
            "it); the job's first steps count.</p>"
        )
    parts.append("</section>\n")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# Ticks and colours


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
