"""The job's answer in words, written once: the summary, ``--check``, the page and the report's
reasons all say a count, the headline and "incomplete" through here, so they never disagree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from npuprof_launch.common import options, processlog, record


def count(n: int, noun: str) -> str:
    """``1 process``, ``2,048 processes``, ``3 steps``."""
    plural = noun + ("es" if noun.endswith("process") else "s")
    return f"1 {noun}" if n == 1 else f"{n:,} {plural}"


def incomplete(process: dict) -> bool:
    """Whether a process recorded fewer windows than it meant to."""
    return (process.get("windows_completed") or 0) < (process.get("windows_planned") or 0)


def flagged(process: dict) -> bool:
    """Whether a process's row has something to say: slow, waited for, errors, ended without handlers,
    windows missing."""
    return bool(
        process.get("slowest_rank")
        or process.get("waited_for_in")
        or process.get("errors")
        or process.get("ended_note")
        or incomplete(process)
    )


def headline(processes: list[dict], job: dict) -> str:
    """One line of what was profiled, and of a job that stopped stepping: the summary's first line,
    the page's title and the line under its heading."""
    recorded = [p for p in processes if p.get("windows")]
    text = f"{count(record.process_count(recorded), 'process')} profiled"
    if not processes:
        return text
    ranks = sorted({p["rank"] for p in processes if p.get("rank") is not None})
    hosts = count(job.get("hosts") or 1, "host")
    where = f"{who(ranks)} on {hosts}" if ranks else hosts
    done = f"{job.get('windows_completed', 0)} of {job.get('windows_planned', 0)} windows complete"
    text = f"{text} ({where}{attempts_text(processes)}), {done}"
    for stall in job.get("stalls") or ():
        whose = who(stall["ranks"]) if stall.get("ranks") else count(stall["processes"], "process")
        more = "" if stall.get("step_exact") else " or a few more"
        text += f"; the job stopped stepping on {whose} (after step {stall['since_step']}{more})"
    return text


def no_step(idle_count: int, idle: list[dict]) -> str:
    """Why no process stepped when they imported torch: naming the training frameworks they
    imported (processlog.FRAMEWORK_STEPS) and, where one is known, the --target that runs a step."""
    head = f"no process saw a step: {count(idle_count, 'process')} imported torch but no optimizer.step was called"
    seen = sorted({name for line in idle for name in line.get("frameworks") or ()})
    steps = [(name, processlog.FRAMEWORK_STEPS[name]) for name in seen if processlog.FRAMEWORK_STEPS.get(name)]
    if steps:
        name, target = steps[0]
        return f"{head}; it imported {name}, whose steps are not torch.optim's: pass --target {target} (one of them)"
    if seen:
        return (
            f"{head}; it imported {', '.join(seen)}, whose steps are not torch.optim's: pass --target MOD:QUALNAME "
            "naming the function that runs one of its steps"
        )
    return (
        f"{head}; if the job has no optimizer (inference, RL), pass --target MOD:QUALNAME naming the function that "
        "runs one step"
    )


def ran_short(record: Mapping[str, Any], done: str, steps) -> str:
    """The job ended normally and really ran short of steps: the schedule's numbers, and the fix;
    with --from-step, in the job's numbers (a resumed process's steps are the job's from step_offset + 1)."""
    given = record.get("options") or {}
    schedule = options.schedule_of(given)
    ran = count(steps, "step") if isinstance(steps, int) else f"{steps} steps"
    if given.get("from-step") is not None and isinstance(steps, int):
        offset, windows = record.get("step_offset") or 0, schedule.windows()
        last = windows[-1].last - windows[0].first_recorded + given["from-step"]
        return (
            f"{done} windows completed: this process ran {ran}, the job's steps {offset + 1}-{offset + steps}, and "
            f"the windows from --from-step {given['from-step']} need the job's steps up to {last}; lower "
            "--from-step/--active/--repeat or run more steps"
        )
    return (
        f"{done} windows completed: the job ran {ran}, the schedule needs {schedule.formula()}; "
        "lower --skip-first/--active/--repeat or run more steps"
    )


