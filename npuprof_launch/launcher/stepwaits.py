"""A rank's recorded steps one by one: what its stepping thread waited for a CPU in each, and what
it waited in collectives; and from these, in lockstep, the rank every other rank waited for in each
step of a short window.

Summed over a window, the time in collectives names a rank only when the others waited 0.3 of the
job's step longer a recorded step (lockstep._why_not_the_jobs): on a busy machine the order in
which alike ranks reach a collective moves a window's sums that much. Step by step, alike ranks take
turns. Beside two CPU hogs on 2 cores (docs/benchmarks.md, F19), in each of 48 healthy 3-step
windows of 4 and 8 gloo DDP ranks, the rank that waited least was, in one of its steps at least,
passed by another rank, or ahead of the next by no more than its own extra wait for a CPU. A 4-rank
DDP rank sleeping 30 % of a 50 ms step more than the others was ahead of every other rank in each
of its 3 steps, by 0.14-0.19 of the job's step once its wait for a CPU was taken off (in 2 of 4
runs); summed, the others' extra wait was 0.22 of a step, under the bar.

So EVERY_STEP names the rank that waited least when, in each of the window's steps, every other rank
waited longer than it by MIN_STEP of the job's median step (and findings.NOISE_S) at least, its wait
for a CPU past the others' median taken off (the machine's doing, not the job's). Only where one of
alike ranks is the least in all those steps by chance CHANCE of the time at most, where its wait for
a CPU is known in each (without it a busy machine's doing cannot be taken off), and where each rank's
waits of a step fit in the step: DDP's buckets reduced while backward computes overlap, sum to more
than the step, and are no time lost.

A wait is measured from the moment a rank reaches the collective, and each rank begins its step
when its own work after the last one is done: the tool's start of its window, on the first
recorded step, lands there too. In the same F20 run another rank was 13 ms late into the first
recorded step, reached its collective as late as the sleeper, and waited 3.2 ms against its
3.8 ms. So REACHED_LAST reads each step from its own start instead: when each rank reached the
step's first collective, on its own clock. The rank that reached it last in each of the window's
steps, after every other rank by MIN_REACH of the job's step at least (its wait for a CPU past the
others' median again taken off), is the one the others waited for. The same chance bounds it, and
overlapping collectives do not matter (the first one's start is before any of them). Its reach is
what comes before the step's first collective; extra work after a step's last one shows in the
waits only. Beside two CPU hogs, in the kept 3-step windows of F17-F20 with no slow rank (4 and 8
gloo DDP ranks: 109, 85 of them healthy runs, 24 with a stall, a spike or a slowdown of every
rank), the rank latest over the window led at its least step by -0.001 of a step at most; the 30 %
sleeper led by 0.054-0.174 of a step in each of its 6 runs (by waits it was named in 2). A 10 %
sleeper (0.016 at best) and a rank on 10 % more rows (its wait for a CPU, taken off, covers its
lead) are not found this way. Standard library only; pure.
"""

from __future__ import annotations

from npuprof_launch.common import findings, stepstats
from npuprof_launch.launcher import wording

#: The rule's name in a finding's evidence (lockstep's TOTAL_TIME, read step by step).
EVERY_STEP = "every_step"
#: The least lead a step, as a share of the job's median step: alike ranks' best, at their least
#: step, was -0.015 (F19); the 30 % sleep's 0.14 and 0.11 (and -0.09 in a third run).
MIN_STEP = 0.1
#: The most chance that one of n alike ranks is the least in all k steps, n * (1/n)**k: 4 ranks from
#: 3 steps (1 in 16), 8 from 3, 2 from 5.
CHANCE = 1 / 16
#: The rule's name for the rank that reached each step's first collective last (by its reach).
REACHED_LAST = "reached_last"
#: The least lead a step, as a share of the job's median step: half of MIN_STEP, since the reach
#: leaves out how late each rank began its step (alike ranks' best at their least step: -0.001).
MIN_REACH = 0.05
#: Where a report row says its window's collectives were all gloo's: each timed from the call on the
#: host, from the step's start (NCCL's kernels and HCCL's operations start on the device's time).
ON_CPU = "_on_cpu"
#: Where a report row holds its window's collectives (collectives.Collective each: key, group, step,
#: wait_s, start_s) while the job's view is made; report.py takes them out after.
COLLECTIVES = "_collectives"


