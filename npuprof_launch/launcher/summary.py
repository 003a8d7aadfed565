"""The summary a person reads at the end of a run and from ``--check DIR``: short at any scale.

One headline for the job, the step times across ranks, a row per process for the first few and
for those with problems (all of them with ``--verbose``), the findings, the problems grouped by
rank, the next command to run, and how to open what was written.
"""

from __future__ import annotations

from npuprof_launch.common import findings, names, numbering
from npuprof_launch.launcher import jobview, runs, wording

#: Rows shown before "... and N more".
ROWS_SHOWN = 8

OPEN_TORCH = (
    "open a trace: https://ui.perfetto.dev, 'Open trace file' (a .pt.trace.json or .pt.trace.json.gz; about 2 GB "
    "at most in the browser); all ranks side by side: Holistic Trace Analysis (npuprof-launch's docs/output.md)"
)
OPEN_NPU = (
    "open NPU data: MindStudio Insight, File > Open, a *_ascend_pt directory; all ranks: "
    "msprof-analyze cluster -d {out}"
)


def _ms(seconds) -> str:
    return f"{seconds * 1e3:.2f}" if seconds else "-"


def format_table(report: dict, verbose: bool = False) -> str:
    """The end-of-run summary (the launcher prints it on stderr; ``--check`` on stdout)."""
    lines = []
    processes = report["processes"]
    job = report.get("job") or {}
    out = report["output_dir"]
    recorded = [p for p in processes if p.get("windows")]
    lines.append(f"{names.VOICE} {wording.headline(processes, job)}; output in {out}")
    others = runs.others_text(report.get("runs") or [], report.get("run_id"), out)
    if others:
        lines.append(f"{names.VOICE} {others}")
    step = job.get("step_time_s")
    if step:
        lines.append(
            f"  step time (each rank's median time between step boundaries): median {_ms(step['median'])} ms, "
            f"p90 {_ms(step['p90'])} ms; slowest step {_ms(step['max'])} ms"
        )
    lines.extend(f"  {line}" for line in numbering_lines(processes))
    if job.get("no_rank_stands_out"):
        lines.append(f"  no rank stands out: {job['no_rank_stands_out']}")
    for line in (job.get("tool_steps") or {}).get("lines") or ():
        lines.append(f"  the tool's own steps: {line}")
    if job.get("cpu_wait_lines"):
        lines.append(f"  {findings.CPU_WAIT_MEANING}:")
        lines.extend(f"    {line}" for line in job["cpu_wait_lines"])
    if processes:
        lines.append(f"  {'rank':>4} {'pid':>8} {'backend':7} {'steps':>6} {'windows':>7} {'step ms':>8}  traces")
        shown = processes if verbose else _rows_to_show(processes, report)
        for process in shown:
            lines.extend(_row(process))
        if len(shown) < len(processes):
            lines.append(f"  ... and {len(processes) - len(shown)} more (npuprof-run --check {out} --verbose)")
        lines.append(
            "  (step ms: the median wall time between step boundaries, over the whole run but the steps the tool "
            "worked in)"
        )
    stepped = len(processes) - len(recorded)
    if stepped:
        lines.append(f"  {wording.count(stepped, 'process')} stepped but recorded no window")
    if report.get("replaced"):
        lines.append(
            f"  {wording.count(len(report['replaced']), 'process')} replaced itself with os.exec and counted on there"
        )
    left_out = report.get("left_out")
    if left_out:
        by = f"left out by {left_out['option']}" if left_out.get("option") else "not meant to profile"
        lines.append(
            f"  {jobview.who(left_out['ranks'])} ({wording.count(left_out['processes'], 'process')}): {by}, "
            "stepped without a profiler"
        )
    if report.get("idle_processes"):
        n = report["idle_processes"]
        lines.append(
            f"  {wording.count(n, 'other process' if processes else 'process')} imported torch but never stepped"
        )
    if report.get("findings"):
        lines.append(f"{names.VOICE} findings:")
        lines.extend(f"  - {finding}" for finding in report["findings"])
    if report["problems"]:
        lines.append(f"{names.VOICE} problems:")
        lines.extend(f"  - {problem}" for problem in report["problems"])
    for suggestion in job.get("suggestions") or ():
        lines.append(f"{names.VOICE} next: {suggestion}")
    if report.get("html"):
        lines.append(f"{names.VOICE} the whole run on one page: {report['html']} (opens offline in a browser)")
    if recorded:
        backends = {p.get("backend") for p in recorded}
        if "torch" in backends:
            lines.append(f"{names.VOICE} {OPEN_TORCH}")
        raw = report.get("raw_kept")
        if raw:
            lines.append(
                f"{names.VOICE} {wording.count(raw['sessions'], 'NPU session')} kept as raw data, unparsed as "
                f"--no-analyse asked; {raw['command']} parses {'it' if raw['sessions'] == 1 else 'them'}"
            )
        if "npu" in backends:
            lines.append(f"{names.VOICE} {OPEN_NPU.format(out=out)}")
    return "\n".join(lines)


