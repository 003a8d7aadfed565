"""In lockstep, the rank the others wait for, told collective by collective.

The rank that arrives last at a collective waits least in it: the others are there already. Each
collective is matched across the ranks of its group, and the collectives in flight together make
one round: a step's DDP buckets are one (the ranks offer each while they compute on, and a rank late
at the first is late at every one after it), tensor parallelism's all-reduces, which block one after
another, are a round each. A round waited for the rank that arrived last at its last collective,
once each rank's own wait for a CPU in that step is taken off its lateness (a busy machine holds
back one of alike ranks for seconds; a rank with more work of its own is late beyond that). Each
round places its ranks in the order they arrived, 1 the last; a rank whose places sum to less than
chance allows is the one the others wait for. Counting places in rounds, not summing time, keeps one
long wait from naming a rank. Each rank's waits are durations on its own clock, so hosts whose
clocks differ compare alike.

Why every place and not only the last: a rank with a third more work than its three alike others,
beside CPU hogs on 2 cores, was the last in about half of the rounds and the second last in a
third of the rest; counting only the last named it in 2 of 5 windows of 30 steps. Alike ranks take
every place alike (their order in a round is chance), so the places are as sound a count as the
last one is, and their sum uses what the last alone throws away. One rank always early is the
exception: beside it alike ranks take the other places, nearer the last than chance, so a rank is
compared without the one its others place earliest when that one is early beyond chance
(_earliest_other). docs/benchmarks.md, F11, has the runs and the trials.

Why rounds, not collectives, and why the wait for a CPU: a healthy 4-rank DDP job beside two CPU
hogs (2 cores, load 8-10) has one rank last at every bucket of a step, another one the next step,
now and then the same one for three steps: counted collective by collective (24 in 3 steps), 4 of
10 such runs named a rank at p < 0.001. Counted by rounds over 13 steps, one of 10 had a rank last
in 12 of them, which the machine held back (it waited 27 ms a step more for a CPU than the others;
with that taken off, last in 8 of 13). docs/benchmarks.md, figure F6, has the runs.

The input is a list of collectives per rank, ``(key, group, step, wait_s, start_s)`` (Collective),
whatever the backend: the key is the same collective on every rank (a group and its sequence
number, or the group, the step and the order in it). common/tracecollectives.py reads them from
gloo's and NCCL's traces; HCCL's operations would come the same way. Standard library only, and
linear in the collectives: this runs over every rank of a 1024-rank job in ``--check``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

#: A rank is named when chance would make the rounds wait for it that often less than once in a
#: thousand jobs of alike ranks, after multiplying by the number of ranks tested (Bonferroni: any of
#: them could have been the one).
LEVEL = 0.001
TEST = (
    "later than chance in the rounds of collectives: its places in each round's arrivals (1 the last) "
    "summed, against each place 1 to n alike, times the ranks tested"
)
#: How many rounds a window must hold for its verdict to count when no rank is named: enough that
#: a rank the rounds waited for in this share of them would be named (fewer, and "no rank stands
#: out" would only say the window was short). A window of fewer is "too few", with the window that
#: would do.
DESIGN_SHARE = 0.75
#: A collective reached this long after the one before it was done, by every rank of its group,
#: starts a round: one that starts sooner was queued behind it (an NCCL stream's next kernel).
QUEUE_S = 0.0001
#: The rank a rank's others place earliest among themselves is left out of its comparison when its
#: places sum to more than chance allows at this level (_earliest_other): generous, since leaving
#: out an alike rank costs a straggler little. At 0.1 alike ranks beside one 5 ms early (half their
#: spread) were named in 5.9 % of windows at a level of 5 %; at 0.2, 2.7 %.
EARLY_LEVEL = 0.2
#: Up to this many rounds a place sum's chance is counted exactly; past it, bounded (Chernoff): the
#: exact count of 2,000 rounds of 1,024 ranks takes seconds, and there a straggler's p is tiny.
EXACT_ROUNDS = 300
#: ...and when the others wait this much a step longer for it at least: less is the order in which
#: alike ranks reach a collective (findings.NOISE_S, the same millisecond).
NOISE_S = 0.001
#: Why a rank the binomial test picks is not named (``why_not``).
SLIGHT = "slight"
ONE_STEP = "one_step"
#: The rounds waited for it more often than chance in one half of the window's steps only: a rank
#: the machine held back for a stretch (a busy core, seen on a loaded 2-core machine for 14 steps
#: running of 30), not one whose work is slower. The binomial test takes rounds as independent; a
#: stretch is one cause, so a straggler must be waited for more often than chance in both halves.
ONE_STRETCH = "one_stretch"


class Collective(NamedTuple):
    """One collective of one rank's window."""

    key: str  #: the same collective on every rank of its group
    group: str  #: the ranks it is matched across: those that hold any collective of the group
    step: int  #: the job's step it belongs to
    wait_s: float  #: how long this rank waited in it: from reaching it to its end
    start_s: float  #: when this rank reached it, from the start of its step (on its own clock)


