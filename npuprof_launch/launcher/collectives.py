"""In lockstep, the rank the others wait for, told collective by collective.

The rank that arrives last at a collective waits least in it: the others are there already. Each
collective is matched across the ranks of its group, and the collectives in flight together make
one round: a step's DDP buckets are one (the ranks offer each while they compute on, and a rank late
at the first is late at every one after it), tensor parallelism's all-reduces, which block one after
another, are a round each. A round waited for the rank that arrived last at its last collective,
once each rank's own wait for a CPU in that step is taken off its lateness (a busy machine holds
back one of alike ranks for seconds; a rank with more work of its own is late beyond that), and its
waits for other ranks at its other groups since its last collective of this one. A rank
the rounds waited for more often than chance allows is the one the others wait for. Counting rounds,
not summing time, keeps one long wait from naming a rank. Each rank's waits are durations on its own
clock, so hosts whose clocks differ compare alike.

Why rounds, not collectives, and why the wait for a CPU: a healthy 4-rank DDP job beside two CPU
hogs (2 cores, load 8-10) has one rank last at every bucket of a step, another one the next step,
now and then the same one for three steps: counted collective by collective (24 in 3 steps), 4 of
10 such runs named a rank at p < 0.001. Counted by rounds over 13 steps, one of 10 had a rank last
in 12 of them, which the machine held back (it waited 27 ms a step more for a CPU than the others;
with that taken off, last in 8 of 13). docs/benchmarks.md, figure F6, has the runs.

The input is a list of collectives per rank, ``(key, group, step, wait_s, start_s)`` (Collective),
whatever the backend: the key is the same collective on every rank (a group and its sequence
number, or the group, the step and the order in it). common/tracecollectives.py reads them from
gloo's and NCCL's traces; HCCL's operations would come the same way. Standard library only (and
common/findings.py, common/stepstats.py), and linear in the collectives: this runs over every rank
of a 1024-rank job in ``--check``.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from npuprof_launch.common import findings, stepstats

#: A rank is named when chance would make the rounds wait for it that often less than once in a
#: thousand jobs of alike ranks, after multiplying by the number of ranks tested (Bonferroni: any of
#: them could have been the one).
LEVEL = 0.001
TEST = "the last to arrive in more rounds of collectives than chance: binomial against 1 in n, times the ranks tested"
#: How many rounds a window must hold for its verdict to count when no rank is named: enough that
#: a rank the rounds waited for in this share of them would be named (fewer, and "no rank stands
#: out" would only say the window was short). A window of fewer is "too few", with the window that
#: would do.
DESIGN_SHARE = 0.75
#: A collective reached this long after the one before it was done, by every rank of its group,
#: starts a round: one that starts sooner was queued behind it (an NCCL stream's next kernel).
QUEUE_S = 0.0001
#: A rank is named only when the rounds waited for it more often than chance in more than this
#: share of its steps too: a rank held back in one step of tensor parallelism's many rounds is no
#: straggler.
STEPS_SHARE = 0.5
#: A rank that reached the rounds first more often than this level allows (times the ranks) is
#: early (_early): strict, so that the ranks beside a late one, which share the first place among
#: fewer, are rarely taken for it.
EARLY_LEVEL = 0.01
#: ...and when the others wait this much a step longer for it at least: less is the order in which
#: alike ranks reach a collective (findings.NOISE_S, the same millisecond).
NOISE_S = 0.001
#: A rank found by each step's widest round (_by_steps), not by all rounds: its ``counted``.
STEPS = "steps"
#: Why a rank the binomial test picks is not named (``why_not``).
SLIGHT = "slight"
#: It waited itself, in collectives of its other groups where another rank was late, at least
#: WAITED_SHARE of what the others of this group waited for it: late here because it waited there
#: (a tensor-parallel partner of a rank that stalls reaches their pair's collective late, having
#: waited for that rank in its data-parallel pair; tried: tests/scripts/tp_dp_pairs.py, the partner
#: the last in 30 of 30).
WAITED = "waited"
WAITED_SHARE = 0.5
WAITED_LEVEL = 0.05
ONE_STEP = "one_step"
#: The rounds waited for it more often than chance in one half of the window's steps only: a rank
#: the machine held back for a stretch (a busy core, seen on a loaded 2-core machine for 14 steps
#: running of 30), not one whose work is slower. The binomial test takes rounds as independent; a
#: stretch is one cause, so a straggler must be waited for more often than chance in both halves.
ONE_STRETCH = "one_stretch"
#: Its stepping thread waited for a CPU a step past the others of its group (their median) by
#: findings.CPU_EXPLAINS_SHARE of their wait for it, out of proportion to its work: the machine
#: held it (heldback.py tells that). The rounds take a step's wait for a CPU off evenly among them;
#: fallen before one, it leaves the rank late there (CI, the tensor/data-parallel pairs' job beside
#: the suite: rank 0, 34 ms a step waiting against 4.5 on the stalled rank 3, was named beside it).
#: Not by share alone: a rank with 3x the work waits in proportion (F22: 35 ms a step past the
#: others, who waited 81 ms for it).
HELD = "held"
#: The rounds as they were, no wait for a CPU or another rank taken off, waited for it by chance
#: (WAITED_LEVEL): a held-back rank's step wait taken off evenly lengthens its waits where it was
#: not late too, and its partner looks late there (held 34 ms before one of four rounds a step: the
#: partner became the last in 89 of 120, by 4 ms a step); a wait taken off where the rank had time
#: to spare makes its partner look late alike.
AS_THEY_WERE = "as_they_were"


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
    #: How many rounds each rank reached first (waited most in): an always early rank (_early)
    first: dict[int, int]
    #: Each step's round of the widest spread between first and last to arrive: the rank it waited
    #: for (None: a tie), by step
    worst: dict[int, int | None]
    #: The same counts (``last``, ``worst``) of the waits as they were, no wait for a CPU taken off
    last_raw: dict[int, int]
    worst_raw: dict[int, int | None]


def judge(
    waits: Waits,
    *,
    cpu: CpuWaits | None = None,
    ran: CpuWaits | None = None,
    hosts: Mapping[int, str | None] | None = None,
    level: float = LEVEL,
) -> dict[str, Any]:
    """Which rank, if any, the others wait for, from each rank's collectives (and its wait for a
    CPU in each step, ``cpu``, and its time on one, ``ran``, where known).

    Per group (the ranks that hold any of its collectives), the collectives every one of them holds
    are matched and cut into rounds, and each round waited for one rank (_matched). A rank the
    group's ``m`` rounds waited for ``k`` times, against chance ``1/n`` among its ``n`` ranks,
    passes the test when ``T * P(X >= k)`` for X ~ Binomial(m, 1/n) is below ``level``, T the ranks
    tested over every group; then the next most often waited for, and so on (the ranks of a slow
    host are each waited for more often than chance). One that passes is named when the rounds
    waited for it more often than chance in more than STEPS_SHARE of its steps, and the others
    waited NOISE_S a step longer for it at least (_effects), and the rounds waited for it more often
    than chance in each half of the steps (``halves_last_in``), and its own wait for a CPU past the
    others' (``cpu_excess_per_step_s``) does not explain theirs for it, and the rounds as they were
    waited for it more often than chance too (_as_they_were); else its ``why_not`` says which
    (ONE_STEP, ONE_STRETCH, SLIGHT, HELD, AS_THEY_WERE; WAITED: _waited_elsewhere).

    Returns ``named`` (each with its counts, p-value, effect and steps), ``passed`` (every rank that
    passed the test, named or not), ``top`` (the most often waited for, and its test), ``decided`` (a
    rank passed, or the window held enough rounds that one waited for in DESIGN_SHARE of them would
    have), ``rounds`` and ``collectives`` (the matched ones of the largest group), ``ranks_compared``,
    ``steps``, ``per_step`` (rounds), ``last_by_rank`` (the rounds of the largest group that waited
    for each of its ranks), and when too few ``needed`` and ``window_steps``, the window
    that would hold them; ``host`` when the ranks named are most of one host's ranks and none is
    elsewhere, in a job of several hosts."""
    groups = _matched(waits, cpu or {})
    tested = sum(len(group.members) for group in groups)
    verdict: dict[str, Any] = {"decided": False, "named": [], "passed": [], "top": None, "level": level, "test": TEST}
    verdict.update(rounds=0, collectives=0, ranks_compared=0, steps=0, per_step=0.0, host=None, ranks=len(waits))
    if not groups:
        return verdict
    main = max(groups, key=lambda group: (len(group.rounds), len(group.keys), group.name))
    per_step = len(main.rounds) / len(main.per_step)
    verdict.update(rounds=len(main.rounds), collectives=len(main.keys), ranks_compared=len(main.members))
    verdict.update(steps=len(main.per_step), per_step=per_step)
    verdict["last_by_rank"] = {rank: main.last.get(rank, 0) for rank in main.members}
    late_in: dict[str, set[int]] = {}
    for group in groups:
        passed = []
        early = _early(group)
        alike = len(group.members) - len(early)  # the ranks that take the last place by chance
        for rank, count in sorted(group.last.items(), key=lambda kv: (-kv[1], kv[0])):
            p_value = min(1.0, tested * findings.binomial_tail(count, len(group.rounds), 1 / alike))
            found = _found(group, rank, count, len(group.rounds), p_value, early)
            if verdict["top"] is None or p_value < verdict["top"]["p_value"]:
                verdict["top"] = found
            if p_value >= level:
                break
            passed.append(found)
        passed += _by_steps(group, tested, alike, level, early, {found["rank"] for found in passed})
        late_in[group.name] = _late_at_all(group, tested, alike)
        effects = _effects(group, waits, [found["rank"] for found in passed]) if passed else {}
        for found in passed:
            found.update(effects[found["rank"]])
            by_steps = found.get("counted") == STEPS
            often = (
                found["last_in"]
                if by_steps
                else sum(
                    1
                    for step, held in group.per_step.items()
                    if group.last_in_step.get((found["rank"], step), 0) * alike > held
                )
            )
            found["steps_last_often"] = often
            found["halves_last_in"] = halves = _halves(group, found["rank"], by_steps)
            held_s, wait_ratio = _cpu_excess(group, cpu or {}, found["rank"])
            found.update(cpu_excess_per_step_s=held_s, cpu_wait_ratio=wait_ratio)
            theirs = {member: (ran or {}).get(member) or {} for member in group.members}
            found["ran_ratio"] = ran_ratio = stepstats.ratio_among(theirs, found["rank"])
            found["why_not"] = (
                ONE_STEP
                if often <= STEPS_SHARE * len(group.per_step)
                else ONE_STRETCH
                if any(last * alike <= held for last, held in halves)
                else SLIGHT
                if found["wait_per_step_s"] < NOISE_S
                else HELD
                if held_s >= findings.CPU_EXPLAINS_SHARE * found["wait_per_step_s"]
                and findings.out_of_proportion(wait_ratio, ran_ratio)
                else AS_THEY_WERE
                if _as_they_were(group, found, tested, alike) >= WAITED_LEVEL
                else None
            )
        verdict["passed"].extend(passed)
    members = {group.name: set(group.members) for group in groups}
    _waited_elsewhere(verdict["passed"], waits, late_in, members)
    named: dict[int, dict[str, Any]] = {}
    for found in verdict["passed"]:  # a rank late in several groups: named once, by its strongest
        if found["why_not"] is None and found["p_value"] < named.get(found["rank"], {}).get("p_value", 2.0):
            named[found["rank"]] = found
    verdict["named"] = sorted(named.values(), key=lambda found: (found["p_value"], found["rank"]))
    needed = least_rounds(len(main.members), tested, level)
    if verdict["passed"] or len(main.rounds) >= needed:
        verdict["decided"] = True
    else:
        verdict.update(needed=needed, window_steps=math.ceil(needed / per_step))
    verdict["host"] = slow_host(verdict["named"], hosts, list(waits))
    return verdict


def _cpu_excess(group: _Group, cpu: CpuWaits, rank: int) -> tuple[float, float]:
    """What ``rank``'s stepping thread waited for a CPU a step, over the group's steps, past the
    others of the group (their median in each step), and that over theirs; (0.0, 0.0) where the
    waits are not known."""
    if not cpu.get(rank):
        return 0.0, 0.0
    own = sum(cpu[rank].get(step, 0.0) for step in group.per_step)
    theirs = sum(
        statistics.median((cpu.get(other) or {}).get(step, 0.0) for other in group.members if other != rank)
        for step in group.per_step
    )
    return (own - theirs) / len(group.per_step), own / theirs if theirs > 0 else math.inf


def _late_at_all(group: _Group, tested: int, alike: int) -> set[int]:
    """The group's ranks that its rounds, or its steps' widest rounds, waited for more often than
    chance at WAITED_LEVEL: lenient, since it only refuses a finding (a stalled rank the last in 12
    of 13 rounds of its pair passes here and not the test, and its partner, late for waiting on it,
    was named). With waits for a CPU taken off and as they were: a rank the machine held made its
    partner wait all the same (tp_dp_pairs.py, rank 0 bound to a core beside two spinning processes:
    its data-parallel partner, late at their tensor-parallel all-reduce for waiting on it, named)."""
    late = set()
    rounds, steps = len(group.rounds), len(group.per_step)
    worst, worst_raw = _worst_counts(group), _worst_counts(group, raw=True)
    for counts, of in ((group.last, rounds), (worst, steps), (group.last_raw, rounds), (worst_raw, steps)):
        for rank, count in counts.items():
            if tested * findings.binomial_tail(count, of, 1 / alike) < WAITED_LEVEL:
                late.add(rank)
    return late


def _waited_elsewhere(
    passed: list[dict[str, Any]], waits: Waits, late_in: dict[str, set[int]], members: dict[str, set[int]]
) -> None:
    """Each rank that passed in a group, unless already refused: WAITED where its own wait a step,
    over the same steps, in the collectives of its groups of other ranks in which another rank was
    late (``late_in``, _late_at_all; ``waited_elsewhere_s``; ``waited_in``, the one it waited in
    most) is WAITED_SHARE of the others' extra wait for it here. Only those groups: a rank's waits
    where no one was late (a DDP job's broadcast beside its all-reduces) say nothing of why it was
    late, nor do those among the same ranks (gloo's all-reduces beside its all-gathers in one
    process group: FSDP2's stalled rank, waiting at the gradients' all-reduces as every rank does,
    was refused once in five runs)."""
    for found in passed:
        if found["why_not"] is not None:
            continue
        steps, rank = set(found["steps"]), found["rank"]
        elsewhere: dict[str, float] = {}
        for _, group, step, wait, _ in waits[rank]:
            if step in steps and late_in.get(group, set()) - {rank} and members[group] != members[found["group"]]:
                elsewhere[group] = elsewhere.get(group, 0.0) + wait
        if not elsewhere:
            continue
        waited = sum(elsewhere.values()) / len(steps)
        found.update(waited_elsewhere_s=waited, waited_in=max(elsewhere, key=lambda group: elsewhere[group]))
        if waited >= WAITED_SHARE * found["wait_per_step_s"]:
            found["why_not"] = WAITED


def _early(group: _Group) -> list[int]:
    """The ranks of a group (of three or more) that reached its rounds first more often than chance
    allows at EARLY_LEVEL (times the ranks): a rank with less work than the others, or a lighter
    share of the machine. The last place is then shared by the others alone, each by 1 in n - 1,
    not 1 in n: tested against 1 in n, an alike rank beside one 20 ms early was named in 2.3 % of
    30-round windows at a level of 0.1 % (1 in 1,500 without it). Never every rank but one: that
    one would be late beside all the others, which is what the test is for."""
    members, rounds = len(group.members), len(group.rounds)
    if members < 3:
        return []
    early = sorted(
        rank
        for rank, count in group.first.items()
        if members * findings.binomial_tail(count, rounds, 1 / members) < EARLY_LEVEL
    )
    return early if members - len(early) >= 2 else []


def _halves(group: _Group, rank: int, by_steps: bool = False) -> list[tuple[int, int]]:
    """(rounds that waited for ``rank``, rounds) in the first and the second half of the group's
    steps; ``by_steps``: (steps whose widest round waited for it, steps)."""
    steps = sorted(group.per_step)
    middle = len(steps) // 2
    if by_steps:
        return [
            (sum(1 for step in half if group.worst.get(step) == rank), len(half))
            for half in (steps[:middle], steps[middle:])
        ]
    return [
        (sum(group.last_in_step.get((rank, step), 0) for step in half), sum(group.per_step[step] for step in half))
        for half in (steps[:middle], steps[middle:])
    ]


def _by_steps(
    group: _Group, tested: int, alike: int, level: float, early: list[int], passed: set[int]
) -> list[dict[str, Any]]:
    """Where a step holds several rounds (FSDP's all-gathers, tensor parallelism's all-reduces): the
    ranks each step's widest round waited for more often than chance, not already passed by the
    rounds (``counted``: STEPS). A rank that stalls once a step is late at one of the step's rounds
    alone, and the rest of them wait for no one in particular: counted by rounds, its lateness is
    diluted (tried: FSDP2 on 4 ranks, one sleeping 30 ms before each backward, the others waiting
    30-35 ms at its first all-gather: the last in 20 to 44 of 104 rounds, "no rank stands out"
    but once, at 44). Its p-value is doubled, for the second test made of the same window."""
    if max(group.per_step.values()) < 2:
        return []  # a round a step: the rounds' test is this one
    found = []
    for rank, count in sorted(_worst_counts(group).items(), key=lambda kv: (-kv[1], kv[0])):
        p_value = min(1.0, 2 * tested * findings.binomial_tail(count, len(group.per_step), 1 / alike))
        if p_value >= level:
            break
        if rank not in passed:
            found.append(_found(group, rank, count, len(group.per_step), p_value, early, counted=STEPS))
    return found


def _as_they_were(group: _Group, found: dict[str, Any], tested: int, alike: int) -> float:
    """The test of ``found``'s rank on the rounds as they were, no wait for a CPU taken off, and on
    each step's widest of them (a rank late at one round of each step: its other rounds dilute it):
    the lesser p-value, the counts in ``as_they_were``, ``[[rounds, of], [steps, of]]``."""
    rank, rounds, steps = found["rank"], len(group.rounds), len(group.per_step)
    counts = [[group.last_raw.get(rank, 0), rounds], [_worst_counts(group, raw=True).get(rank, 0), steps]]
    found["as_they_were"] = counts
    return min(tested * findings.binomial_tail(count, of, 1 / alike) for count, of in counts)


def _worst_counts(group: _Group, raw: bool = False) -> dict[int, int]:
    """How many steps' widest round waited for each rank (``raw``: of the waits as they were)."""
    counts: dict[int, int] = {}
    for laggard in (group.worst_raw if raw else group.worst).values():
        if laggard is not None:
            counts[laggard] = counts.get(laggard, 0) + 1
    return counts


def _found(
    group: _Group, rank: int, count: int, of: int, p_value: float, early: list[int], counted: str | None = None
) -> dict[str, Any]:
    """A rank's test in ``group``: the last in ``count`` of ``of`` rounds (or steps, ``counted``)."""
    found: dict[str, Any] = {"rank": rank, "group": group.name, "last_in": count, "rounds": of}
    if counted is not None:
        found["counted"] = counted
    found.update(collectives=len(group.keys), ranks_compared=len(group.members), members=list(group.members))
    found["p_value"] = p_value
    if early:
        found["early_ranks"] = early
    return found


def _matched(waits: Waits, cpu: CpuWaits) -> list[_Group]:
    """The groups of two ranks or more, each with its collectives that every one of its ranks holds,
    cut into rounds: a collective starts one where its step does, or where every rank of the group
    reached it QUEUE_S after the one before it (in the group, on that rank) was done. A round waited
    for the rank with the least wait in its last collective, each rank's wait made longer by its
    wait for a CPU in that step (shared evenly among the step's rounds) and by its waits at groups
    of other ranks since its last collective of this group in the step (_waited_since): as if the
    machine and the other ranks had not held it back. A tie names none. A rank holds a key once (it
    names one collective of its window)."""
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
    ends: dict[str, list[Any]] = {}  # a round's last key -> [its share of a step, least wait, its rank]
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
        group = _Group(name, sorted(members[name]), set(), [], {}, {}, {}, {}, {}, {}, {})
        for keys in rounds:
            step = seen[keys[0]][1]
            group.keys.update(keys)
            group.rounds.append((step, None, keys))
            group.per_step[step] = group.per_step.get(step, 0) + 1
        for _, _, keys in group.rounds:
            ends[keys[-1]] = [1 / group.per_step[seen[keys[0]][1]], math.inf, None, -math.inf, None]
            ends[keys[-1]] += [math.inf, None, -math.inf]  # the same of the waits as they were
        groups.append(group)
    ranks_of = {name: frozenset(ranks) for name, ranks in members.items()}
    for rank, collectives in waits.items():
        theirs, since = cpu.get(rank) or {}, _waited_since(collectives, ranks_of)
        for key, _, step, wait, _ in collectives:
            end = ends.get(key)
            if end is None:
                continue
            held = wait + end[0] * theirs.get(step, 0.0) + since.get(key, 0.0)
            if held < end[1]:
                end[1], end[2] = held, rank
            elif held == end[1]:
                end[2] = None
            if held > end[3]:
                end[3], end[4] = held, rank
            elif held == end[3]:
                end[4] = None
            if wait < end[5]:
                end[5], end[6] = wait, rank
            elif wait == end[5]:
                end[6] = None
            end[7] = max(end[7], wait)
    for group in groups:
        for index, (step, _, keys) in enumerate(group.rounds):
            laggard = ends[keys[-1]][2]
            group.rounds[index] = (step, laggard, keys)
            earliest = ends[keys[-1]][4]
            if earliest is not None:
                group.first[earliest] = group.first.get(earliest, 0) + 1
            if laggard is not None:
                group.last[laggard] = group.last.get(laggard, 0) + 1
                group.last_in_step[laggard, step] = group.last_in_step.get((laggard, step), 0) + 1
            if ends[keys[-1]][6] is not None:
                group.last_raw[ends[keys[-1]][6]] = group.last_raw.get(ends[keys[-1]][6], 0) + 1
        widest: dict[int, float] = {}
        widest_raw: dict[int, float] = {}
        for step, laggard, keys in group.rounds:
            end = ends[keys[-1]]
            if end[3] - end[1] > widest.get(step, -math.inf):
                widest[step], group.worst[step] = end[3] - end[1], laggard
            if end[7] - end[5] > widest_raw.get(step, -math.inf):
                widest_raw[step], group.worst_raw[step] = end[7] - end[5], end[6]
    return groups


def _waited_since(collectives: Sequence[tuple[str, str, int, float, float]], ranks_of: dict[str, frozenset]) -> dict:
    """What the rank waited in collectives of groups of other ranks since its last collective of a
    group in the step (or the step's start), by the key of its next one: late there for waiting on
    another rank, as it is for waiting on a CPU (tried: tp_dp_pairs.py with rank 0 held by the
    machine and rank 3 stalling: rank 1, late at its data-parallel pair with rank 3 for waiting on
    rank 0 at their tensor-parallel pair, was the last there as often as rank 3)."""
    since: dict[str, float] = {}
    current, total = None, 0.0
    by_ranks: dict[frozenset, float] = {}
    last: dict[str, tuple[float, float]] = {}
    for key, group, step, wait, _ in sorted(collectives, key=lambda one: (one[2], one[4])):
        if step != current:
            current, total, by_ranks, last = step, 0.0, {}, {}
        ranks = ranks_of[group]
        total_then, own_then = last.get(group, (0.0, 0.0))
        since[key] = total - total_then - (by_ranks.get(ranks, 0.0) - own_then)
        total += wait
        by_ranks[ranks] = by_ranks.get(ranks, 0.0) + wait
        last[group] = (total, by_ranks[ranks])
    return since


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


def slow_host(named: list[dict], hosts: Mapping[int, str | None] | None, ranks: list[int]) -> str | None:
    """The host of the ranks named, where they are most of its ranks and it is one of several."""
    if not named or not hosts or len({hosts.get(rank) for rank in ranks}) < 2:
        return None
    where = {hosts.get(found["rank"]) for found in named}
    if len(where) != 1 or None in where:
        return None
    (host,) = where
    on_it = [rank for rank in ranks if hosts.get(rank) == host]
    return host if 2 * len(named) > len(on_it) else None


_LEAST: dict[tuple[int, int, float], int] = {}


def least_rounds(ranks: int, tested: int, level: float = LEVEL) -> int:
    """The rounds a window needs for its verdict to count: the fewest from which on a rank waited for
    in DESIGN_SHARE of them would pass the test, among ``ranks`` ranks and ``tested`` tests (the next
    few counts too: rounding the share up makes a count pass that its next fails)."""

    def passes(m: int) -> bool:
        return tested * findings.binomial_tail(math.ceil(DESIGN_SHARE * m), m, 1 / ranks) < level

    key = (ranks, tested, level)
    if key not in _LEAST:
        m = 1
        while not all(passes(m + more) for more in range(4)):
            m += 1
        _LEAST[key] = m
    return _LEAST[key]
