"""The HTML report's sections of text: the header, the problems and findings, the spikes, the next
commands, the table of the processes with their trace links, and how to open the traces.

Its own module because these sections read the report dict (report.py) and its job summary
(jobview.py's) and nothing else: no step-times file, no chart (those are htmlcharts.py's). It also
holds the few text helpers every part of the page writes with (``esc``, ``count``, ``ms_text``),
so it imports no other module of the page but htmlgrid.py's process fields.

Past TABLE_ROWS processes, the table shows the first few and the flagged ones (slow, errors,
windows missing) and keeps all of them in a closed ``<details>``, which a browser lays out only
when it is opened: a thousand rows would otherwise be most of the page's time to show.

Everything that comes from the job (paths, names, commands, messages) is HTML-escaped (``esc``),
and the trace links are relative, so the output directory can be copied whole.
"""

from __future__ import annotations

import datetime
import os
import shlex
import urllib.parse

from npuprof_launch.common import findings, names, stepstats
from npuprof_launch.launcher import answer, handoff, runs, wording
from npuprof_launch.launcher.htmlgrid import median_s, process_label, process_windows
from npuprof_launch.launcher.htmltext import esc, ms_text

#: Operators shown per process in the table.
TABLE_OPERATORS = 3
#: Up to this many processes the table shows them all; past it, the first ROWS_FIRST and the
#: flagged ones, and all of them in a closed <details>.
TABLE_ROWS = 16
ROWS_FIRST = 8

PERFETTO = "https://ui.perfetto.dev"


def headline(report: dict, job: dict) -> str:
    """One line of what was profiled: the page's title and the line under its heading."""
    return wording.headline(report.get("processes") or [], job)


def header(report: dict, job: dict) -> str:
    """The verdict badge, the run's facts (output, command, when, how it ended) and the figures as tiles."""
    passed = report.get("passed")
    badge = (
        '<span class="badge ok">passed</span>'
        if passed
        else f'<span class="badge bad">{count(len(report.get("problems") or []), "problem")}</span>'
    )
    run = report.get("run") or {}
    facts = [("output", f"<code>{esc(report.get('output_dir'))}</code>")]
    if run.get("command"):
        facts.append(("command", f"<code>{esc(shlex.join(str(a) for a in run['command']))}</code>"))
    when = []
    if run.get("started_ns"):
        started = datetime.datetime.fromtimestamp(run["started_ns"] / 1e9)
        when.append(f"started {started:%Y-%m-%d %H:%M:%S}")
        if run.get("ended_ns"):
            when.append(f"ran {_duration((run['ended_ns'] - run['started_ns']) / 1e9)}")
    if run.get("signal"):
        when.append(f"killed by signal {esc(run['signal'])}")
    elif run.get("status") is not None:
        when.append(f"exit status {esc(run['status'])}")
    if run.get("run_id"):
        when.append(f"run {esc(run['run_id'])}")
    if when:
        facts.append(("run", ", ".join(when)))
    others = runs.others_text(report.get("runs") or [], report.get("run_id"), report.get("output_dir") or ".")
    if others:
        facts.append(("other runs", esc(others)))
    rows = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in facts)
    step = job.get("step_time_s") or {}
    ranks = job.get("ranks")
    tiles = [
        ("ranks", _int(ranks)) if ranks else ("processes", _int(job.get("processes"))),
        ("hosts", _int(job.get("hosts"))),
        ("steps", _int(job.get("steps"))),
        ("windows", f"{_int(job.get('windows_completed'))} / {_int(job.get('windows_planned'))}"),
        ("median step", _ms_unit(step.get("median"))),
        ("p90 of the ranks' medians", _ms_unit(step.get("p90"))),
        ("slowest of the job's steps", _ms_unit(step.get("max"))),
    ]
    slow = [s["rank"] for s in job.get("slow_ranks") or () if s.get("rank") is not None]
    if slow:
        tiles.append(
            (
                "slow " + ("rank" if len(slow) == 1 else "ranks"),
                f'<span class="slowname">{esc(wording.compact_ranks(slow))}</span>',
            )
        )
    if job.get("spikes") or job.get("window_spikes"):
        tiles.append(("spikes (the worst)", _int(len(job.get("spikes") or []) + len(job.get("window_spikes") or []))))
    tile_html = "".join(f'<div class="tile"><div class="v">{v}</div><div class="k">{k}</div></div>' for k, v in tiles)
    return (
        f'<header><h1>npuprof report {badge}</h1><p class="headline">{esc(headline(report, job))}</p>'
        f'<table class="facts">{rows}</table><div class="tiles">{tile_html}</div></header>\n'
    )


