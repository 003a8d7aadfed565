"""Slowdowns: a step from which a process's steps take longer, and stay longer, found in its whole-run step times.

A fail-slow (a throttled card, a failing link, a growing queue) shows as a change point in the
step time: before it the steps take one time, after it another, for many steps. A spike is one
step; a slowdown is a regime. The method, in three parts, each there for a reason:

1. *Where.* The job's own steps (the tool's steps around windows and the warm-up left out, as
   for spikes) are cut into at most MAX_BLOCKS blocks of consecutive steps, each reduced to its
   median: one slow step cannot move a block, and a run of 100,000 steps costs little more than
   one of 2,000. The change point is the block boundary that best splits the blocks' log medians
   in two (binary segmentation's criterion), each side at least MIN_SIDE steps.
2. *How much.* The median after over the median before must be at least MIN_RATIO: below that, a
   shared machine's drift is as large.
3. *Whether it holds.* A rank-sum test (Mann-Whitney, normal approximation) of the blocks after
   against the blocks before must reject at P_LEVEL, and where the steps after it get faster again (the
   same cut, in the other direction, significant, and back near the time before), the slowdown
   is told with the step where they came back, else it runs "to the end".

The step found is a block boundary: within a block's length of the true one (a few steps on
short runs; the finding says the block length on long ones).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING

from npuprof_launch.launcher import answer, wording

if TYPE_CHECKING:
    pass

MAX_BLOCKS = 400
MIN_SIDE = 10
MIN_RATIO = 1.15
P_LEVEL = 1e-4
#: Slowdowns on several ranks within this many steps (or one block) of each other are one.
GROUP_STEPS = 5


def find(durations: Sequence[float], tool_steps=None, warmup: int = 3) -> dict | None:
    """The slowdown in one process's step durations (of steps 2, 3, ...), or None.

    ``tool_steps``: a container of the steps the tool's own work touched (stepstats.ToolSteps).
    Returns ``{"step", "before_s", "after_s", "ratio", "to_end", "back_at", "p", "steps_before",
    "steps_after", "block"}``: ``step`` is the first slower step, in the job's numbering.
    """
    numbers, values = _job_steps(durations, tool_steps, warmup)
    if len(values) < 2 * MIN_SIDE:
        return None
    size = max(1, math.ceil(len(values) / MAX_BLOCKS))
    logs = [math.log(median) for median in _block_medians(values, size)]
    cut = _best_cut(logs, size, len(values))
    if cut is None:
        return None
    end = _end_of(logs, cut, size)  # the block where the steps came back, if they did
    p = rank_sum_p(logs[:cut], logs[cut:end])  # on the blocks: a slow step alone moves none
    if p > P_LEVEL:
        return None  # asked first: it reads the blocks, the ratio below the medians of every step
    before = values[: cut * size]
    after = values[cut * size : end * size]
    before_s, after_s = _median(before), _median(after)
    ratio = after_s / before_s
    if ratio < MIN_RATIO:
        return None
    step = int(numbers[cut * size])
    spans = tool_steps.spans() if tool_steps is not None and hasattr(tool_steps, "spans") else ()
    return {
        "step": step,
        # the tool's steps just before it, left out: the slowdown may begin among them
        "tool_before": next(([int(low), int(high)] for low, high in spans if high == step - 1), None),
        "before_s": before_s,
        "after_s": after_s,
        "ratio": round(ratio, 3),
        "to_end": end == len(logs),
        "back_at": int(numbers[end * size]) if end < len(logs) else None,
        "p": p,
        "test": f"Mann-Whitney rank sum of block medians, one-sided, p < {P_LEVEL:g}",
        "steps_before": len(before),
        "steps_after": len(after),
        "block": size,
    }


def _job_steps(durations: Sequence[float], tool_steps, warmup: int) -> tuple[Sequence[int], Sequence[float]]:
    """The job's own steps of ``durations`` (of steps 2, 3, ...): their numbers and times, past the
    warm-up, without the tool's steps and without steps of no time. Taken by slices between the
    tool's spans (stepstats.ToolSteps.spans), or with numpy for a long run: a Python test of every
    step of 20,000 on each of 1,024 ranks made --check 5x slower; any other container of steps is
    asked step by step. Numbers and times are lists, or numpy's arrays for a long run (a list of
    20,000 numbers per rank took a tenth of --check at 1,024 ranks: two of them are read)."""
    first = warmup + 2
    by_spans = tool_steps is None or hasattr(tool_steps, "spans")
    spans = tool_steps.spans() if tool_steps is not None and by_spans else ()
    numpy = _numpy() if len(durations) >= NUMPY_FROM_STEPS and by_spans else None
    if numpy is not None:  # the same steps, as arrays: no Python loop over a long run
        times = numpy.asarray(durations, dtype=float)
        keep = times > 0
        keep[: max(0, first - 2)] = False
        for low, high in spans:
            keep[max(0, low - 2) : max(0, high - 1)] = False
        return numpy.nonzero(keep)[0] + 2, times[keep]
    if not by_spans:
        numbers = [step for step in range(first, len(durations) + 2) if step not in tool_steps]
        values = [durations[step - 2] for step in numbers]
    else:
        numbers, values = [], []
        start, end = first, len(durations) + 2  # steps start..end-1 have times
        for low, high in [*spans, [end, end]]:
            stop = min(low, end)
            if stop > start:
                numbers.extend(range(start, stop))
                values.extend(durations[start - 2 : stop - 2])
            start = max(start, high + 1)
    if len(values) and min(values) <= 0:
        kept = [index for index, value in enumerate(values) if value > 0]
        numbers, values = [numbers[i] for i in kept], [values[i] for i in kept]
    return numbers, values


#: From this many steps a process's medians are taken with numpy where it is installed (the same
#: values: numpy.median averages the two middle ones as statistics.median does): a sort in Python
#: per block and per side made --check of 1,024 ranks x 20,000 steps take 4 s more.
NUMPY_FROM_STEPS = 4096


def _numpy():
    """numpy, where it is installed (the launcher's side may import it; it is no dependency)."""
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def _block_medians(values: Sequence[float], size: int) -> list[float]:
    """The median of each block of ``size`` values, the last block possibly shorter."""
    whole = len(values) // size * size
    numpy = _numpy() if len(values) >= NUMPY_FROM_STEPS and size > 1 else None
    if numpy is None:
        return [_median(values[i : i + size]) for i in range(0, len(values), size)]
    # numpy.median's own partition, without its checks: the two middle values of each block, averaged
    blocks = numpy.asarray(values[:whole], dtype=float).reshape(-1, size)
    low, high = (size - 1) // 2, size // 2
    middle = numpy.partition(blocks, (low, high), axis=1)
    medians = ((middle[:, low] + middle[:, high]) / 2).tolist()
    return medians + ([_median(values[whole:])] if whole < len(values) else [])


def _median(values: Sequence[float]) -> float:
    """statistics.median, without its generality: called for every block of every rank."""
    numpy = _numpy() if len(values) >= NUMPY_FROM_STEPS or hasattr(values, "dtype") else None
    if numpy is not None:
        return float(numpy.median(numpy.asarray(values, dtype=float)))
    ordered = sorted(values)
    middle = len(ordered) // 2
    return float(ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2)


def _end_of(logs: list[float], cut: int, size: int) -> int:
    """Where a slowdown that began at block ``cut`` ended: the best cut of the blocks after it
    where the steps got faster again, when those after it are back near the time before; else
    the end."""
    rest = logs[cut:]
    back = _best_cut([-value for value in rest], size, len(rest) * size)
    if back is None:
        return len(logs)
    before = statistics.median(logs[:cut])
    came_back = statistics.median(rest[back:])
    if came_back - before < math.log(MIN_RATIO) / 2 and rank_sum_p(rest[back:], rest[:back]) <= P_LEVEL:
        return cut + back
    return len(logs)


def _best_cut(logs: list[float], size: int, count: int) -> int | None:
    """The block boundary that best splits the blocks' log medians in two (binary segmentation:
    the largest between-sides sum of squares, k (n - k) / n (mean after - mean before)^2, from
    prefix sums), among those that leave MIN_SIDE steps on each side and are slower after."""
    prefix = [0.0]
    for value in logs:
        prefix.append(prefix[-1] + value)
    n, total = len(logs), prefix[-1]
    best, cut = 0.0, None
    for k in range(1, n):
        if k * size < MIN_SIDE or count - k * size < MIN_SIDE:
            continue
        before, after = prefix[k] / k, (total - prefix[k]) / (n - k)
        gain = k * (n - k) / n * (after - before) ** 2
        if after > before and gain > best:
            best, cut = gain, k
    return cut


def rank_sum_p(before: list[float], after: list[float]) -> float:
    """One-sided p-value that ``after``'s values are not larger than ``before``'s (Mann-Whitney U,
    normal approximation with ties averaged; fine from a few dozen values on)."""
    merged = sorted([*before, *after])
    rank_of: dict[float, float] = {}  # each value's rank, ties given their average
    index = 0
    while index < len(merged):
        end = index
        while end + 1 < len(merged) and merged[end + 1] == merged[index]:
            end += 1
        rank_of[merged[index]] = (index + end) / 2 + 1
        index = end + 1
    rank_sum_after = sum(rank_of[value] for value in after)
    n1, n2 = len(before), len(after)
    u = rank_sum_after - n2 * (n2 + 1) / 2
    mean, sd = n1 * n2 / 2, math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    if sd == 0:
        return 1.0
    z = (u - mean) / sd
    return 0.5 * math.erfc(z / math.sqrt(2))


def of_processes(processes: list[dict], output_dir: str) -> tuple[list[dict], list[dict]]:
    """The job's slowdowns: each report row's step-times file read, its slowdown found, and those
    of one stage at about one step grouped; and apart, those a wait for a CPU explains (a slowdown
    with it, none without it, on one of the ranks: in lockstep one rank's wait slows them all):
    the job's or the machine's load, no finding (tried: a healthy 20 ms job beside a busy machine
    was told "a slowdown from step 45", 1.2x)."""
    import os

    from npuprof_launch.common import steptimes

    by_stage: dict[object, list[dict]] = {}
    timed: dict[object, int] = {}
    for process in processes:
        if not process.get("step_times"):
            continue
        try:
            durations = steptimes.read(os.path.join(output_dir, process["step_times"]))
        except (OSError, ValueError):
            continue
        stage = process.get("stage")
        timed[stage] = timed.get(stage, 0) + 1
        found = judged(durations, process.get("windows"), process.get("cpu_wait"))
        if found:
            by_stage.setdefault(stage, []).append(
                {**found, "rank": process.get("rank"), "lockstep": _in_lockstep(process)}
            )
    result: list[dict] = []
    waited: list[dict] = []
    for stage, items in by_stage.items():
        explained = [item for item in items if "cpu_wait_s" in item or _waited_for(item, items)]
        for item in group(explained, timed[stage]):
            waited.append({**({"stage": stage} if stage else {}), **item})
        for item in group([one for one in items if one not in explained], timed[stage]):
            result.append({**({"stage": stage} if stage else {}), **item})
    return result, waited


def _in_lockstep(process: dict) -> bool:
    """Whether a rank's window spent a lockstep share of its time in collectives (lockstep.py): its
    steps then take as long as the slowest rank's, a wait for a CPU included."""
    from npuprof_launch.launcher import lockstep

    collective, window = process.get("collective_s"), process.get("window_s")
    return bool(collective and window and collective / window >= lockstep.COLLECTIVE_SHARE)


def _waited_for(item: dict, items: list[dict]) -> bool:
    """A rank's slowdown that another rank's wait for a CPU explains: both in lockstep, at about one
    step, that wait covering half its excess at least. Never across ranks that are not in lockstep:
    one rank's wait says nothing of another's steps (tried: two independent ranks, rank 0 slowed
    from 106 to 246 ms at step 40, merged with rank 1's CPU wait and told as the machine's)."""
    if "cpu_wait_s" in item or not item.get("lockstep"):
        return False
    excess = item["after_s"] - item["before_s"]
    return any(
        "cpu_wait_s" in other
        and other.get("lockstep")
        and abs(other["step"] - item["step"]) <= max(GROUP_STEPS, item["block"], other["block"])
        and other["cpu_wait_s"] >= excess / 2
        for other in items
    )


def judged(durations: Sequence[float], windows: list[dict] | None, cpu_wait: dict | None) -> dict | None:
    """One process's slowdown (find()'s fields), with ``cpu_wait_s`` where its own wait for a CPU
    explains it (a slowdown with the wait, none without it); None when there is none. The one
    judge of a process's slowdown: the end's answer and --on-slowdown's live trigger both ask it,
    so that a window is never asked for a slowdown the answer then rejects (tried: a healthy rank
    at 1.23x beside a busy machine got one of three windows)."""
    from npuprof_launch.common import stepstats

    tools = stepstats.ToolSteps(windows, len(durations) + 1)
    warmup = stepstats.WARMUP_STEPS
    found = find(durations, tools, warmup=warmup)
    waits = cpu_waits(durations, cpu_wait)
    if waits is None:
        return found
    less = [max(d - w, 1e-6) for d, w in zip(durations, waits)]
    own = find(less, tools, warmup=warmup)
    if own is None:
        if found is not None:  # a slowdown with its waits, none without them
            after, before = waits[found["step"] - 2 :], waits[: found["step"] - 2]
            found["cpu_wait_s"] = sum(after) / max(len(after), 1) - sum(before) / max(len(before), 1)
        return found
    if found is not None and not _later(found, own, less, tools, warmup):
        return found
    if _holds(own, less, _at_most(less, cpu_wait), tools, warmup):
        return _in_step_times(own, durations, tools, warmup)
    return found


def _later(found: dict, own: dict, less: list[float], tools, warmup: int) -> bool:
    """Whether the slowdown began at the own time's step rather than the step times': later, where
    the steps between the two took their own time of before (a burst of waits for a CPU just ahead
    of it moved the step times' cut), not of after (a wait read into one step moved the own time's).
    The same step: its own time's."""
    if own["step"] <= found["step"]:
        return own["step"] == found["step"]
    numbers, values = _job_steps(less, tools, warmup)
    between = [value for number, value in zip(numbers, values) if found["step"] <= number < own["step"]]
    if not between:
        return True
    middle = math.log(_median(between))
    return abs(middle - math.log(own["before_s"])) < abs(middle - math.log(own["after_s"]))


def _at_most(less: list[float], cpu_wait: dict | None) -> list[float]:
    """``less`` with every step a reading covers but no kept block holds (its wait under the record's
    ``at_most_s``, unknown) less that bound too: each step's own time at its least."""
    bound = float((cpu_wait or {}).get("at_most_s") or 0.0)
    kept = {
        step for first, last, _ in (cpu_wait or {}).get("blocks") or () for step in range(int(first), int(last) + 1)
    }
    low = list(less)
    for first, last in (cpu_wait or {}).get("covered") or ():
        for step in range(max(int(first), 2), min(int(last), len(low) + 1) + 1):
            if step not in kept:
                low[step - 2] = max(low[step - 2] - bound, 1e-6)
    return low


def _holds(own: dict, less: list[float], low: list[float], tools, warmup: int) -> bool:
    """Whether a slowdown of the steps' own time (their waits for a CPU taken off) holds with every
    wait the record does not know taken in its disfavour: the steps before it at their longest (the
    unknown waits none), those after it at their shortest (each at its bound). A block of steps not
    kept waited less than the bound, and counting it as none after a burst of kept waits would make
    a slowdown of a healthy job's own time."""
    numbers, before_values = _job_steps(less, tools, warmup)
    _, after_values = _job_steps(low, tools, warmup)
    steps = list(numbers)
    cut = steps.index(own["step"])
    end = steps.index(own["back_at"]) if own.get("back_at") in steps else len(steps)
    size = own["block"]
    before = [math.log(m) for m in _block_medians(before_values[:cut], size)]
    after = [math.log(m) for m in _block_medians(after_values[cut:end], size)]
    ratio = _median(after_values[cut:end]) / _median(before_values[:cut])
    return ratio >= MIN_RATIO and rank_sum_p(before, after) <= P_LEVEL


def _in_step_times(own: dict, durations: Sequence[float], tools, warmup: int) -> dict:
    """A slowdown found in the steps' own time, told in their step times at the same step (what the
    step-time table and the traces show) where those show it too; else in their own time, said so
    (``own_time``). Beside CPU hogs a server's calls went from 28 to 57 ms at call 35 and the
    step times alone placed nothing (p = 3e-4: its slowest blocks were waits); a job's burst of waits
    at steps 33-35 placed a slowdown at step 41 eight steps early (2026-12-05)."""
    numbers, values = _job_steps(durations, tools, warmup)
    steps = list(numbers)
    cut = steps.index(own["step"])
    end = steps.index(own["back_at"]) if own.get("back_at") in steps else len(steps)
    before_s, after_s = _median(values[:cut]), _median(values[cut:end])
    if after_s / before_s >= MIN_RATIO:
        return {**own, "before_s": before_s, "after_s": after_s, "ratio": round(after_s / before_s, 3)}
    return {**own, "own_time": True}


def cpu_waits(durations: Sequence[float], cpu_wait: dict | None) -> list[float] | None:
    """What each step of ``durations`` waited for a CPU: each kept block's wait spread evenly over
    its steps (a block not kept waited less than its record's ``at_most_s``: counted as none); None
    without readings."""
    blocks = (cpu_wait or {}).get("blocks") or ()
    if not blocks:
        return None
    waits = [0.0] * len(durations)
    for first, last, seconds in blocks:
        for step in range(max(int(first), 2), min(int(last), len(durations) + 1) + 1):
            waits[step - 2] += float(seconds) / (int(last) - int(first) + 1)
    return waits


def cpu_wait_text(slowdown: dict) -> str:
    """A slowdown a wait for a CPU explains, in one line (under findings.CPU_WAIT_MEANING)."""
    return (
        f"{text(slowdown)}: {slowdown['cpu_wait_s'] * 1e3:.1f} ms a step more waiting for a CPU after it than "
        "before; no slowdown without it"
    )


def group(found: list[dict], ranks_timed: int) -> list[dict]:
    """Slowdowns of several processes (``rank`` and find()'s fields) at about one step are one
    finding: "every rank" when all timed ranks slowed there."""
    ordered = sorted(found, key=lambda item: item["step"])
    groups: list[list[dict]] = []
    for item in ordered:
        near = max(GROUP_STEPS, item["block"])
        if groups and item["step"] - groups[-1][0]["step"] <= near:
            groups[-1].append(item)
        else:
            groups.append([item])
    result = []
    for items in groups:
        ranks = sorted(item["rank"] for item in items if item.get("rank") is not None)
        # One rank's wait for a CPU explains the group: in lockstep it holds every rank.
        waits = [item["cpu_wait_s"] for item in items if "cpu_wait_s" in item]
        result.append(
            {
                **({"cpu_wait_s": max(waits)} if waits else {}),
                "step": min(item["step"] for item in items),
                "ranks": ranks,
                "processes": len(items),
                "every_rank": len(items) >= ranks_timed > 1,
                "before_s": statistics.median(item["before_s"] for item in items),
                "after_s": statistics.median(item["after_s"] for item in items),
                "ratio": round(statistics.median(item["ratio"] for item in items), 2),
                "to_end": all(item["to_end"] for item in items),
                "back_at": max((item["back_at"] or 0) for item in items) or None,
                "tool_before": min(items, key=lambda item: item["step"]).get("tool_before"),
                **({"own_time": True} if any(item.get("own_time") for item in items) else {}),
                "evidence": [
                    {key: item[key] for key in ("rank", "step", "ratio", "p", "test", "steps_before", "steps_after")}
                    for item in items
                ],
            }
        )
    return sorted(result, key=lambda item: -item["ratio"])


def text(slowdown: dict) -> str:
    """``from step 4,512 every rank's step took 530 ms against 410 ms before (1.29x), to the end``."""
    if slowdown["every_rank"] and slowdown["ranks"]:
        whose = "every rank's step"
    elif slowdown["every_rank"]:  # processes without ranks: a stage's workers, a server's
        count = slowdown["processes"]
        whose = f"the steps of {'both' if count == 2 else f'all {count}'} processes"
    elif slowdown["ranks"]:
        whose = (
            f"{wording.who(slowdown['ranks'])}'s step"
            if len(slowdown["ranks"]) == 1
            else (f"the steps of {wording.who(slowdown['ranks'])}")
        )
    else:
        whose = "the step"
    until = (
        "to the end"
        if slowdown["to_end"]
        else (f"until step {slowdown['back_at']:,}" if slowdown["back_at"] else "then less")
    )
    own = ", each less its wait for a CPU" if slowdown.get("own_time") else ""
    stage = f" of stage {slowdown['stage']}" if slowdown.get("stage") else ""
    tool = slowdown.get("tool_before")
    may = f" (it may begin in steps {tool[0]}-{tool[1]}, the tool's, left out)" if tool else ""
    recorded = slowdown.get("recorded")
    seen = f"; a window recorded {_spans_words(recorded)} of it" if recorded else ""
    return (
        f"a slowdown from step {slowdown['step']:,}{stage}{may}: {whose} took {slowdown['after_s'] * 1e3:.1f} ms "
        f"against {slowdown['before_s'] * 1e3:.1f} ms before{own} ({slowdown['ratio']:.2f}x), {until}{seen}"
    )


def recorded(slowdown: dict, window_steps: list[dict], last_step: int) -> list[list[int]]:
    """The steps of the slowdown (from the tool's steps it may begin in, to where it ended) that a
    window of its stage recorded: a run its next: suggested holds them, and says so."""
    first = (slowdown.get("tool_before") or [slowdown["step"]])[0]
    last = (slowdown.get("back_at") or last_step + 1) - 1
    spans = [span for entry in window_steps if entry.get("stage") == slowdown.get("stage") for span in entry["steps"]]
    return sorted([max(low, first), min(high, last)] for low, high in spans if low <= last and high >= first)


def _spans_words(spans: list[list[int]]) -> str:
    return ", ".join(wording.steps(low, high) for low, high in spans)


def item(slowdown: dict) -> dict:
    """The answer's item of a slowdown (of_processes): its ranks, its first step, the per-rank tests."""
    evidence = {
        key: slowdown.get(key)
        for key in (
            "before_s",
            "after_s",
            "ratio",
            "every_rank",
            "to_end",
            "back_at",
            "processes",
            "evidence",
            "own_time",
        )
    }
    evidence["per_rank"] = evidence.pop("evidence")
    return answer.item("slowdown", text(slowdown), slowdown["ranks"], [slowdown["step"]], **evidence)