Waits = Mapping[int, Sequence[tuple[str, str, int, float, float]]]
#: Each rank's wait for a CPU (its stepping thread's), step by step.
CpuWaits = Mapping[int, Mapping[int, float]]
#: Each rank's places in the rounds (1 the last to arrive), summed: in all, and by (rank, step)
Placed = tuple[dict[int, int], dict[tuple[int, int], int]]


class _Group(NamedTuple):
    """One group's matched collectives and its rounds."""

    name: str
    members: list[int]
    #: The keys of its matched collectives
    keys: set[str]
    #: Each round: its step, the rank it waited for (None: a tie) and its collectives' keys, in order
    rounds: list[tuple[int, int | None, list[str]]]
    #: How many rounds waited for each rank, in all and in each step; how many rounds each step holds
    last: dict[int, int]
    last_in_step: dict[tuple[int, int], int]
    per_step: dict[int, int]
    #: Each round's waits, rank by rank, its wait for a CPU added back (what its places come from)
    held: list[dict[int, float]]


def judge(
    waits: Waits,
    *,
    cpu: CpuWaits | None = None,
    hosts: Mapping[int, str | None] | None = None,
    level: float = LEVEL,
) -> dict[str, Any]:
    """Which rank, if any, the others wait for, from each rank's collectives (and its wait for a
    CPU in each step, ``cpu``, where known).

    Per group (the ranks that hold any of its collectives), the collectives every one of them holds
    are matched and cut into rounds, and each round places its ``n`` ranks in the order they arrived,
    1 the last (_matched). A rank whose places over the group's ``m`` rounds sum to ``s`` passes the
    test when ``T * P(S <= s)`` is below ``level``, S the sum of ``m`` places each 1 to n alike
    (place_sum_tail), T the ranks tested over every group; then the next latest, and so on (the
    ranks of a slow host are each late). One that passes is named when it passes without its latest
    step too, where that step held more than one round (_without_latest_step), the others waited
    NOISE_S a step longer for it at least (_effects), and its places were below chance's middle,
    (n + 1) / 2, in each half of the steps (``halves_places``); else its ``why_not`` says which
    (ONE_STEP, ONE_STRETCH, SLIGHT). ``last_in`` counts the rounds it was the last in (evidence).

    Returns ``named`` (each with its counts, p-value, effect and steps), ``passed`` (every rank that
    passed the test, named or not), ``top`` (the most often waited for, and its test), ``decided`` (a
    rank passed, or the window held enough rounds that one waited for in DESIGN_SHARE of them would
    have), ``rounds`` and ``collectives`` (the matched ones of the largest group), ``ranks_compared``,
    ``steps``, ``per_step`` (rounds), and when too few ``needed`` and ``window_steps``, the window
    that would hold them; ``host`` when the ranks named are most of one host's ranks and none is
    elsewhere, in a job of several hosts."""
    groups = _matched(waits, cpu or {})
    tested = sum(len(group.members) for group in groups)
    verdict: dict[str, Any] = {"decided": False, "named": [], "passed": [], "top": None, "level": level, "test": TEST}
    verdict.update(rounds=0, collectives=0, ranks_compared=0, steps=0, per_step=0.0, host=None)
    if not groups:
        return verdict
    main = max(groups, key=lambda group: (len(group.rounds), len(group.keys), group.name))
    per_step = len(main.rounds) / len(main.per_step)
    verdict.update(rounds=len(main.rounds), collectives=len(main.keys), ranks_compared=len(main.members))
    verdict.update(steps=len(main.per_step), per_step=per_step)
    for group in groups:
        passed = []
        in_steps: dict[int, dict[int, int]] = {}
        placed = _placed(group)
        for rank, _ in sorted(placed[0].items(), key=lambda kv: (kv[1], kv[0])):
            found, in_steps[rank] = _tested(group, rank, tested, placed)
            p_value = found["p_value"]
            if verdict["top"] is None or p_value < verdict["top"]["p_value"]:
                verdict["top"] = found
            if p_value >= level:
                break
            passed.append(found)
        effects = _effects(group, waits, [found["rank"] for found in passed]) if passed else {}
        for found in passed:
            found.update(effects[found["rank"]])
            found["latest_step"], found["p_without_latest_step"] = _without_latest_step(
                group, in_steps[found["rank"]], found, tested
            )
            rank = found["rank"]
            found["halves_last_in"] = _halves(
                {step: group.last_in_step.get((rank, step), 0) for step in group.per_step}, group
            )
            found["halves_places"] = halves = _halves(in_steps[rank], group)
            found["why_not"] = (
                ONE_STEP
                if found["p_without_latest_step"] >= level and group.per_step[found["latest_step"]] > 1
                else ONE_STRETCH
                if any(2 * places >= (found["placed_among"] + 1) * held for places, held in halves)
                else SLIGHT
                if found["wait_per_step_s"] < NOISE_S
                else None
            )
        verdict["passed"].extend(passed)
    verdict["named"] = [found for found in verdict["passed"] if found["why_not"] is None]
    needed = least_rounds(len(main.members), tested, level)
    if verdict["passed"] or len(main.rounds) >= needed:
        verdict["decided"] = True
    else:
        verdict.update(needed=needed, window_steps=math.ceil(needed / per_step))
    verdict["host"] = _host(verdict["named"], hosts, list(waits))
    return verdict


