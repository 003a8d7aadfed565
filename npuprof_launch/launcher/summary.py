"""The summary a person reads at the end of a run and from ``--check DIR``: one screen at any scale.

It leads with the verdict and the answer's items (answer.py): the findings, the problems, the notes
that need reading; what the tool told apart (its own steps, waits for a CPU, why no rank stands
out) folds into one line of counts, shown whole with ``--explain``. Then the step times, a row per
process for the first few and for those with something to say (all of them with ``--verbose``),
the next command to run, and how to open what was written. No line is over WIDTH characters but
for a path or a row of the table: longer text wraps with an indent.
"""

from __future__ import annotations

import textwrap

from npuprof_launch.common import findings, names, numbering
from npuprof_launch.launcher import answer, handoff, runs, wording

#: Rows shown before "... and N more".
ROWS_SHOWN = 8
#: The longest line the summary writes, paths aside.
WIDTH = 100
#: The notes folded into the line of what was told apart (the rest are told whole): their words
#: in that line, the first over its steps.
TOLD_APART = {
    "tool_steps": "profiler",
    "aftercare_steps": "aftercare",
    "record_steps": "record writes",
    "cpu_wait": "CPU waits",
    "job_end_steps": "job's end",
}

OPEN_TORCH = "open a trace: https://ui.perfetto.dev, Open trace file; all ranks at once: docs/output.md"
OPEN_NPU = "open NPU data: MindStudio Insight (*_ascend_pt); all ranks: {command}"
#: The words for the multiprocessing workers that never stepped (report.py's idle_workers).
WORKER_WORDS = {"multiprocessing": "multiprocessing worker", "data_loader": "data-loader worker"}
STEP_MS = "step ms: the median time between step boundaries, the steps the tool worked in left out"


def _ms(seconds) -> str:
    return f"{seconds * 1e3:.2f}" if seconds else "-"


def format_table(report: dict, verbose: bool = False, explain: bool = False, width: int | None = WIDTH) -> str:
    """The end-of-run summary (the launcher prints it on stderr; ``--check`` on stdout); ``explain``:
    every note whole (the evidence of what was told apart), and every other run of the directory.
    ``width``: where long lines wrap; None keeps each item one line (a log a user greps: cli.py
    wraps on a terminal only)."""
    lines: list[str] = []

    def _wrap(line: str, indent: str = "    ") -> str:
        return wrapped(line, width, indent)

    def _bullet(text: str) -> str:
        return _wrap(f"  - {text}")

    processes = report["processes"]
    job = report.get("job") or {}
    out = report["output_dir"]
    recorded = [p for p in processes if p.get("windows")]
    say = names.VOICE
    lines.append(f"{say} {wording.headline(processes, job)}; output in {out}")
    others = runs.others_text(report.get("runs") or [], report.get("run_id"), out, every=explain)
    if others:
        lines.append(f"{say} {others}")
    for heading, items in (("findings", report.get("findings")), ("problems", report["problems"])):
        if items:
            lines.append(f"{say} {heading}:")
            lines.extend(_bullet(one["text"]) for one in items)
    notes = report.get("notes") or []
    folds = {*TOLD_APART, "no_rank_stands_out", "handoff_differs"}  # the last: the command given is the right one
    folded = [one for one in notes if one["kind"] in folds]
    whole = [one for one in notes if one["kind"] not in folds]
    apart = told_apart(folded)
    if explain:
        whole = notes
    elif apart:
        lines.append(_wrap(f"  {apart}"))
        lines.extend(_wrap(f"  {line}") for line in recorded_spikes(folded))
    if whole:
        lines.append(f"{say} notes:")
        lines.extend(_bullet(_note_text(one)) for one in whole)
    step = job.get("step_time_s")
    if step:
        alike = ""
        for note in answer.of_kind(notes, "no_rank_stands_out") if not explain else ():
            alike = f"; {wording.unjudged(note['evidence']) or 'no rank stands out'}"
        line = f"  step time across ranks: median {_ms(step['median'])} ms, p90 {_ms(step['p90'])} ms; "
        lines.append(_wrap(f"{line}slowest step {_ms(step['max'])} ms{alike}"))
    lines.extend(_wrap(f"  {line}") for line in numbering_lines(processes))
    if processes:
        lines.append(f"  {'rank':>4} {'pid':>8} {'backend':7} {'steps':>6} {'windows':>7} {'step ms':>8}  traces")
        shown = processes if verbose else _rows_to_show(processes, report)
        for process in shown:
            lines.extend(_row(process))
        if len(shown) < len(processes):
            lines.append(f"  ... and {len(processes) - len(shown)} more (npuprof-run --check {out} --verbose)")
        if explain:
            lines.append(f"  ({STEP_MS})")
    lines.extend(_wrap(f"  {line}") for line in _others_lines(report, processes, recorded))
    for suggestion in job.get("suggestions") or ():
        lines.append(f"{say} next: {suggestion}")
    if report.get("html"):
        lines.append(f"{say} the whole run on one page: {report['html']}")
    # where the traces are to open: not where every window was lost (a process killed in its export)
    traced = [p for p in recorded if any(w.get("traces") for w in p["windows"])]
    if traced:
        backends = {p.get("backend") for p in traced}
        if "torch" in backends:
            lines.append(f"{say} {OPEN_TORCH}")
        raw = report.get("raw_kept")
        if raw:
            lines.append(
                _wrap(
                    f"{say} {wording.count(raw['sessions'], 'NPU session')} kept as raw data, unparsed as "
                    f"--no-analyse asked; {raw['command']} parses {'it' if raw['sessions'] == 1 else 'them'}"
                )
            )
        if "npu" in backends:
            lines.append(f"{say} {OPEN_NPU.format(command=handoff.command_line(report.get('handoff'), out))}")
    return "\n".join(lines)


