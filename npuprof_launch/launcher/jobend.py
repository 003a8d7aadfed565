"""The job's last step, where the ranks that ended it first leave: a spike there on some ranks
of a lockstep group, and none on the others, is told apart and never named.

In lockstep a rank's stall before the step's last collective holds every rank in that step, and
a stall after it shows on the next step of the others: the job's last step has no next step. There
the ranks done first exit (the interpreter's teardown, the process group's, the tool's end record)
beside those still finishing their last collective and optimizer step, and a stalled rank's
threads there wait for the ones exiting or for a core: its stepping thread sleeps in the
collective's wait, so its own wait for a CPU does not show it. Measured beside two CPU hogs on 2
cores (2026-12-06, 182 kept runs of the findings benchmark): the last step of healthy DDP jobs up
to 9x the median on some ranks and their usual time on the others (a 4-rank job evaluating every
10 steps: 128 ms on ranks 2-3 against a 34 ms median, 27-28 ms on ranks 0-1: named a spike), and
never a last step over 1.9x on ranks that train alone. The same job bare and under the tool ended
alike: it is the job's end, not the tool's. Undecidable, the job's or its exit's: a note, never a
finding nor a suggested run. A last step that spiked on every rank of the group (a stall that held
them all) is judged as any step is.
"""

from __future__ import annotations

from collections.abc import Callable

from npuprof_launch.common import stepstats
from npuprof_launch.launcher import answer, lockstep, wording

#: The key of such a spike in ``job["undecidable_spikes"]``.
JOB_END = "job_end"


def ended_first(spiked: list[dict], stage: list[dict], step: int, last_s: Callable[[dict], float | None]) -> list[dict]:
    """The processes of ``stage`` (one stage's, or the job's) that ended ``step``, the last step of
    every one of ``spiked`` and of theirs, without a spike there, each in lockstep with one of
    ``spiked`` (both windows read: lockstep.together). Empty where ``step`` is not the spiked ones'
    last (``steps``, the process's own numbering as its spikes'). ``last_s``: a process's last step
    time, None where its step times were not read (its kept spikes, the longest few, tell then)."""
    if not spiked or any(process.get("steps") != step for process in spiked):
        return []
    ids = {id(process) for process in spiked}
    return [
        process
        for process in stage
        if id(process) not in ids
        and process.get("steps") == step
        and _unspiked(process, step, last_s(process))
        and any(lockstep.together(process, one) for one in spiked)
    ]


def _unspiked(process: dict, step: int, last_s: float | None) -> bool:
    stats = process["step_stats"]
    if last_s is not None:
        return last_s <= stepstats.spike_bar(stats["median_s"])
    return all(spike["step"] != step for spike in stats["spikes"])


def told_apart(spike: dict, ended: list[dict]) -> dict:
    """The spike (jobview's group of a step's spikes) marked JOB_END, with why it is undecidable and
    the ranks that ended the step without one (``ended_ranks``)."""
    ranks = sorted(int(process["rank"]) for process in ended if process.get("rank") is not None)
    return {**spike, JOB_END: True, "ended_ranks": ranks, "undecidable": _reason(ranks)}


def _reason(ranks: list[int]) -> str:
    return (
        f"{wording.who(ranks) if ranks else 'the others'} ended it without a spike (in lockstep a stall "
        "before the step's last collective holds every rank), and after it the ranks done first exit "
        "beside those still in it: undecidable, the job's or their exit's"
    )


def notes(undecidable: list[dict]) -> list[dict]:
    """A note for each spike of the job's last step (jobview's undecidable spikes marked JOB_END)."""
    told = []
    for spike in sorted((s for s in undecidable if s.get(JOB_END)), key=lambda s: s["step"]):
        on = f" on {wording.who(spike['ranks'])}" if spike["ranks"] else ""
        line = f"step {spike['step']}, the job's last ({spike['vs_median']:.1f}x the median{on}): "
        evidence = {key: spike.get(key) for key in ("step", "step_s", "vs_median", "ended_ranks")}
        text = line + spike["undecidable"]
        told.append(answer.item("job_end_steps", text, spike["ranks"], [spike["step"]], **evidence))
    return told
