"""In lockstep, the rank the others wait for, told by the time its stepping thread ran on a CPU.

Each collective apart (collectives.py) reads who arrived last; on a shared machine that order moves
with the scheduler: beside two CPU hogs on 2 cores, a 4-rank DDP rank computing on 30 % more rows
was the last in about half of the rounds, and no test on orders alone names it from 13 rounds
(docs/benchmarks.md, F11). The kernel keeps, per thread, the time it ran (inprocess/cpuwait.py reads
it at each profiled step's boundaries); that time is the rank's own work, whoever held the cores. In
the same runs that rank's stepping thread ran 1.24-1.32x the others' median in every one of its
steps, and alike ranks differed by 5 % at most (rank 3 of a healthy run, 24.8 ms against 23.7 ms,
the longest in 10 of 13 steps).

So a rank is named when its thread ran longest in more of the window's steps than chance allows
among alike ranks (1 in n each step: a binomial test, times the ranks tested, as collectives.judge's)
and its median step ran RATIO times the others' median at least, and NOISE_S longer: a margin three
times what alike ranks showed. Then the next among the rest, so that two slow ranks are both named.
Its extra run time a step is the effect. lockstep.py adds what this cannot know: that the rank did
not wait longer in collectives than the others (a thread that spins while it waits runs longer for
waiting). The steps are the job's, matched across ranks; each rank's time is on its own clock.
Standard library only, linear in ranks times steps (``--check`` over 1024 ranks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from npuprof_launch.common import findings, stepstats
from npuprof_launch.launcher import collectives

#: The rules a finding names by (its ``rule``): a stepping thread's time on a CPU, an NPU's computing time.
CPU_TIME = "cpu_time"
DEVICE_TIME = "device_time"
#: The test's level, as the collectives' (times the ranks tested).
LEVEL = collectives.LEVEL
TEST = "the longest time on a CPU in more steps than chance: binomial against 1 in n, times the ranks tested"
#: The least ratio of the rank's median step on a CPU to the others' median: alike ranks beside two
#: CPU hogs differed by up to 1.05 (a rank's cache and core shared with others, for a window).
RATIO = 1.15
#: ...and the least extra time a step: less is within one time slice of the scheduler.
NOISE_S = 0.001
#: Where the machine is busy (busy(): the ranks' threads waited for a CPU as long as they ran) the
#: rank's median is RATIO times every other rank's, not only their median (each_other()): there the
#: scheduler's placement moved alike ranks' threads by up to 1.32x (F22: four ranks training alone
#: beside two CPU hogs, an alike rank named before the one on 30 % more rows, at 1.20x), and by
#: 1.15x beside six hogs, where a second, alike rank was named beside the rank on 30 % more rows.


def judge(ran: Mapping[int, Mapping[int, float]], *, level: float = LEVEL, each: bool = False) -> dict[str, Any]:
    """Which ranks, if any, ran longer on a CPU than chance allows, from ``ran``: each rank's time on
    a CPU by step (the job's numbering), by RATIO the others' median at least, and each other
    rank's where ``each`` (each_other(): a busy machine).

    Compared: the steps every rank holds. Returns ``named`` (each with ``rank``, ``longest_in``,
    ``steps``, ``ranks_compared``, ``p_value``, ``ran_per_step_s``, ``others_ran_per_step_s``,
    ``ratio``, ``extra_per_step_s``), ``top`` (the first rank tested, named or not, with the same),
    ``steps``, ``level``, ``test``, and ``needed``: the steps a window must hold for a rank the
    longest in DESIGN_SHARE of them to pass (collectives.least_rounds)."""
    ranks = sorted(ran)
    steps = sorted(set.intersection(*(set(ran[rank]) for rank in ranks))) if ranks else []
    verdict: dict[str, Any] = {"named": [], "top": None, "steps": len(steps), "level": level, "test": TEST}
    verdict["needed"] = collectives.least_rounds(max(len(ranks), 2), max(len(ranks), 1), level)
    if len(ranks) < 2 or not steps:
        return verdict
    medians = {rank: stepstats.quantile(sorted(ran[rank][step] for step in steps), 0.5) for rank in ranks}
    left = list(ranks)
    while len(left) >= 2:
        found = _longest(ran, steps, left, medians, tested=len(ranks))
        if verdict["top"] is None:
            verdict["top"] = found
        if found["p_value"] >= level or found["ratio"] < RATIO or found["extra_per_step_s"] < NOISE_S:
            break
        if each and found["ran_per_step_s"] < RATIO * found["others_most_per_step_s"]:
            break
        verdict["named"].append(found)
        left.remove(found["rank"])
    return verdict


def _longest(ran: Mapping[int, Mapping[int, float]], steps: list[int], ranks: list[int], medians, tested: int) -> dict:
    """The rank of ``ranks`` whose thread ran longest in most ``steps``, with its test and effect. A
    step two ranks tie for the longest counts for none, as a round of collectives does (an NPU whose
    step trace held no computing, 0.0 a step on every rank, had its first rank "the longest in 12 of
    12 steps")."""
    counts = dict.fromkeys(ranks, 0)
    for step in steps:
        first, second = sorted(ranks, key=lambda rank: ran[rank][step], reverse=True)[:2]
        if ran[first][step] > ran[second][step]:
            counts[first] += 1
    rank = max(ranks, key=lambda one: (counts[one], medians[one]))
    theirs = sorted(medians[one] for one in ranks if one != rank)
    others = stepstats.quantile(theirs, 0.5)
    p_value = min(1.0, tested * findings.binomial_tail(counts[rank], len(steps), 1 / len(ranks)))
    return {
        "rank": rank,
        "longest_in": counts[rank],
        "steps": len(steps),
        "ranks_compared": len(ranks),
        "p_value": p_value,
        "ran_per_step_s": medians[rank],
        "others_ran_per_step_s": others,
        "others_most_per_step_s": theirs[-1],
        "ratio": round(medians[rank] / others, 3) if others > 0 else 0.0,
        "extra_per_step_s": medians[rank] - others,
    }


def text(named: dict) -> str:
    """ "31.0 ms a step against 24.9 ms on the others (1.25x), the longest in 13 of 13 steps (1 in 4
    by chance; p = 2.7e-08, level 0.001)"."""
    return (
        f"{named['ran_per_step_s'] * 1e3:.1f} ms a step against {named['others_ran_per_step_s'] * 1e3:.1f} ms on "
        f"the others ({named['ratio']:.2f}x), the longest in {named['longest_in']} of {named['steps']} steps (1 in "
        f"{named['ranks_compared']} by chance; p = {named['p_value']:.2g}, level {LEVEL:g})"
    )


def ran_by_step(process: dict, reading: str = "ran") -> dict[int, float]:
    """The time the process's stepping thread ran on a CPU in each step the record kept (its windows'
    steps and those after each: inprocess/cpuwait.py), in the job's numbering (the readings count the
    process's steps), less the steps of warm-up (2-4) and the tool's own steps beside each window: the
    one before it and the one after it (the profiler's stop and export). ``reading="waited"``: the
    time it waited for a CPU in the same steps (heldback.py)."""
    offset = process.get("step_offset") or 0
    kept = (process.get("cpu_wait") or {}).get(reading) or ()
    ran = {int(step) + offset: float(seconds) for step, seconds in kept if step > 1 + stepstats.WARMUP_STEPS}
    tool: set[int] = set()
    for window in process.get("windows") or ():
        first = window.get("first_step")
        if first is not None:
            tool.update((first - 1, (window.get("last_step") or first) + 1))
    return {step: seconds for step, seconds in ran.items() if step not in tool}


def confirm_slow(verdict: dict, longest_ran: dict | None) -> dict | None:
    """Out of lockstep, the step times' verdict (findings.slow_rank) made a finding where they
    overlap: the candidate's median step is longer by the least effect worth a run, but a busy
    machine moves alike ranks' steps so much that the count is within chance. When the candidate's
    stepping thread ran longer on a CPU than chance allows (``longest_ran``: longest(), the same
    rank), its steps are slower for its own work, not for where the scheduler put it. Beside two CPU
    hogs, rank 1 of two independent ranks on 30 % more rows was above the other's median in 21 of 31
    steps (p = 0.071). Returns the finding's verdict, or None."""
    if "rank" not in verdict or verdict["p_value"] < findings.LEVEL or verdict["ratio"] < findings.SLOW_RANK_RATIO:
        return None
    if verdict["step_s"] - verdict["others_step_s"] < findings.NOISE_S:
        return None
    if longest_ran is None or longest_ran["rank"] != verdict["rank"]:
        return None
    rule = longest_ran.get("rule", CPU_TIME)
    evidence = (
        f"median step {verdict['step_s'] * 1e3:.1f} ms against {verdict['others_step_s'] * 1e3:.1f} ms on the other "
        f"ranks ({verdict['ratio']:.2f}x), above their median in {verdict['above_others_in']} of {verdict['steps']} "
        f"steps (p = {verdict['p_value']:.2g}: a busy machine's spread); {did(rule)} {text(longest_ran)}"
    )
    return {**verdict, **evidence_of(longest_ran), "found": True, "rule": rule, "evidence": evidence}


def ratio_of(processes: list[dict], rank: int) -> float | None:
    """``rank``'s median time on a CPU a step over the others' median, over the steps every rank
    kept (ran_of); None where one kept none."""
    ran = ran_of(processes)
    return stepstats.ratio_among(ran, rank) if ran else None


def each_other(processes: list[dict], rule: str = CPU_TIME) -> bool:
    """Whether a rank is named by its time on a CPU only over each other rank's by RATIO: on a busy
    machine (busy()); an NPU's computing time is judged over their median (the host's cores do not
    share the device)."""
    return rule == CPU_TIME and busy(processes) is not None


def busy(processes: list[dict]) -> dict | None:
    """Where the ranks' stepping threads waited for a CPU a step as long as they ran or longer (the
    median rank's, over the steps each kept: ran_by_step): half the time one could run, another
    thread held its core, for the whole job. There a difference in work of a few tens of percent is
    within what the scheduler moves: beside six CPU hogs on 2 cores a 4-rank DDP rank on 30 % more
    rows ran 1.00x the others' time on a CPU (41 ms a step, each rank waiting 49-71 ms), and alike
    ranks ran 1.15x and 1.17x the others' (the median rank's, not each: a rank that waited 37 ms
    against its 33 ms ran was as busy as the one that waited 37 against 31). ``{"cpu_ran_per_step_s":
    [least, most], "cpu_waited_per_step_s": [least, most]}``, or None where a process kept no
    readings."""
    medians = []
    for process in processes:
        ran, waited = ran_by_step(process), ran_by_step(process, "waited")
        if not ran or not waited:
            return None
        medians.append(tuple(stepstats.quantile(sorted(times.values()), 0.5) for times in (ran, waited)))
    if len(medians) < 2 or stepstats.quantile(sorted(waited / ran if ran else 0.0 for ran, waited in medians), 0.5) < 1:
        return None
    ran_s, waited_s = sorted(ran for ran, _ in medians), sorted(waited for _, waited in medians)
    return {
        "cpu_ran_per_step_s": [round(ran_s[0], 6), round(ran_s[-1], 6)],
        "cpu_waited_per_step_s": [round(waited_s[0], 6), round(waited_s[-1], 6)],
    }


def ran_of(processes: list[dict], reading: str = "ran") -> dict[int, dict[int, float]] | None:
    """Each process's time on a CPU by step (ran_by_step; its wait for a CPU with ``reading="waited"``),
    by rank; None where a process kept none or two rows are one rank's: the judge compares ranks
    over the steps they all hold."""
    return _every_rank({p["rank"]: ran_by_step(p, reading) for p in processes}, len(processes))


def device_of(processes: list[dict], device: str) -> dict[int, dict[int, float]] | None:
    """Each process's NPU computing time by step (the row's ``device`` key: windowcheck.py, from the
    step trace), by rank, less the steps of warm-up (2-4) as ran_by_step leaves them out; None as
    ran_of."""
    warm = 1 + stepstats.WARMUP_STEPS
    by_rank = {p["rank"]: {s: t for s, t in (p.get(device) or {}).items() if s > warm} for p in processes}
    return _every_rank(by_rank, len(processes))


def _every_rank(by_rank: dict[int, dict[int, float]], processes: int) -> dict[int, dict[int, float]] | None:
    """``by_rank`` where the ``processes`` rows made as many ranks and each rank kept a time."""
    return by_rank if len(by_rank) == processes and all(by_rank.values()) else None


def busier(more: dict | None, by_rank: Mapping[int, list[float]]) -> dict | None:
    """Out of lockstep, where the step times name no rank: the rank whose stepping thread ran longer
    on a CPU than chance allows (``more``: longest()), named the slowest by its own work where its
    median step is no shorter than the others' median (``by_rank``: each rank's step times, the
    same steps). Beside two CPU hogs on 2 cores, four ranks training alone, one on 30 % more rows:
    its thread ran 1.28x, the longest in 21 of 21 steps, and its median step was 62.5 ms against
    59.2-61.5 ms on two others and 46.3 ms on the fourth; the others waited for a CPU while it
    computed, so the share of the cores the scheduler gave each set the step times, and the step
    test named none. A rank whose steps are shorter than the others' is not named: there its extra
    work costs the job nothing. Returns the finding's verdict, or None."""
    if more is None or more["rank"] not in by_rank or len(by_rank) < 2:
        return None
    medians = {rank: stepstats.quantile(sorted(times), 0.5) for rank, times in by_rank.items() if times}
    own = medians.get(more["rank"])
    theirs = sorted(step_s for rank, step_s in medians.items() if rank != more["rank"])
    others = stepstats.quantile(theirs, 0.5) if theirs else 0.0
    if own is None or not theirs or own < others:
        return None
    evidence = (
        f"by its own work: {did(more['rule'])} {text(more)}; its median step, {own * 1e3:.1f} ms "
        f"against {theirs[0] * 1e3:.1f}-{theirs[-1] * 1e3:.1f} ms on the others, is no shorter: on this machine "
        "the share of the cores each rank got set the step times"
    )
    return {
        "found": True,
        "rank": more["rank"],
        "steps": more["steps"],
        "ranks_compared": more["ranks_compared"],
        "step_s": own,
        "others_step_s": others,
        "ratio": more["ratio"],
        "test": TEST,
        "level": LEVEL,
        "p_value": more["p_value"],
        **evidence_of(more),
        "rule": more.get("rule", CPU_TIME),
        "evidence": evidence,
    }


def work_by_step(processes: list[dict], on_cpu: bool, device: str) -> tuple[dict[int, dict[int, float]] | None, str]:
    """Each rank's own work by step and the rule it names by: its stepping thread's time on a CPU
    where ``on_cpu`` (every rank's collectives are gloo's; with NCCL that thread's time is launches
    and spins: CPU_TIME), else its NPU's computing time where every process holds it under the key
    ``device`` (DEVICE_TIME: the step trace's Computing, the device's work whoever held the host's
    cores); None where neither."""
    return (ran_of(processes), CPU_TIME) if on_cpu else (device_of(processes, device), DEVICE_TIME)


def longest(processes: list[dict], device: str = "") -> dict | None:
    """The first rank the judge names among ``processes`` (its thread ran longer on a CPU than
    chance allows, by the margin): the evidence that a rank slower than the others has more work,
    not less of the cores; its ``rule`` says which time. Where every process profiled an NPU, its
    device's computing time (under the key ``device``) stands for the thread's, which there is
    launches and waits. None where it names none, and where a process kept no time."""
    rule, ran = CPU_TIME, ran_of(processes)
    if device and processes and all(p.get("backend") == "npu" for p in processes):
        rule, ran = DEVICE_TIME, device_of(processes, device)
    named = judge(ran, each=each_other(processes, rule))["named"] if ran is not None else []
    return {**named[0], "rule": rule} if named else None


def did(rule: str) -> str:
    """What a time of ``rule`` is of, as the evidence says it: "its stepping thread ran on a CPU"."""
    return "its NPU computed" if rule == DEVICE_TIME else "its stepping thread ran on a CPU"


def evidence_of(named: dict) -> dict:
    """A judge's verdict on a rank as a slow-rank finding's fields: ``cpu_longest_in``, ..."""
    return {f"cpu_{key}": named[key] for key in ("longest_in", "steps", "p_value", "ratio", "ran_per_step_s")}


def named_by_sends(measured: list[dict], verdict: dict, rule: str) -> list[tuple[dict, dict]]:
    """Where the ranks' communication held no collective to count (a pipeline's sends and receives,
    tracecollectives.POINT_TO_POINT), so no round can say whom the others waited for: the first rank
    ``verdict`` (judge) names, when it waited in its sends and receives no longer than the others'
    median (a rank that waits more is no one's wait), as ``(process, finding)``. Tried: 4 gloo
    pipeline stages beside two CPU hogs, stage 2 on twice the layers: its thread 1.52x the others',
    the longest in 33 of 34 steps, 430 ms in sends and receives against 313-582 ms; alike stages:
    no rank by time on a CPU."""
    for named in verdict["named"][:1]:
        process = next(p for p in measured if p["rank"] == named["rank"])
        typical = stepstats.quantile(sorted(p["collective_s"] for p in measured if p is not process), 0.5)
        if process["collective_s"] > typical:
            return []
        window = process.get("window_label") or "its window"
        beside = " and the steps beside it" if rule == CPU_TIME else ""  # the NPU's: the window's steps only
        evidence = (
            f"{did(rule)} {text(named)} ({window}{beside}), and waited "
            f"{process['collective_s'] * 1e3:.0f} ms in sends and receives against {typical * 1e3:.0f} ms on the "
            f"others (their median): their pipeline waits for its work, {named['extra_per_step_s'] * 1e3:.1f} ms a step"
        )
        finding = {"method": "collectives", "rule": rule, **named, "level": verdict["level"], "test": verdict["test"]}
        return [(process, {**finding, "point_to_point": True, "evidence": evidence})]
    return []