def told_apart(notes: list[dict]) -> str | None:
    """The notes of the steps the tool told apart, in one line of counts, each step counted once
    (under the first of TOLD_APART that holds it): ``steps told apart: 4 profiler, 6 aftercare,
    1 CPU waits (--explain)``, under 100 characters with all four at 9,999 steps; None when none."""
    counted: set[int] = set()
    counts: dict[str, int] = {}
    for kind in TOLD_APART:
        steps = {step for one in answer.of_kind(notes, kind) for step in one["steps"]} - counted
        if steps:
            counts[kind] = len(steps)
            counted |= steps
    if not counted:
        return None
    told = {kind: f"{n} {TOLD_APART[kind]}" for kind, n in counts.items()}
    line = "steps told apart: " + ", ".join(told.values()) + " (--explain)"
    tools = answer.of_kind(notes, "tool_steps")
    costs = {}  # costs the user meets (the profiler's start, its stop with the export), where there is room
    for key, word in (("start", "start"), ("stop", "export")):
        found = [one[f"{key}_s"] for note in tools for one in note["evidence"].get(f"profiler_{key}s") or ()]
        if found:
            costs[word] = f"up to {max(found):.1f} s"
    if costs and "tool_steps" in told:
        # both where they fit ("start: up to 1.2 s; export: up to 1.3 s"), else one ("its start: ...")
        tried = ["; ".join(f"{word}: {cost}" for word, cost in costs.items())] if len(costs) > 1 else []
        tried += [f"its {word}: {cost}" for word, cost in costs.items()]
        for shown in tried:
            longer = "steps told apart: " + ", ".join(
                f"{text} ({shown})" if kind == "tool_steps" else text for kind, text in told.items()
            )
            longer += " (--explain)"
            if len(longer) + 2 <= WIDTH:
                return longer
    return line