def problems_and_findings(report: dict) -> str:
    """What went wrong (the problems), what stood out (the findings) and what was told apart (the
    notes): the answer's items (answer.py), the verdict, before any chart."""
    problems = report.get("problems") or []
    findings = report.get("findings") or []
    notes = [note for note in report.get("notes") or () if note["kind"] != "no_rank_stands_out"]  # the medians'
    parts = ['<section id="verdict"><h2>Problems and findings</h2>']
    if problems:
        items = "".join(f"<li>{esc(p['text'])}</li>" for p in problems)
        parts.append(f'<div class="box bad"><h3>{count(len(problems), "problem")}</h3><ul>{items}</ul></div>')
    else:
        parts.append(
            '<div class="box ok"><h3>No problems</h3><p>Every window completed and every trace parses.</p></div>'
        )
    if findings:
        items = "".join(f"<li>{esc(f['text'])}</li>" for f in findings)
        parts.append(f'<div class="box note"><h3>Findings</h3><ul>{items}</ul></div>')
    elif report.get("processes"):
        parts.append('<div class="box"><h3>Findings</h3><p>No slow rank and no spike stood out.</p></div>')
    if notes:
        items = "".join(
            f'<li><span class="kind">{esc(answer.KINDS[n["kind"]].head or "note")}</span>: {esc(n["text"])}</li>'
            for n in notes
        )
        parts.append(f'<div class="box"><h3>Told apart, no finding</h3><ul>{items}</ul></div>')
    for name in report.get("replaced") or ():
        parts.append(f"<p>{esc(name)} replaced itself with os.exec and counted on there.</p>")
    if report.get("idle_processes"):
        other = "other process" if report.get("processes") else "process"
        parts.append(f"<p>{count(report['idle_processes'], other)} imported torch but never stepped.</p>")
    parts.append("</section>\n")
    return "".join(parts)


def spike_table(job: dict) -> str:
    """The worst spikes (jobview.py's), a row each, and what counts as one."""
    spikes = [*(job.get("spikes") or ()), *(job.get("window_spikes") or ())]
    head = '<section id="spikes"><h2>Spikes</h2>'
    if not spikes:
        apart = " counted" if job.get("undecidable_spikes") else ""
        return (
            f"{head}<p>No spike{apart}: no step of the job's took {stepstats.SPIKE_RATIO:g}x its rank's median or "
            f"more, but those told apart above (the first {stepstats.WARMUP_STEPS} timed steps, the profiled "
            "steps, the steps a wait for a CPU or the tool's aftercare may explain, the job's last where some "
            "ranks ended it first).</p></section>\n"
        )
    rows = []
    ranks_total = job.get("ranks") or 0
    for spike in spikes:
        ranks = spike.get("ranks") or []
        if ranks and len(ranks) == ranks_total and len(ranks) > 1:
            where = wording.every_rank(len(ranks))
        elif ranks:
            where = wording.who(ranks)
        else:
            where = count(spike.get("processes") or 0, "process")
        if spike.get("window"):  # windowstall.py's: against its window's other steps
            first, last = spike["window"]
            where += f" (inside the window of steps {first}-{last}: against its steps {first + 1}-{last})"
        rows.append(
            f'<tr><td class="num">{spike["step"]:,}</td><td>{esc(where)}</td>'
            f'<td class="num">{ms_text(spike["step_s"])}</td>'
            f'<td class="num">{spike["vs_median"]:.1f}x</td></tr>'
        )
    return (
        f'{head}<table class="grid narrow"><thead><tr><th class="num">step</th><th>where</th>'
        '<th class="num">slowest (ms)</th><th class="num">vs the rank\'s median</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table><p class="caption">A spike: a step '
        f"{stepstats.SPIKE_RATIO:g}x its rank's median or more "
        f"(and {stepstats.SPIKE_MIN_S * 1e3:g} ms longer); the worst "
        f"{findings.SPIKES_SHOWN} are shown. In lockstep one rank's stall spreads to all. Not counted: the first "
        f"{stepstats.WARMUP_STEPS} timed steps, the profiled steps (but against their window's own median, "
        "its first step left out), and those beside the tool's aftercare that its cost may explain (told apart, "
        "above).</p></section>\n"
    )


def next_commands(job: dict) -> str:
    """The suggested next runs (jobview.py's), ready to copy; nothing when there are none."""
    suggestions = job.get("suggestions") or []
    if not suggestions:
        return ""
    items = "".join(f"<li><pre><code>{esc(s)}</code></pre></li>" for s in suggestions)
    # nextruns.of_job: one on the worst spike where there is one, one on the slow rank where one stands out.
    aims = ["a window on the worst spike"] if job.get("spikes") else []
    if job.get("slow_ranks"):
        aims.append("one on the slow rank" if aims else "a window on the slow rank")
    return (
        f'<section id="next"><h2>Next</h2><p>To look closer: {", and ".join(aims)}.</p>'
        f'<ol class="commands">{items}</ol></section>\n'
    )


def process_table(processes: list[dict], report: dict, job: dict) -> str:
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
        what += f" and the {count(flagged, 'flagged one')} (slow, errors, windows missing)"
    return (
        f'{head}<p class="caption">{what}; all {len(rows):,} below.</p>{_table(shown)}'
        f'<details class="all"><summary>All {len(rows):,} processes</summary>{_table(rows, tall=True)}</details>'
        "</section>\n"
    )