def recorded_steps(process: dict) -> int:
    """The steps a process's windows recorded, whole."""
    return sum(
        (w.get("last_step") or w["first_step"]) - w["first_step"] + 1
        for w in process.get("windows") or ()
        if w.get("first_step") is not None
    )


def cpu_wait_by_step(process: dict) -> dict[int, float]:
    """What the process's stepping thread waited for a CPU in each of its recorded steps (the job's
    numbering): its block's wait, shared among the block's steps (each profiled step is a block of
    its own), or the bound of a block not kept."""
    found = {}
    for step, wait in _recorded_waits(process):
        low, high = wait.get("cpu_wait_steps") or (step, step)
        found[step] = wait["cpu_wait_s"] / (high - low + 1)
    return found


def cpu_wait_in(process: dict) -> tuple[float, bool]:
    """What the process's stepping thread waited for a CPU in the blocks of readings that hold its
    recorded steps (each block once; a bound where a block was not kept), 0.0 where none is known;
    and whether a bound is in it. The windows count the job's steps, the readings the process's
    (a resumed job's ``step_offset`` apart)."""
    blocks, bound = {}, False
    for step, wait in _recorded_waits(process):
        blocks[tuple(wait.get("cpu_wait_steps") or (step, step))] = wait["cpu_wait_s"]
        bound = bound or bool(wait.get("cpu_wait_at_most"))
    return float(sum(blocks.values())), bound


def cpu_excess(process: dict, others: list[dict]) -> float:
    """What ``process`` waited for a CPU in its recorded steps past the others' median (evidence:
    the collectives' test has taken it off already)."""
    theirs = sorted(sum(cpu_wait_by_step(p).values()) for p in others)
    return max(0.0, sum(cpu_wait_by_step(process).values()) - stepstats.quantile(theirs, 0.5)) if theirs else 0.0


def _recorded_waits(process: dict):
    """``(step, its block's wait for a CPU)`` for each recorded step whose block is known (the job's
    numbering; the readings count the process's steps, a resumed job's ``step_offset`` apart)."""
    offset = process.get("step_offset") or 0
    for window in process.get("windows") or ():
        first = window.get("first_step")
        if first is None:
            continue
        for step in range(first, (window.get("last_step") or first) + 1):
            wait = stepstats.cpu_wait_of(process.get("cpu_wait"), step - offset)
            if wait:
                yield step, wait


def collective_by_step(process: dict) -> dict[int, float]:
    """What the process waited in its window's collectives, step by step (the job's numbering):
    each collective's wait, from the rank reaching it to its end."""
    found: dict[int, float] = {}
    for _key, _group, step, wait_s, _start_s in process.get(COLLECTIVES) or ():
        found[step] = found.get(step, 0.0) + wait_s
    return found


def every_step(process: dict, others: list[dict], step_s: float) -> dict | None:
    """Whether every other rank waited longer than ``process`` in each step of the window (see the
    module's docstring), ``step_s`` the job's median step: ``named``, ``steps``, ``least_s`` and
    ``most_s`` (its lead over the next rank at its least and its most step, its wait for a CPU past
    the others' taken off), ``needed_s``, and ``behind``: the steps it led in by nothing; None where
    it cannot be judged."""
    ranks = [process, *others]
    waits = [collective_by_step(p) for p in ranks]
    steps = sorted(set.intersection(*(set(w) for w in waits)))
    if not steps or len(ranks) * (1 / len(ranks)) ** len(steps) > CHANCE:
        return None
    for one, wait in zip(ranks, waits):
        recorded_s = one["window_s"] / max(recorded_steps(one), 1)
        if any(wait[step] > recorded_s for step in steps):
            return None  # overlapped collectives: their waits are not time lost
    own = cpu_wait_by_step(process)
    theirs = [cpu_wait_by_step(p) for p in others]
    if any(step not in own for step in steps):
        return None
    leads = []
    for step in steps:
        machine = own[step] - stepstats.quantile(sorted(t.get(step, 0.0) for t in theirs), 0.5)
        leads.append(min(w[step] for w in waits[1:]) - waits[0][step] - max(0.0, machine))
    needed = max(findings.NOISE_S, MIN_STEP * step_s)
    least, most = min(leads), max(leads)
    verdict = {"named": least >= needed, "steps": len(steps), "least_s": least, "most_s": most, "needed_s": needed}
    return {**verdict, "behind": sum(lead <= 0 for lead in leads)}