def recorded_spikes(notes: list[dict]) -> list[str]:
    """The step a one-step window recorded, where it is over the spike bar: the run a spike's next:
    suggests records it as the tool's, and it is told here, not only under --explain. A longer
    window's first step carries the profiler's other costs (the README's 1.5 ms job's took 51 ms).
    Not a warm-up step (steps 2-4, the default window's among them): no spike is found there, so
    no run was suggested for it, and its time is the profiler's start and the job's warm-up (tried:
    a healthy 4-rank DDP job's default run beside two CPU hogs, "step 2 on rank 2, its window's one
    step: 261.71 ms, 3.4x the median step", each run a different rank)."""
    lines = []
    for note in answer.of_kind(notes, "tool_steps"):
        spike = note["evidence"].get("recorded_spike")
        if spike and spike.get("window_steps") == 1 and not spike.get("warmup"):
            whose = f" on rank {spike['rank']}" if spike.get("rank") is not None else ""
            lines.append(
                f"step {spike['step']}{whose}, its window's one step: {_ms(spike['step_s'])} ms, "
                f"{spike['vs_median']}x the median step (less the profiler's start)"
            )
    return lines


def _note_text(note: dict) -> str:
    head = answer.KINDS[note["kind"]].head
    if note["kind"] == "cpu_wait":
        head = findings.CPU_WAIT_MEANING
    return f"{head}: {note['text']}" if head else note["text"]


def _others_lines(report: dict, processes: list[dict], recorded: list[dict]) -> list[str]:
    """The processes that are not rows: stepped without a window, replaced, left out, idle."""
    lines = []
    stepped = len(processes) - len(recorded)
    if stepped:
        lines.append(f"{wording.count(stepped, 'process')} stepped but recorded no window")
    if report.get("replaced"):
        lines.append(
            f"{wording.count(len(report['replaced']), 'process')} replaced itself with os.exec and counted on there"
        )
    left_out = report.get("left_out")
    if left_out:
        by = f"left out by {left_out['option']}" if left_out.get("option") else "not meant to profile"
        who = f"{wording.who(left_out['ranks'])} ({wording.count(left_out['processes'], 'process')})"
        lines.append(f"{who}: {by}, stepped without a profiler")
    workers = report.get("idle_workers") or {}
    apart = ", ".join(wording.count(n, WORKER_WORDS.get(kind, kind)) for kind, n in workers.items())
    if report.get("idle_processes"):
        n = report["idle_processes"]
        also = f" (besides {apart}, not meant to)" if apart else ""
        lines.append(
            f"{wording.count(n, 'other process' if processes else 'process')} imported torch but never stepped{also}"
        )  # workers alone are no news in a healthy job's answer: the JSON counts them (idle_workers)
    return lines


def wrapped(line: str, width: int | None = WIDTH, indent: str = "    ") -> str:
    """A line over ``width`` wrapped at spaces, its later lines indented; a path is never broken."""
    if width is None or len(line) <= width:
        return line
    lead = line[: len(line) - len(line.lstrip())]
    return "\n".join(
        textwrap.wrap(
            line.strip(),
            width,
            initial_indent=lead,
            subsequent_indent=lead + indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
    )


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
        lines.append(_top_line(process["top_operators"][:3], process.get("top_operators_time") or "self"))
    return lines


#: The longest operator name a row's line shows whole (the page and --json keep every name whole).
OPERATOR_SHOWN = 40


def _top_line(operators: list[dict], time: str = "self") -> str:
    """The row's top operators by their time (``time``: a key of wording.OPERATOR_TIME, CPU self
    time or NPU device time), as many as fit in WIDTH (the first always), each name cut to
    OPERATOR_SHOWN characters: ``autograd::engine::evaluate_function: torch::autograd::
    AccumulateGrad`` alone is 68."""
    line = f"       top {wording.OPERATOR_TIME.get(time, time)}:"
    for index, op in enumerate(operators):
        name = op["name"] if len(op["name"]) <= OPERATOR_SHOWN else op["name"][: OPERATOR_SHOWN - 1] + "…"
        part = f"{',' if index else ''} {name} {op['self_us'] / 1e3:.2f} ms"
        if index and len(line) + len(part) > WIDTH:
            break
        line += part
    return line