def _tested(group: _Group, rank: int, tested: int, placed: Placed) -> tuple[dict[str, Any], dict[int, int]]:
    """``rank``'s test, among the ranks of its group less the one its others place earliest where
    that one is early beyond chance (_earliest_other), and its places in each step there.

    Sound among alike ranks: the others' order among themselves, which decides who is left out,
    tells nothing of ``rank``'s place among those kept. And beside one rank always early (one with
    less work, or one whose wait for a CPU, added back, is more than the machine held it back),
    alike ranks look late only with it in the comparison. ``placed``: every rank's places among all
    (_placed)."""
    m, size = len(group.rounds), len(group.members)
    early = _earliest_other(group, rank, placed)
    places, in_step = placed[0][rank], {step: placed[1][rank, step] for step in group.per_step}
    if early is not None:  # a rank it waited as little as or less than no longer takes a place before it
        size -= 1
        for (step, _, _), held in zip(group.rounds, group.held):
            if held[early] <= held[rank]:
                places -= 1
                in_step[step] -= 1
    found = {
        "rank": rank,
        "group": group.name,
        "last_in": group.last.get(rank, 0),
        "places": places,
        "places_by_chance": m * (size + 1) / 2,
        "rounds": m,
        "collectives": len(group.keys),
        "ranks_compared": len(group.members),
        "placed_among": size,
        "set_aside": [] if early is None else [early],
        "p_value": min(1.0, tested * place_sum_tail(places, m, size)),
    }
    return found, in_step


