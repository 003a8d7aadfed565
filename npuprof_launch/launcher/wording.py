"""The job's answer in words, written once: the summary, ``--check``, the page and the report's
reasons all say a count, the headline and "incomplete" through here, so they never disagree."""

from __future__ import annotations

from npuprof_launch.launcher import jobview, runs


def count(n: int, noun: str) -> str:
    """``1 process``, ``2,048 processes``, ``3 steps``."""
    plural = noun + ("es" if noun.endswith("process") else "s")
    return f"1 {noun}" if n == 1 else f"{n:,} {plural}"


def incomplete(process: dict) -> bool:
    """Whether a process recorded fewer windows than it meant to."""
    return (process.get("windows_completed") or 0) < (process.get("windows_planned") or 0)


def flagged(process: dict) -> bool:
    """Whether a process's row has something to say: slow, errors, ended without handlers, windows missing."""
    return bool(
        process.get("slowest_rank") or process.get("errors") or process.get("ended_note") or incomplete(process)
    )


def headline(processes: list[dict], job: dict) -> str:
    """One line of what was profiled, and of a job that stopped stepping: the summary's first line,
    the page's title and the line under its heading."""
    recorded = [p for p in processes if p.get("windows")]
    text = f"{count(runs.process_count(recorded), 'process')} profiled"
    if not processes:
        return text
    ranks = sorted({p["rank"] for p in processes if p.get("rank") is not None})
    hosts = count(job.get("hosts") or 1, "host")
    where = f"{jobview.who(ranks)} on {hosts}" if ranks else hosts
    done = f"{job.get('windows_completed', 0)} of {job.get('windows_planned', 0)} windows complete"
    text = f"{text} ({where}{runs.attempts_text(processes)}), {done}"
    for stall in job.get("stalls") or ():
        whose = jobview.who(stall["ranks"]) if stall.get("ranks") else count(stall["processes"], "process")
        text += f"; the job stopped stepping on {whose} (after step {stall['since_step']} or a few more)"
    return text