def _flagged(process: dict) -> bool:
    return wording.flagged(process)


def _table(rows: list[str], tall: bool = False) -> str:
    return (
        f'<div class="tablewrap{" tall" if tall else ""}"><table class="grid procs"><thead><tr>'
        '<th>rank</th><th>host</th><th class="num">pid</th><th>backend</th><th class="num">steps</th><th>windows</th>'
        '<th class="num">median step (ms)</th>'
        f"<th>top operators (self time in the windows; an NPU row's: device time)</th><th>traces</th></tr></thead>"
        f"<tbody>{''.join(rows)}"
        "</tbody></table></div>"
    )


def _process_row(process: dict, out: str) -> str:
    slow = process.get("slowest_rank")
    windows = f"{process.get('windows_completed') or 0}/{process.get('windows_planned') or 0}"
    spans = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b, _complete in process_windows(process))
    operators = "".join(
        f'<li><span class="op">{esc(op.get("name"))}</span> {ms_text((op.get("self_us") or 0) / 1e6)} ms</li>'
        for op in (process.get("top_operators") or [])[:TABLE_OPERATORS]
    )
    if operators and process.get("top_operators_time") == "device":
        operators = f"<li>{wording.OPERATOR_TIME['device']}:</li>{operators}"
    notes = [f'<span class="err">{esc(error)}</span>' for error in process.get("errors") or ()]
    if process.get("ended_note"):
        notes.append(esc(process["ended_note"]))
    notes.extend(esc(warning) for warning in process.get("warnings") or ())
    note_html = (
        f"<details><summary>{count(len(notes), 'note')}</summary>{'<br>'.join(notes)}</details>" if notes else ""
    )
    return (
        f'<tr class="{"slow" if slow else ""}"><td>{esc(process_label(process))}'
        f"{' <b class=slowname>slow</b>' if slow else ''}</td>"
        f'<td>{esc(process.get("host"))}</td><td class="num">{esc(process.get("pid"))}</td>'
        f'<td>{esc(process.get("backend") or "-")}</td><td class="num">{_int(process.get("steps"))}</td>'
        f'<td class="nowrap">{windows}{"<br>steps " + esc(spans) if spans else ""}</td>'
        f'<td class="num">{ms_text(median_s(process))}</td><td><ul class="ops">{operators}</ul></td>'
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
        steps = wording.steps(first, last)
        links = " ".join(_link(t, out) for t in traces)
        partial = "" if window.get("complete") else " (partial)"
        parts.append(f'<div class="trace"><span class="steps">{esc(steps)}{partial}:</span> {links}</div>')
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
    return f'<a href="{esc(href)}" title="{esc(rel)}">{esc(os.path.basename(rel.rstrip("/")))}</a>{kind}'


def how_to_open(processes: list[dict], out: str, raw: dict | None = None, handed: dict | None = None) -> str:
    """How to open the traces that this run left (torch, NPU), and the same report as text;
    ``raw``: the report's ``raw_kept`` (NPU sessions to parse first)."""
    backends = {p.get("backend") for p in processes if p.get("traces")}
    items = []
    if "npu" not in backends or "torch" in backends:
        items.append(
            f"<li><b>A torch trace</b> (<code>.pt.trace.json</code> or <code>.pt.trace.json.gz</code>): open "
            f'<a href="{PERFETTO}">{PERFETTO}</a>, choose <b>Open trace file</b> and pick the file (about 2 GB at most '
            "in the browser). The links above point at the files beside this page: save or copy them from there. "
            "All ranks side by side: Holistic Trace Analysis (npuprof-launch's docs/output.md).</li>"
        )
    if raw:
        which = "it" if raw["sessions"] == 1 else "them"
        items.append(
            f"<li><b>Raw NPU data</b>: {wording.count(raw['sessions'], 'session')} kept unparsed, as --no-analyse "
            f"asked; to open {which}, parse first: <code>{esc(raw['command'])}</code>.</li>"
        )
    if "npu" in backends:
        which = f", steps {handed['steps'][0]}-{handed['steps'][1]}, one session a rank" if handed else ""
        items.append(
            "<li><b>NPU data</b> (a <code>*_ascend_pt</code> directory): MindStudio Insight, <b>File &gt; Open</b>, "
            f"the directory. All ranks{which}: <code>{esc(handoff.command_line(handed, out))}</code>.</li>"
        )
    items.append(
        f"<li>The same report as text: <code>npuprof-run --check {esc(shlex.quote(out))}</code> "
        "(<code>--json</code> for the data).</li>"
    )
    return f'<section id="open"><h2>How to open the traces</h2><ul>{"".join(items)}</ul></section>\n'


# ---------------------------------------------------------------------------------------------
# Text


count = wording.count


def _int(value) -> str:
    return f"{value:,}" if isinstance(value, int) else "-"


def _ms_unit(seconds) -> str:
    text = ms_text(seconds)
    return text if text == "-" else f"{text} ms"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"