def numbering_lines(processes: list[dict]) -> list[str]:
    """A resumed job's numbering, once per distinct start: its steps are the job's, not the process's."""
    starts: dict[tuple, list[dict]] = {}
    for process in processes:
        offset = process.get("step_offset") or 0
        if offset or not numbering.known(process.get("numbered_by")):
            starts.setdefault((offset, process.get("numbered_by")), []).append(process)
    lines = []
    for (offset, source), members in sorted(starts.items(), key=lambda item: item[0][0]):
        spans = sorted(
            {(w["first_step"], w["last_step"]) for p in members for w in p.get("windows") or () if w.get("last_step")}
        )
        windows = "; windows: steps " + ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans) if spans else ""
        who = "" if len(members) == len(processes) else f" ({wording.count(len(members), 'process')})"
        if not numbering.known(source):
            lines.append(f"steps numbered from each process's first{who}: by {numbering.words(source)}{windows}")
            continue
        lines.append(
            f"steps numbered as the job numbers them{who}: this run began at the job's step {offset + 1}, by "
            f"{numbering.words(source)}{windows}"
        )
    return lines


def _rows_to_show(processes: list[dict], report: dict) -> list[dict]:
    """The first few rows, then every row that has a problem, an error or a finding."""
    return [p for index, p in enumerate(processes) if index < ROWS_SHOWN or wording.flagged(p)]


def _row(process: dict) -> list[str]:
    rank = "-" if process.get("rank") is None else str(process["rank"])
    step_s = process.get("median_step_s") or process.get("mean_step_s")
    windows = f"{process.get('windows_completed') or 0}/{process.get('windows_planned') or 0}"
    traces = ", ".join(process.get("traces") or []) or "(none)"
    if process.get("stage"):
        traces = f"stage {process['stage']}: {traces}"
    flags = ""
    if process.get("slowest_rank"):
        # By collectives its own step time is no longer than the others' (they wait for it).
        flags += "  <- the others wait for it" if process.get("slow_by") == "collectives" else "  <- slowest"
    if process.get("waited_for_in"):
        flags += f"  <- the others waited for it in {process['waited_for_in']}"
    if process.get("ended_note"):
        flags += f"  ({process['ended_note']})"
    lines = [
        f"  {rank:>4} {process.get('pid') or 0:>8} {process.get('backend') or '-':7} {process.get('steps') or 0:>6} "
        f"{windows:>7} {_ms(step_s):>8}  {traces}{flags}"
    ]
    if process.get("top_operators"):
        tops = ", ".join(f"{op['name']} {op['self_us'] / 1e3:.2f} ms" for op in process["top_operators"][:3])
        lines.append(f"       top self time: {tops}")
    return lines
