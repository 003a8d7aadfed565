"""The next runs the answer suggests: a window on the job's worst spike, one on the slow rank, one
on a slowdown no window recorded. Each keeps every other option the run was given and starts the
way the run did, so that it works as printed.
"""

from __future__ import annotations

import shlex

from npuprof_launch.common import names, options, stages
from npuprof_launch.launcher import periods, wording

#: The options a suggested run sets itself; every other option the run was given is kept.
SUGGESTION_SETS = (*names.SCHEDULE_KEYS, "ranks", "total-steps", "on-demand")


def of_job(
    job: dict,
    command: list[str] | None,
    given: dict,
    route: str = "prefix",
    waiting: bool = False,
    recorded: int | None = None,
) -> list[str]:
    """The next runs: a window on the worst spike, and one on the slowest rank; every other option
    the run was given (its --output-dir, --scenario, --stage, --backend, ...) is kept, and the run
    starts the way this one did (the prefix, or ``--print-env`` for a launch script), so each
    command works as printed. The spike is the job's worst (job["spikes"] comes worst first): one
    beside a window's aftercare is among them only when its step times tell it is the job's own
    (findings.spike_beside_aftercare), and the run suggested profiles that step with no aftercare
    beside it (its own comes after its window). Preferring a spike clear of the aftercare sent a
    loaded machine's 5x step ahead of the job's 750x stall (CI, the print-env route's test).

    The window holds the spikes of the step before and after it too, and ``--ranks`` narrows it
    only where the ranks do not wait for each other (``waiting``: collectives in the windows): one
    rank's 150 ms stall in step 25 of a 2-rank DDP job made rank 0's step 26 the worst spike, and
    the run suggested on rank 0's step 26 alone held only the wait.

    A spike of the job's period gets no run where a window recorded a step of that period
    (``recorded``: the slowest step a window recorded, over the spike bar): each run on the next
    one recorded another like it, in circles."""
    found = []
    period = job.get("spike_period") or {}
    again = bool(period and job["spikes"]) and all(
        periods.holds(period, step) for step in (recorded, job["spikes"][0]["step"] if job["spikes"] else None)
    )
    if job["spikes"] and not again:
        spike = job["spikes"][0]
        near = [
            s for s in job["spikes"] if s.get("stage") == spike.get("stage") and abs(s["step"] - spike["step"]) <= 1
        ]
        first, last = min(s["step"] for s in near), max(s["step"] for s in near)
        ranks = sorted({rank for s in near for rank in s["ranks"]})
        everyone = len(ranks) >= job["ranks"] or waiting
        where = [] if everyone or not ranks else ["--ranks", wording.rank_list(ranks)]
        found.append(_run(where, spike, first - 1, last - first + 1, command, given, route))
    if job["slow_ranks"]:
        slow = job["slow_ranks"][0]
        skip = max(1, min(job["steps"] // 2, 10))
        found.append(_run(["--ranks", str(slow["rank"])], slow, skip, 2, command, given, route))
    return found


def slowdown_runs(job: dict, slowdowns: list[dict], command: list[str] | None, given: dict, route: str) -> list[str]:
    """The next run on the worst slowdown, where no window recorded its slow steps: the two after its
    first (placed within a block of steps), on its ranks unless every rank slowed (the windows run
    before it are its before). Found at the end, the slowdowns come after the other suggestions."""
    if not slowdowns or slowdowns[0].get("recorded"):  # slowdowns.recorded: its steps a window holds
        return []
    slow = slowdowns[0]
    last = (slow.get("back_at") or job["steps"] + 1) - 1
    ranks = slow["ranks"]
    where = (
        [] if slow["every_rank"] or not ranks or len(ranks) >= job["ranks"] else ["--ranks", wording.rank_list(ranks)]
    )
    skip = slow["step"] if last >= slow["step"] + 2 else slow["step"] - 1  # past its first step, where it holds
    return [_run(where, slow, skip, min(2, last - skip), command, given, route)]


def _run(
    where: list[str], finding: dict, skip: int, active: int, command: list[str] | None, given: dict, route: str
) -> str:
    """One suggested command: these steps, on these ranks, of the job or of the finding's stage.

    A stage's own ``skip-first``/``active`` outrank the flags, so a stage's steps are chosen in
    its declaration; the other stages are kept as they were given (a stage declared only in
    the environment is declared on the command from its record). After the variables' route
    (``--print-env``, or NPU_PROF_* exported by hand) the command is the ``eval`` line for the
    launch script: the job's own command is not known there."""
    stage = finding.get("stage")
    if stage is None:
        head = ["--skip-first", str(skip), "--active", str(active), *where]
        kept = options.as_flags(given, SUGGESTION_SETS)
    else:
        head = list(where)
        declared = {stages.split(text)[0]: text for text in stages.split_list(str(given.get("stage") or ""))}
        own = declared.get(stage, f"{stage}={finding.get('target')}")
        declared[stage] = stages.with_selection(own, [("skip-first", str(skip)), ("active", str(active))])
        kept = options.as_flags({**given, "stage": stages.SEPARATOR.join(declared.values())}, SUGGESTION_SETS)
    if route == "env":
        return f'eval "$(npuprof-run --print-env {shlex.join([*head, *kept])})"'
    tail = f"-- {shlex.join(command)}" if command else "-- COMMAND"
    return " ".join(["npuprof-run", *([shlex.join([*head, *kept])] if head or kept else []), tail])