def _without_latest_step(
    group: _Group, in_step: dict[int, int], found: dict[str, Any], tested: int
) -> tuple[int, float]:
    """The step in which ``found``'s rank was latest against chance (its places there furthest below
    their middle), and its test's p-value without that step: a rank held back in one step of tensor
    parallelism's many rounds passes the test on that step alone, and is no straggler. (A step of
    one round, DDP's, is one draw like any other: there it refuses nothing.)"""
    middle = (found["placed_among"] + 1) / 2
    step = min(sorted(group.per_step), key=lambda one: in_step[one] - middle * group.per_step[one])
    rounds = found["rounds"] - group.per_step[step]
    tail = place_sum_tail(found["places"] - in_step[step], rounds, found["placed_among"])
    return step, min(1.0, tested * tail)


def _halves(by_step: Mapping[int, int], group: _Group) -> list[tuple[int, int]]:
    """(a rank's counts ``by_step`` summed, rounds) in the first and the second half of the group's
    steps: the rounds that waited for it, or its places."""
    steps = sorted(group.per_step)
    middle = len(steps) // 2
    return [
        (sum(by_step.get(step, 0) for step in half), sum(group.per_step[step] for step in half))
        for half in (steps[:middle], steps[middle:])
    ]


def _matched(waits: Waits, cpu: CpuWaits) -> list[_Group]:
    """The groups of two ranks or more, each with its collectives that every one of its ranks holds,
    cut into rounds: a collective starts one where its step does, or where every rank of the group
    reached it QUEUE_S after the one before it (in the group, on that rank) was done. A round places
    its ranks by their wait in its last collective, least first (the last to arrive, place 1), each
    rank's wait made longer by its wait for a CPU in that step (shared evenly among the step's
    rounds): as if the machine had not held it back. Ranks that tie take the latest place of the
    tie, none of them earlier than chance would give it (a tie for the last names none); the round
    waited for its place 1. A rank holds a key once (it names one collective of its window)."""
    members: dict[str, set[int]] = {}
    seen: dict[str, list[Any]] = {}  # key -> [group, step, how many ranks hold it]
    apart: dict[str, int] = {}  # key -> how many ranks reached it QUEUE_S after the one before was done
    order: dict[str, list[str]] = {}  # group -> its keys in the order of its first rank's window
    for rank, collectives in waits.items():
        mine = sorted(collectives, key=lambda one: (one[1], one[2], one[4]))
        before = None
        for key, of, step, wait, start in mine:
            if of not in members:
                members[of] = set()
                order[of] = [one[0] for one in mine if one[1] == of]
            members[of].add(rank)
            if before is not None and before[1] == of and before[2] == step and start > before[4] + before[3] + QUEUE_S:
                apart[key] = apart.get(key, 0) + 1
            before = (key, of, step, wait, start)
            one = seen.get(key)
            if one is None:
                seen[key] = [of, step, 1]
            else:
                one[2] += 1
    groups: list[_Group] = []
    # a round's last key -> (its share of a step, each rank's wait with its wait for a CPU added back)
    ends: dict[str, tuple[float, dict[int, float]]] = {}
    for name in sorted(members):
        size = len(members[name])
        rounds: list[list[str]] = []
        for key in order[name]:
            group_of, step, holders = seen[key]
            if size < 2 or holders < size:
                continue  # not on every rank of the group
            if not rounds or step != seen[rounds[-1][0]][1] or apart.get(key, 0) == size:
                rounds.append([])
            rounds[-1].append(key)
        if not rounds:
            continue
        group = _Group(name, sorted(members[name]), set(), [], {}, {}, {}, [])
        for keys in rounds:
            step = seen[keys[0]][1]
            group.keys.update(keys)
            group.rounds.append((step, None, keys))
            group.per_step[step] = group.per_step.get(step, 0) + 1
        for _, _, keys in group.rounds:
            ends[keys[-1]] = (1 / group.per_step[seen[keys[0]][1]], {})
        groups.append(group)
    for rank, collectives in waits.items():
        theirs = cpu.get(rank) or {}
        for key, _, step, wait, _ in collectives:
            end = ends.get(key)
            if end is None:
                continue
            end[1][rank] = wait + end[0] * theirs.get(step, 0.0)
    for group in groups:
        for index, (step, _, keys) in enumerate(group.rounds):
            group.held.append(ends[keys[-1]][1])
            laggard = next((rank for rank, place in _places(group.held[-1]).items() if place == 1), None)
            group.rounds[index] = (step, laggard, keys)
            if laggard is not None:
                group.last[laggard] = group.last.get(laggard, 0) + 1
                group.last_in_step[laggard, step] = group.last_in_step.get((laggard, step), 0) + 1
    return groups


