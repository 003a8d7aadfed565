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

This module puts the page together and writes it; the parts are its siblings, each importing
none of this one: htmlgrid.py reads the step times into a grid downsampled to fit the page (at
any scale: MAX_COLUMNS columns, MAX_ROWS rows), htmlcharts.py draws it (lines as SVG up to
LINE_ROWS rows, past that a heat map on a canvas), htmlsections.py writes the sections of text.
The style and the script are files of the package, page/report.css and page/report.js, so that
they can be read, edited and checked as CSS and JavaScript; they are read at each render and put
inline, so the page stays one file.
"""

from __future__ import annotations

import base64
import hashlib
import os

from npuprof_launch.launcher import htmlcharts, htmlgrid, htmlsections
from npuprof_launch.launcher.htmltext import esc

FILE_NAME = "npuprof_report.html"
#: The page's style and script, beside this module (pyproject.toml's package-data ships them).
PAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "page")
STYLE_FILE = "report.css"
SCRIPT_FILE = "report.js"

#: The trace viewer the page points at (htmlsections.py's, named here too for the tests).
PERFETTO = htmlsections.PERFETTO
#: The downsampling's kernel (htmlgrid.py's), named here too for the tests.
_bucket_max_keys = htmlgrid.bucket_max_keys


def render(report: dict) -> str:
    """The HTML text of the report; the step times are read from ``report["output_dir"]``."""
    out = report.get("output_dir") or "."
    processes = report.get("processes") or []
    job = report.get("job") or {}
    grid = htmlgrid.read(processes, out)
    style, script = _page_file(STYLE_FILE), _page_file(SCRIPT_FILE)
    parts = [
        _head(report, job, style, script),
        htmlsections.header(report, job),
        htmlsections.problems_and_findings(report),
        htmlcharts.step_chart(grid, job, _tool_spans(processes, job)),
        htmlcharts.median_chart(grid, job),
        htmlsections.spike_table(job),
        htmlsections.next_commands(job),
        htmlsections.process_table(processes, report, job),
        htmlsections.how_to_open(processes, out, report.get("raw_kept"), report.get("handoff")),
        f"<footer>Written by npuprof-run from {esc(out)}. Standard library only; no network: "
        f"the page loads nothing.</footer>\n</main>\n<script>{script}</script>\n</body>\n</html>\n",
    ]
    return "".join(parts)


def _tool_spans(processes: list[dict], job: dict) -> list[tuple[int, int]]:
    """The steps the tool worked in (its windows and their edges), in the chart's numbering: the
    processes' own, where they share one (a resumed job's offset); none where they do not."""
    offsets = {process.get("step_offset") or 0 for process in processes}
    if len(offsets) != 1:
        return []
    shift = offsets.pop()
    spans = (job.get("tool_steps") or {}).get("recorded_steps") or ()
    return [(int(first) - shift, int(last) - shift) for first, last in spans]


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


def _head(report: dict, job: dict, style: str, script: str) -> str:
    title = f"npuprof report: {htmlsections.headline(report, job)}"
    policy = (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src '{_script_hash(script)}'; img-src data:; base-uri 'none'; form-action 'none'"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{style}</style>\n</head>\n<body>\n<main>\n"
    )


def _script_hash(script: str) -> str:
    """The Content-Security-Policy's source for the script: it lets this one script run, and nothing else."""
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


def _page_file(name: str) -> str:
    """A file of page/, as the page holds it: on a line of its own after its tag.

    Read at each render, not at import, so that a missing file fails the page (cli.py says so in a
    line and the run goes on) and not the import of the module; two small files cost nothing beside
    the step times. Universal newlines: a checkout with CRLF writes the same page, and the script's
    hash is taken of exactly the text the page holds.
    """
    with open(os.path.join(PAGE_DIR, name), encoding="utf-8") as handle:
        return "\n" + handle.read()