def text(verdict: dict, step_s: float) -> str:
    """ "in each of its 3 recorded steps every other rank waited longer in collectives than it, by
    10.2-14.1 ms (0.14-0.19 of the job's 72.4 ms median step) past its own wait for a CPU"; or, not
    named, by how much at its least step, against what would name it."""
    if verdict["named"]:
        share = f"{verdict['least_s'] / step_s:.2f}-{verdict['most_s'] / step_s:.2f}"
        return (
            f"in each of its {verdict['steps']} recorded steps every other rank waited longer in collectives than "
            f"it, by {verdict['least_s'] * 1e3:.1f}-{verdict['most_s'] * 1e3:.1f} ms ({share} of the job's "
            f"{step_s * 1e3:.1f} ms median step) past its own wait for a CPU"
        )
    if verdict["least_s"] > 0:
        return (
            f"step by step, every other rank waited longer than it in each of its {verdict['steps']} recorded steps, "
            f"by {verdict['least_s'] * 1e3:.1f} ms at the least past its own wait for a CPU, "
            f"{verdict['needed_s'] * 1e3:.1f} ms needed"
        )
    return (
        f"step by step, another rank waited no longer than it in {verdict['behind']} of its {verdict['steps']} "
        "recorded steps, once its own wait for a CPU was taken off"
    )


def reach_by_step(process: dict, keys: dict[int, set[str]] | None = None) -> dict[int, float]:
    """When the process reached each recorded step's first collective, from the step's start (the
    job's numbering); of the collectives ``keys`` holds for that step, where given."""
    found: dict[int, float] = {}
    for key, _group, step, _wait_s, start_s in process.get(COLLECTIVES) or ():
        if keys is None or key in keys.get(step, ()):
            found[step] = min(found.get(step, start_s), start_s)
    return found


def reached_last(processes: list[dict], step_s: float) -> dict | None:
    """The rank that reached each step's first collective last (REACHED_LAST, see the module's
    docstring), ``step_s`` the job's median step: ``rank``, ``named``, ``waited_least`` (over the
    window, less than every other rank: named only then), ``steps``, ``least_s`` and
    ``most_s`` (its lead over the next rank at its least and its most step, its wait for a CPU past
    the others' taken off), ``needed_s``, and ``behind``: the steps it led in by nothing; None where
    it cannot be judged: too few steps for the chance, a collective no rank shares with all, a wait
    for a CPU not known, or collectives not gloo's (ON_CPU: a device's kernel or operation starts
    when the device gets to it, which the host's step boundaries do not bound; unverified there)."""
    if len(processes) < 2 or not all(p.get(ON_CPU) for p in processes):
        return None
    held: list[dict[int, set[str]]] = [{} for _ in processes]  # step -> the keys of one process's collectives there
    for one, process in zip(held, processes):
        for key, _group, step, _wait_s, _start_s in process.get(COLLECTIVES) or ():
            one.setdefault(step, set()).add(key)
    common = {step: set.intersection(*(one.get(step, set()) for one in held)) for step in held[0]}
    reaches = [reach_by_step(p, common) for p in processes]
    steps = sorted(set.intersection(*(set(reach) for reach in reaches)))
    if not steps or len(processes) * (1 / len(processes)) ** len(steps) > CHANCE:
        return None
    last = max(range(len(processes)), key=lambda i: sum(reaches[i][step] for step in steps))
    cpu = [cpu_wait_by_step(p) for p in processes]
    if any(step not in cpu[last] for step in steps):
        return None
    others = [i for i in range(len(processes)) if i != last]
    leads = []
    for step in steps:
        machine = cpu[last][step] - stepstats.quantile(sorted(cpu[i].get(step, 0.0) for i in others), 0.5)
        leads.append(reaches[last][step] - max(reaches[i][step] for i in others) - max(0.0, machine))
    needed = max(findings.NOISE_S, MIN_REACH * step_s)
    least, most = min(leads), max(leads)
    # ...and over the window it waited least: a rank late at the first collective that waits as
    # long at a later one (work of the others' moved after it) holds no one back.
    least_wait = all(processes[last]["collective_s"] < processes[i]["collective_s"] for i in others)
    return {
        "rank": processes[last]["rank"],
        "named": least >= needed and least_wait,
        "waited_least": least_wait,
        "steps": len(steps),
        "least_s": least,
        "most_s": most,
        "needed_s": needed,
        "behind": sum(lead <= 0 for lead in leads),
    }


