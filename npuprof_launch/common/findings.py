"""The statistics behind the job's findings: when a rank is slow, when a spike is the job's, and,
when the evidence is too thin, why no finding is made.

A user acts on a finding (the next run profiles it), so a finding is made only when chance and the
tool's own work cannot explain it; otherwise the answer is "no rank stands out" with its reason.
Each verdict carries its evidence as numbers: the steps counted, the effect, the test and its
level, so ``--json`` readers can judge it themselves. Pure and standard library: the launcher's
job view (jobview.py) feeds it step times already cut to the steps that compare.
"""

from __future__ import annotations

import math
from statistics import median

from npuprof_launch.common import stepstats

#: How many spikes the answer shows, the worst first (the rest are counted, never listed).
SPIKES_SHOWN = 5
#: The level of every test here: a finding is made only when chance would produce its evidence
#: less than once in a thousand jobs of alike ranks (after correcting for which rank was picked).
LEVEL = 0.001
#: Fewer steps than this that every rank shares (past warm-up, outside the tool's steps) tell
#: nothing, whatever a test says: a default 12-step run has about 6.
MIN_SHARED_STEPS = 5
#: The least effect worth a user's next run: the slow rank's median step is this much longer than
#: the others' median (an injected 10 % sleep measures 1.08-1.12x on a busy 2-core machine)...
SLOW_RANK_RATIO = 1.05
#: ...and longer by this much at least: two alike processes on a loaded host differ by up to a
#: millisecond from where the scheduler put them (issue 25: 0.5 ms steps told as "4x slower").
NOISE_S = 0.001
#: With three ranks or more, the slow rank also stands beyond this many median absolute
#: deviations of the other ranks' medians: the spread between ranks that are alike.
SPREAD_MADS = 3.0
SLOW_RANK_TEST = "per-step binomial test"
#: A spike beside a window's aftercare is the job's when its excess over the median exceeds this
#: many times the worst excess of the other aftercare-touched steps, and AFTERCARE_FLOOR_S: the
#: aftercare was seen to cost one step up to about 50 ms on a busy 2-core machine (issue 25: a
#: 40.6 ms step 9 of the README's run; up to 101x of a 0.5 ms step), so 0.2 s is 4x that.
AFTERCARE_FACTOR = 5.0
AFTERCARE_FLOOR_S = 0.2
#: What the spikes a wait for a CPU explains are, said once before them (summary, page).
CPU_WAIT_MEANING = (
    "waiting for a CPU (runnable while no core ran it: other processes, or the job's own threads and workers, "
    "had the cores), so no finding: the job's or the machine's load, the step times cannot tell"
)