def _placed(group: _Group) -> Placed:
    """Every rank's places in the rounds, summed: in all, and in each step."""
    places: dict[int, int] = dict.fromkeys(group.members, 0)
    in_step: dict[tuple[int, int], int] = {}
    for (step, _, _), held in zip(group.rounds, group.held):
        for rank, place in _places(held).items():
            places[rank] += place
            in_step[rank, step] = in_step.get((rank, step), 0) + place
    return places, in_step


def _earliest_other(group: _Group, rank: int, placed: Placed) -> int | None:
    """The rank the others than ``rank`` place earliest among themselves, where its places sum to more
    than chance allows at EARLY_LEVEL and two ranks or more would be left beside ``rank`` without
    it. Among themselves: ``rank``'s own lateness, which moves each of them nearer the first, leaves
    none of them out (a rank's place among them is its place among all, less the rounds in which
    ``rank`` waited as little as it or less)."""
    if len(group.members) < 4:
        return None
    others = [one for one in group.members if one != rank]
    places = {one: placed[0][one] for one in others}
    for held in group.held:
        mine = held[rank]
        for one in others:
            if mine <= held[one]:
                places[one] -= 1
    first = max(others, key=lambda one: places[one])
    m, n = len(group.rounds), len(others)
    return first if place_sum_tail(m * (n + 1) - places[first], m, n) < EARLY_LEVEL else None


def _places(held: dict[int, float]) -> dict[int, int]:
    """Each rank's place in a round's arrivals, 1 the last (the least wait); ranks that tie take the
    latest place of the tie (how many ranks waited as little or less)."""
    order = sorted(held.items(), key=lambda kv: kv[1])
    placed: dict[int, int] = {}
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and order[end + 1][1] == order[start][1]:
            end += 1
        for rank, _ in order[start : end + 1]:
            placed[rank] = end + 1
        start = end + 1
    return placed


def _effects(group: _Group, waits: Waits, ranks: list[int]) -> dict[int, dict]:
    """How much longer the others waited than each of ``ranks``, a step: in each round, by how much
    the others' median wait in its last collective passed the rank's (nothing where it did not),
    summed over the rounds of a step, averaged over the steps.

    A round's last collective, not each: DDP's buckets are in flight together, the others offering
    each while they compute on and waiting once, at the step's end, for the last of them; a rank
    held back by D is late by about D at every bucket, and the others lose D, not D per bucket (and
    the most over a round's collectives would pick its noise). Rounds follow one another, so their
    delays add up (tensor parallelism's all-reduces each lose their own). The waits as they were:
    what the others lost, whoever held the rank back."""
    every: dict[str, list[float]] = {keys[-1]: [] for _, _, keys in group.rounds}
    own: dict[int, dict[str, float]] = {rank: {} for rank in ranks}
    for member in group.members:
        mine = own.get(member)
        for key, _, _, wait, _ in waits[member]:
            theirs = every.get(key)
            if theirs is not None:
                theirs.append(wait)
                if mine is not None:
                    mine[key] = wait
    lost = dict.fromkeys(ranks, 0.0)
    for key, found in every.items():
        found.sort()
        for rank in ranks:
            lost[rank] += max(0.0, _median_without(found, own[rank][key]) - own[rank][key])
    steps = sorted(group.per_step)
    return {rank: {"wait_per_step_s": lost[rank] / len(steps), "steps": steps} for rank in ranks}