def reach_text(verdict: dict, step_s: float) -> str:
    """ "in each of its 3 recorded steps it reached the step's first collective after every other
    rank, by 9.3-14.5 ms (0.13-0.20 of the job's 71.2 ms median step) past its own wait for a CPU";
    or, not named, how near it came."""
    steps, rank = verdict["steps"], verdict["rank"]
    if verdict["named"]:
        share = f"{verdict['least_s'] / step_s:.2f}-{verdict['most_s'] / step_s:.2f}"
        return (
            f"in each of its {steps} recorded steps it reached the step's first collective after every other rank, "
            f"by {verdict['least_s'] * 1e3:.1f}-{verdict['most_s'] * 1e3:.1f} ms ({share} of the job's "
            f"{step_s * 1e3:.1f} ms median step) past its own wait for a CPU"
        )
    if verdict["least_s"] >= verdict["needed_s"]:  # and it did not wait least
        return (
            f"from each step's start, rank {rank} reached the first collective last in each of its {steps} recorded "
            "steps, but over the window it waited in collectives no less than another rank"
        )
    if verdict["least_s"] > 0:
        return (
            f"from each step's start, rank {rank} reached the first collective last in each of its {steps} recorded "
            f"steps, by {verdict['least_s'] * 1e3:.1f} ms at the least past its own wait for a CPU, "
            f"{verdict['needed_s'] * 1e3:.1f} ms needed"
        )
    return (
        f"from each step's start, rank {rank} reached the first collective latest over the window, but after "
        f"every other rank in {steps - verdict['behind']} of its {steps} recorded steps only, once its own wait "
        "for a CPU was taken off"
    )


def reach_finding(process: dict, measured: list[dict], verdict: dict, short: dict) -> dict:
    """The finding of the rank each step's reach names (``verdict`` with the job's ``step_s``), its
    time in collectives beside the others'; ``short``: what each collective apart lacked."""
    others = [p for p in measured if p is not process]
    waits = sorted(p["collective_s"] for p in others)
    steps = process.get("window_label") or "its window"
    return {
        "rank": process["rank"],
        "method": "collectives",
        "rule": REACHED_LAST,
        "collective_s": process["collective_s"],
        "others_collective_s": stepstats.quantile(waits, 0.5),
        "others_min_collective_s": waits[0],
        "steps": verdict["steps"],
        "test": "the last to reach each step's first collective, in every step, by a share of the job's step",
        "level": MIN_REACH,
        **{f"lead_{key}": verdict[key] for key in ("least_s", "most_s", "needed_s")},
        **short,
        "evidence": f"in {steps} it spent {wording.wait_ms(process['collective_s'])} ms in collectives against "
        f"{wording.span_ms(waits[0], waits[-1])} {wording.on_others(others)}; "
        f"{reach_text(verdict, verdict['step_s'])}: the others wait for it",
    }