def binomial_tail(k: int, m: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(m, p), summed in logs (m of thousands, p of 1/1024)."""
    if k <= 0:
        return 1.0
    if k > m:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    whole = math.lgamma(m + 1)
    total = 0.0
    for j in range(k, m + 1):
        term = math.exp(whole - math.lgamma(j + 1) - math.lgamma(m - j + 1) + j * log_p + (m - j) * log_q)
        total += term
        if j > m * p and term < total * 1e-16:
            break
    return min(1.0, total)


#: A rank slower step by step is the machine's when its own wait for a CPU, past the others', takes
#: this share of its excess at least: it had less of the cores, not more work (the share that takes
#: one rank's slowdown off in lockstep).
CPU_EXPLAINS_SHARE = 0.5


#: A rank whose stepping thread ran this much longer on a CPU than the others' median may have had
#: more work (launcher/cputime.py names a rank's own work from 1.15x: alike ranks beside two CPU hogs
#: differed by up to 1.05; two ranks training alone, alike, by up to 1.04).
MORE_RAN_RATIO = 1.02


#: A rank's wait for a CPU is out of proportion to its work where it waited this many times the
#: others' median, and this many times what its thread ran over theirs: a rank with more work is
#: runnable longer and waits longer too, in proportion (launcher/heldback.py, collectives.HELD).
WAIT_RATIO = 2.0


def out_of_proportion(wait_ratio: float, ran_ratio: float | None) -> bool:
    """Whether a rank that waited ``wait_ratio`` times the others' median for a CPU and whose thread
    ran ``ran_ratio`` times their time on one (None: not known) waited out of proportion to its work."""
    return wait_ratio >= WAIT_RATIO * max(1.0, ran_ratio or 1.0)


def slow_rank_waited(
    verdict: dict, own_wait_s: float, theirs_wait_s: list[float], steps: int, ran_ratio: float | None = None
) -> str | None:
    """Why the rank ``slow_rank`` named is not slow, where its own wait for a CPU in the ``steps``
    compared (``own_wait_s``, against each other rank's) explains CPU_EXPLAINS_SHARE of its excess;
    else None. A healthy job of 4 ranks on 2 cores beside CPU hogs had rank 0 named 3.7x slower
    (0.5 ms steps; benchmarks/findings.py, 2026-12-05): it had less of the cores. But a rank with
    more work is runnable longer and waits longer too: where its thread ran MORE_RAN_RATIO of the
    others' time on a CPU or more (``ran_ratio``), the reason says these steps cannot tell which
    (tried: beside two CPU hogs, of two ranks training alone, the one on 10 % more rows ran 1.05x,
    waited 92 ms more for a CPU in 31 steps, and was told "not more work"); "not more work" only
    where its thread's time says so."""
    excess = (verdict["step_s"] - verdict["others_step_s"]) * steps
    if not theirs_wait_s or excess <= 0:
        return None
    typical = median(theirs_wait_s)
    if own_wait_s - typical < CPU_EXPLAINS_SHARE * excess:
        return None
    head = (
        f"rank {verdict['rank']}'s steps were {verdict['ratio']:.2f}x the others' by median, but it waited for a CPU "
        f"{_ms(own_wait_s)} in those {steps} steps against {_ms(typical)} on the others, "
        f"{(own_wait_s - typical) / excess:.0%} of its excess"
    )
    if ran_ratio is None:
        return f"{head}: it had less of the cores; no finding"
    ran = f"its stepping thread ran {ran_ratio:.2f}x the others' time on a CPU"
    if ran_ratio >= MORE_RAN_RATIO:
        return (
            f"{head}, and {ran}, under the margin that names a rank's own work: more work or less of the cores, "
            "these steps cannot tell; no finding"
        )
    return f"{head}, and {ran}: it had less of the cores, not more work; no finding"


def slow_rank(series: dict) -> dict:
    """Whether one rank's steps are slower than the others', out of lockstep.

    ``series``: each rank's durations of the same steps, in the same order (the steps every rank
    shares, past warm-up and outside the tool's steps). Returns ``{"found": True, "rank", ...}``
    with its evidence, or ``{"found": False, "reason": ONE LINE, ...}``.

    The rule, and why: the candidate is the rank with the highest median. Where ranks are alike,
    each is the slowest of the m ranks in a step with chance 1/m, and above the others' median
    with chance 1/2; so the steps in which the candidate is the slowest of all follow
    Binomial(n, 1/m), and those in which it is above the others' median Binomial(n, 1/2). The
    first is strong on few steps, the second on a busy machine, where another rank is now and then
    the slowest of a step. It is named only when one count is beyond chance at LEVEL, after
    multiplying by m for having picked it and by 2 for the two counts (Bonferroni; with two ranks
    they are one count). Counting steps, not summing times, makes one stall unable to make a rank
    slow, and comparing ranks step by step makes what the machine did to all of them at once cancel.
    A consistent difference can still come from the host (which core a process got), so the effect
    must also be worth acting on: SLOW_RANK_RATIO and NOISE_S over the others' median, and with
    three ranks or more beyond SPREAD_MADS of the spread between the others. At least
    MIN_SHARED_STEPS shared steps.
    """
    ranks = list(series)
    n = min((len(values) for values in series.values()), default=0)
    if len(ranks) < 2:
        return {"found": False, "reason": "one rank: nothing to compare it with"}
    if n < MIN_SHARED_STEPS:
        return {
            "found": False,
            "steps": n,
            "reason": f"too few steps to compare: {n} that every rank shares past warm-up and the tool's steps "
            f"(at least {MIN_SHARED_STEPS})",
        }
    medians = {rank: median(series[rank][:n]) for rank in ranks}
    candidate = max(ranks, key=lambda rank: medians[rank])
    others = [rank for rank in ranks if rank != candidate]
    own = series[candidate]
    slowest = sum(1 for i in range(n) if all(own[i] > series[other][i] for other in others))
    theirs = [median(series[other][i] for other in others) for i in range(n)]
    above = sum(1 for i in range(n) if own[i] > theirs[i])
    typical = median(theirs)
    m = len(ranks)
    p_value = m * binomial_tail(slowest, n, 1 / m)
    if m > 2:
        p_value = 2 * min(p_value, m * binomial_tail(above, n, 0.5))
    p_value = min(1.0, p_value)
    ratio = medians[candidate] / typical if typical > 0 else math.inf
    evidence = {
        "rank": candidate,
        "steps": n,
        "slowest_in": slowest,
        "above_others_in": above,
        "ranks_compared": len(ranks),
        "step_s": medians[candidate],
        "others_step_s": typical,
        "ratio": round(ratio, 3),
        "test": SLOW_RANK_TEST,
        "level": LEVEL,
        "p_value": p_value,
    }
    who = f"rank {candidate}" if candidate is not None else "the slowest process"
    if medians[candidate] - typical < NOISE_S:
        reason = (
            f"{who}'s median step is {_ms(medians[candidate])} against {_ms(typical)} on the others: less than "
            f"{_ms(NOISE_S)} apart, within what the host's scheduling does to alike processes"
        )
        return {"found": False, "reason": reason, **evidence}
    if ratio < SLOW_RANK_RATIO:
        reason = f"{who}'s median step is {ratio:.2f}x the others' (at least {SLOW_RANK_RATIO:.2f}x is a finding)"
        return {"found": False, "reason": reason, **evidence}
    if p_value >= LEVEL and slowest >= 0.8 * n:
        needed = next(steps for steps in range(1, 64) if (2 if m > 2 else 1) * m * m**-steps < LEVEL)
        reason = (
            f"too few steps to tell: {who} ({ratio:.2f}x by median) was the slowest rank in {slowest} of {n} shared "
            f"steps (p = {p_value:.2g} by the {SLOW_RANK_TEST}; with {len(ranks)} ranks p < {LEVEL:g} takes at "
            f"least {needed} such steps out of {needed}, and more steps at a lower rate)"
        )
        return {"found": False, "reason": reason, **evidence}
    if p_value >= LEVEL:
        reason = (
            f"the ranks' step times overlap: {who}, the slowest by median ({ratio:.2f}x), was above the others' "
            f"median in {above} of {n} steps and the slowest rank in {slowest} (p = {p_value:.2g} by the "
            f"{SLOW_RANK_TEST}; a finding needs p < {LEVEL:g})"
        )
        return {"found": False, "reason": reason, **evidence}
    if len(others) >= 2:
        their = [medians[other] for other in others]
        centre = median(their)
        mad = median(abs(value - centre) for value in their)
        if medians[candidate] - centre <= SPREAD_MADS * max(mad, centre * 0.01):
            reason = f"{who}'s median step is within {SPREAD_MADS:g} deviations of the spread between the other ranks"
            return {"found": False, "reason": reason, **evidence}
    text = (
        f"median step {_ms(medians[candidate])} against {_ms(typical)} "
        f"on the other rank{'s' if len(others) > 1 else ''} ({ratio:.2f}x); above "
        f"their median in {above} of {n} steps, the slowest of {m} ranks in {slowest} (p = {p_value:.2g}, "
        f"{SLOW_RANK_TEST}, level {LEVEL:g})"
    )
    return {"found": True, "evidence": text, **evidence}


def spike_beside_aftercare(excess_s: float, others_excess_s: float | None) -> tuple[bool, str]:
    """Whether a spike in a step beside a window's aftercare is the job's, and why (one line).

    ``excess_s``: the spike's time over its rank's median; ``others_excess_s``: the largest such
    excess among the other steps the aftercare touched (None when it touched no other). The
    aftercare takes CPU the job could have had, and its cost falls unevenly (its start-up lands
    in one step), so a spike there is the job's only when it is far beyond both what the aftercare
    cost the other steps it touched and the most it was ever seen to cost one step. Otherwise it
    is undecidable: told apart, never blamed on the tool or on the job, never a suggested run.
    """
    others = max(others_excess_s or 0.0, 0.0)
    bound = max(AFTERCARE_FACTOR * others, AFTERCARE_FLOOR_S)
    if excess_s > bound:
        return True, (
            f"{_ms(excess_s)} over the median while the tool's aftercare ran beside it: beyond "
            f"{AFTERCARE_FACTOR:g}x its worst cost on the other steps it touched ({_ms(others)}) and beyond "
            f"{_ms(AFTERCARE_FLOOR_S)}, so the spike is the job's own"
        )
    return False, (
        f"{_ms(excess_s)} over the median while the tool's aftercare ran beside it (up to {_ms(others)} on the other "
        f"steps it touched): the job's or the tool's, the step times cannot tell; a finding needs over {_ms(bound)}"
    )


def spike_with_cpu_wait(step_s: float, median_s: float, cpu: dict, own: bool = False) -> tuple[bool, str]:
    """Whether a spike is the job's once its thread's wait for a CPU is taken off, and why (one line).

    ``cpu``: the spike's ``cpu_wait_s`` with ``cpu_wait_steps`` (the block of readings that holds
    it) or ``cpu_wait_at_most`` (a bound: the block was not among the longest waits kept). A
    thread that waited on a run queue was runnable while no core ran it: other processes had the
    cores, or the job's own threads and data loader workers did. The whole block's wait is taken
    off the step (the block may hold other steps, so this takes off at least the step's own):
    still a spike, it is the job's, with the wait as evidence; no spike without it, it is
    undecidable, the job's or the machine's load: told apart, never a suggested run. ``own``: the
    median is of the steps' own time (stepstats.own_median), said so: "4.0x the median; ... still
    10.2x the median without it" read as a contradiction.
    """
    wait = cpu["cpu_wait_s"]
    where = f"in {_steps_text(cpu['cpu_wait_steps'])}" if cpu.get("cpu_wait_steps") else "in its block of steps"
    waited = f"{'at most ' if cpu.get('cpu_wait_at_most') else ''}{_ms(wait)} {where}"
    rest = step_s - wait
    bar = stepstats.spike_bar(median_s)
    if rest > bar:
        against = "the median of the steps' own time" if own else "the median"
        return True, f"{waited} waiting for a CPU, still {rest / median_s:.1f}x {against} without it"
    return False, f"{waited} waiting for a CPU; under the spike bar ({_ms(bar)}) without it"


def _steps_text(span) -> str:
    return f"steps {span[0]}-{span[1]}" if span[1] != span[0] else f"step {span[0]}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds >= 0.01 else f"{seconds * 1e3:.2f} ms"