def _median_without(values: list[float], one: float) -> float:
    """The median of sorted ``values`` less one of them equal to ``one``."""
    gone = bisect.bisect_left(values, one)
    size = len(values) - 1

    def at(index: int) -> float:
        return values[index if index < gone else index + 1]

    middle = size // 2
    return at(middle) if size % 2 else (at(middle - 1) + at(middle)) / 2


def _host(named: list[dict], hosts: Mapping[int, str | None] | None, ranks: list[int]) -> str | None:
    """The host of the ranks named, where they are most of its ranks and it is one of several."""
    if not named or not hosts or len({hosts.get(rank) for rank in ranks}) < 2:
        return None
    where = {hosts.get(found["rank"]) for found in named}
    if len(where) != 1 or None in where:
        return None
    (host,) = where
    on_it = [rank for rank in ranks if hosts.get(rank) == host]
    return host if 2 * len(named) > len(on_it) else None


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


def place_sum_tail(s: int, m: int, n: int) -> float:
    """P(S <= s) for S the sum of ``m`` places, each 1 to ``n`` alike and independent: the rounds of
    alike ranks. Exact, by inclusion and exclusion over the places past n (whole numbers, so no
    cancellation is lost): the ways m places of 0 to n - 1 sum to t or less are
    sum_j (-1)^j C(m, j) C(t - j n + m, m). At n = 2 it is the binomial tail of the rounds a rank
    was the last in. Past EXACT_ROUNDS rounds, a bound never below it: Chernoff's below the sum's
    middle, 1 from there on."""
    t = s - m
    if t < 0:
        return 0.0
    if t >= m * (n - 1):
        return 1.0
    if m > EXACT_ROUNDS:
        return _chernoff(s, m, n) if 2 * s < m * (n + 1) else 1.0
    ways = sum((-1) ** j * math.comb(m, j) * math.comb(t - j * n + m, m) for j in range(min(m, t // n) + 1))
    return min(1.0, ways / n**m)


def _chernoff(s: int, m: int, n: int) -> float:
    """min over x in (0, 1] of E[x^(P - s/m)]^m, P a place 1 to n alike: a bound on P(S <= s) below
    the middle (golden-section search; the function is convex in log x)."""

    def log_bound(x: float) -> float:
        mean = x * (1 - x**n) / (1 - x) / n if x < 1 else 1.0  # E[x^P]
        return m * (math.log(mean) - s / m * math.log(x))

    low, high = 1e-12, 1.0
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(100):
        a, b = high - ratio * (high - low), low + ratio * (high - low)
        if log_bound(a) < log_bound(b):
            high = b
        else:
            low = a
    return min(1.0, math.exp(min(log_bound(low), log_bound(high))))


_LEAST: dict[tuple[int, int, float], int] = {}


def least_rounds(ranks: int, tested: int, level: float = LEVEL) -> int:
    """The rounds a window needs for its verdict to count: the fewest from which on a rank waited for
    in DESIGN_SHARE of them would pass the test, among ``ranks`` ranks and ``tested`` tests (the next
    few counts too: rounding the share up makes a count pass that its next fails)."""

    def passes(m: int) -> bool:
        return tested * binomial_tail(math.ceil(DESIGN_SHARE * m), m, 1 / ranks) < level

    key = (ranks, tested, level)
    if key not in _LEAST:
        m = 1
        while not all(passes(m + more) for more in range(4)):
            m += 1
        _LEAST[key] = m
    return _LEAST[key]