def compact_ranks(ranks) -> str:
    """[0, 1, 2, 3, 5, 7, 8] -> "0-3, 5, 7-8" (in numeric order)."""
    ordered = sorted(set(ranks))
    parts, start, previous = [], None, None
    for rank in ordered:
        if previous is None:
            start = previous = rank
        elif rank == previous + 1:
            previous = rank
        else:
            parts.append(f"{start}-{previous}" if previous != start else f"{start}")
            start = previous = rank
    if start is not None:
        parts.append(f"{start}-{previous}" if previous != start else f"{start}")
    return ", ".join(parts)


def rank_list(ranks) -> str:
    """The same ranks as a ``--ranks`` value: "0-3,5,7-8"."""
    return compact_ranks(ranks).replace(", ", ",")


def every_rank(count: int) -> str:
    """ "both ranks", "all 4 ranks": a finding on every rank of the job."""
    return "both ranks" if count == 2 else f"all {count} ranks"


def on_others(others: list[dict]) -> str:
    """Where the others' figure was measured: "on rank 1" (one other), "on the other ranks"."""
    return f"on rank {others[0]['rank']}" if len(others) == 1 else "on the other ranks"


def wait_ms(seconds: float) -> str:
    """A time in collectives, in ms: whole ones from 10 ms, else a tenth (6 ms against 6 ms said nothing)."""
    return f"{seconds * 1e3:.0f}" if seconds >= 0.0095 else f"{seconds * 1e3:.1f}"


def span_ms(low: float, high: float) -> str:
    """ "20-31 ms", or "20 ms" when both read the same."""
    return f"{wait_ms(low)}-{wait_ms(high)} ms" if wait_ms(low) != wait_ms(high) else f"{wait_ms(high)} ms"


def steps(first: int | None, last: int | None) -> str:
    """ "step 3", "steps 3-4": a span of the job's steps."""
    return f"step {first}" if first == last else f"steps {first}-{last}"


def who(ranks) -> str:
    ranks = sorted(set(ranks))
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {compact_ranks(ranks)}"


def attempts_text(processes: list[dict]) -> str:
    """ ", 2 attempts (torchelastic restarted the job once)" for the headline, where there were several."""
    attempts = sorted({process.get("attempt") or 0 for process in processes})
    if len(attempts) < 2:
        return ""
    return f", {len(attempts)} attempts (torchelastic restarts; each shown apart, never compared)"


#: What a row's top operators' times measure (``top_operators_time``): a torch trace's CPU self
#: time per operator, or an NPU session's device time per operator type.
OPERATOR_TIME = {"self": "self time", "device": "device time"}


def unjudged(verdict: Mapping[str, Any]) -> str | None:
    """Where a lockstep window held too few recorded steps for any slow-rank rule to judge: that,
    and the window that can. Told instead of "no rank stands out", which would say the ranks were
    judged alike (tried: a 4-rank DDP rank sleeping 30 % of a step more, under the default one-step
    window, was "no rank stands out"). Where the ranks waited for a CPU as long as they ran
    (``machine_busy``: cputime.busy), that a small difference would not have shown."""
    needed, held = verdict.get("window_steps_needed"), verdict.get("recorded_steps")
    if needed and held is not None and not verdict.get("rounds_needed"):
        return f"{count(held, 'recorded step')} cannot tell a slow rank (--active {needed} or more can)"
    busy = verdict.get("machine_busy")  # cputime.busy
    if not busy:
        return None
    ran, waited = busy["cpu_ran_per_step_s"], busy["cpu_waited_per_step_s"]
    return (
        f"no rank stands out by more than a machine this busy lets show: the ranks' stepping threads waited for a "
        f"CPU as long as they ran or longer ({span_ms(*waited)} a step against {span_ms(*ran)} ran)"
    )
