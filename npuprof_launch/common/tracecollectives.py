"""Each collective of a window's torch trace, with how long this rank waited in it.

For the test of which rank the others wait for (launcher/collectives.py): the rank that arrives last
at a collective waits least in it. A wait is a duration on this rank's own clock, so hosts whose
clocks differ compare alike. deliverables.py hands over the events as it reads the trace once
(Gathered); the window's summary keeps them small (``record``), and the report reads them back as
``(key, group, step, wait_s, start_s)`` each (``of``), the key the same collective on every rank.

What measures the wait, by backend:

- NCCL: the kernel, numbered by its group and sequence number (the args Kineto copies onto it from
  ``record_param_comms``: "Process Group Name", "Seq"; libkineto's output_json.cpp,
  appendCollectiveArgs). It starts on its stream when this rank reaches the collective and ends when
  every rank's part is done.
- gloo: from the call that hands the collective over (``c10d::allreduce_``, on the caller's thread)
  to the end of its ``gloo:`` range on a worker thread, numbered by its order among the collectives
  of its name in the recorded step (the same on every rank: the calls come in program order, and
  the worker threads take them first in, first out). The range alone starts when a worker thread
  takes the collective, which for all but the first of a step's DDP buckets is when an earlier one
  ended, the same moment on every rank: its duration then holds the transfer, not the wait (tried:
  a 4-rank DDP job, one rank with twice the others' rows, beside two CPU hogs, 12 collectives in 3
  steps: that rank waited least from its call in 12, 11, 12 and 12 of them in four runs, by the
  range alone in 10, 9, 10 and 12). Where the calls and the ranges of a name do not pair up (a
  coalesced call, a range whose call came before the window), the range alone is taken. A gloo
  range names no process group: where the process said which group each worker thread serves
  (``threads``, inprocess/groupthreads.py) and the window's ranges of an operation span several
  groups, each is numbered within its group, named with its group's ranks ("gloo:all_reduce
  0,2"), and timed by its range alone (a call does not say which group it went to).

None where neither is in the trace (an old torch, a backend without these events): the report then
judges by the time in collectives alone (launcher/lockstep.py). HCCL's operations on an NPU are not
read here (an NPU window is not summarized into collectives yet); the test takes them as it takes
these, as a list of collectives per rank.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

GLOO_RANGE = "gloo:"
#: The call of a collective on the caller's thread, a ``cpu_op``.
CALL = "c10d::"
GROUP_ARG = "Process Group Name"
SEQ_ARG = "Seq"
#: A window keeps at most this many collectives, the first ones of each recorded step alike: the
#: test needs tens of them (two ranks, the hardest case, 45 for one last at three of four:
#: collectives.least_collectives), and 1024 ranks' summaries then stay about 20 MB for ``--check``
#: to read (about 40 bytes each).
MOST = 512
#: Point-to-point operations (a pipeline's sends and receives) are no collectives: each joins two
#: ranks, in an order that differs from rank to rank (a stage receives what the one before sends),
#: and numbered by name they matched unrelated operations of other ranks (tried: a balanced 4-stage
#: gloo pipeline beside two CPU hogs, a 13-step window, had rank 2 named "the last in 27 of 52
#: rounds"). Told by a word of the name: gloo's ranges ("gloo:send", "gloo:recv"), NCCL's kernels
#: ("ncclDevKernel_SendRecv") and the collective's name Kineto copies onto them ("send", "recv",
#: "batch_isend_irecv"), HCCL's operations (msprof-analyze's point-to-point ones: "hcom_send",
#: "hcom_receive", "hcom_batchsendrecv").
POINT_TO_POINT = ("send", "recv", "receive")
NAME_ARG = "Collective name"
#: How a window's collectives are numbered, so that one is the same collective on every rank: by
#: the group's sequence number, or by their order in the recorded step (per name).
BY_SEQ = "seq"
BY_ORDER = "order"


class Gathered:
    """The events of one trace that tell its collectives, as deliverables.py reads them."""

    def __init__(self, threads: Mapping[str, str] | None = None) -> None:
        self.ranges: list[tuple[float, float, str]] = []
        self.calls: list[tuple[float, str]] = []
        self.sequenced: list[tuple[float, float, str, int]] = []
        #: The group of each gloo worker thread (a tid as a string -> its group's label), and the
        #: group of each range where its thread is one of them.
        self.threads = threads or {}
        self.range_groups: list[str | None] = []
        self.point_to_point = 0

    def marked(self, name: str, ts: float, dur: float, args: object, tid: object = None) -> None:
        """An event of collective communication (deliverables.COLLECTIVE_MARKS), on thread ``tid``."""
        if point_to_point(name, args):
            self.point_to_point += 1
            return
        if name.startswith(GLOO_RANGE):
            self.ranges.append((ts, dur, name))
            self.range_groups.append(self.threads.get(str(tid)))
        elif isinstance(args, dict) and SEQ_ARG in args and GROUP_ARG in args:
            with contextlib.suppress(TypeError, ValueError):
                self.sequenced.append((ts, dur, str(args[GROUP_ARG]), int(args[SEQ_ARG])))

    def called(self, name: str, ts: float) -> None:
        """A ``c10d::`` call on the caller's thread."""
        self.calls.append((ts, name))

    def record(self, steps: list[tuple[float, float, int]]) -> dict | None:
        """The collectives of the recorded ``steps`` (``(start, end, the job's step)`` each), as the
        window's summary keeps them: each group's name once, each collective ``[group index, number,
        step, start_us, wait_us]``, its start from its step's; the first MOST of the window, alike
        from each step; none (``point_to_point``: how many sends and receives) where the window's
        communication was point-to-point only; None where the trace does not tell them."""
        steps = sorted(steps)
        if not self.sequenced and not self.ranges and self.point_to_point:
            return {"by": BY_ORDER, "seen": 0, "groups": [], "items": [], "point_to_point": self.point_to_point}
        if self.sequenced:
            found = [(ts, group, seq, dur) for ts, dur, group, seq in self.sequenced]
            by = BY_SEQ
        elif self.ranges:
            found = [(ts, name, 0, wait) for ts, name, wait in _gloo_waits(*self._in_groups(), self.calls)]
            by = BY_ORDER
        else:
            return None
        by_step: dict[tuple[int, float], list[tuple[float, str, int, float]]] = {}
        for item in sorted(found):
            at = _step_at(steps, item[0], within=by == BY_ORDER)
            if at is not None:
                by_step.setdefault(at, []).append(item)
        kept = max(1, MOST // max(1, len(by_step)))
        groups: dict[str, int] = {}
        items = []
        for (step, begun), each in sorted(by_step.items()):
            order: dict[str, int] = {}
            for ts, group, number, wait in each[:kept]:
                if by == BY_ORDER:
                    number = order[group] = order.get(group, -1) + 1
                index = groups.setdefault(group, len(groups))
                items.append([index, number, step, round(ts - begun, 1), round(wait, 1)])
        seen = sum(len(each) for each in by_step.values())
        return {"by": by, "seen": seen, "groups": list(groups), "items": items}

    def _in_groups(self) -> tuple[list[tuple[float, float, str]], set[str]]:
        """The ranges, each named with its group's ranks where an operation's ranges span several
        groups; and those names (their calls cannot be told apart: each range is timed alone)."""
        groups_of: dict[str, set[str | None]] = {}
        for (_, _, name), group in zip(self.ranges, self.range_groups):
            groups_of.setdefault(name, set()).add(group)
        spread = {name for name, groups in groups_of.items() if len(groups) > 1}
        if not spread:
            return self.ranges, set()
        ranges, alone = [], set()
        for (ts, dur, name), group in zip(self.ranges, self.range_groups):
            if name in spread:
                name = f"{name} {group if group is not None else '?'}"
                alone.add(name)
            ranges.append((ts, dur, name))
        return ranges, alone


def point_to_point(name: str, args: object = None) -> bool:
    """Whether an event or an operation of communication is a send or a receive (POINT_TO_POINT):
    by the collective's name where the event carries it, else by its own."""
    if isinstance(args, dict) and isinstance(args.get(NAME_ARG), str):
        name = args[NAME_ARG]
    lowered = name.lower()
    return any(word in lowered for word in POINT_TO_POINT)


def merged(first: dict | None, second: dict | None) -> dict | None:
    """Two traces' records of one window as one (each a part of the window's collectives)."""
    if first is None or second is None:
        return first or second
    groups = list(dict.fromkeys([*first["groups"], *second["groups"]]))
    index = {group: i for i, group in enumerate(groups)}
    items = [[index[record["groups"][g]], *rest] for record in (first, second) for g, *rest in record["items"]]
    return {"by": first["by"], "seen": first["seen"] + second["seen"], "groups": groups, "items": items}


def of(record: object) -> list[tuple[str, str, int, float, float]] | None:
    """A summary's collectives as ``(key, group, step, wait_s, start_s)``, ``key`` the same on every
    rank: the group and its sequence number, or the group, the step and the order in it. None for a
    summary without them (written before they were kept, or from a trace that does not tell them)."""
    if not isinstance(record, dict) or not isinstance(record.get("items"), list):
        return None
    groups = record.get("groups") or []
    items = record["items"]
    # One comprehension a numbering, no call a collective: --check reads 512 of them a rank.
    if record.get("by") == BY_SEQ:
        return [
            (f"{groups[g]}#{n}", groups[g], int(step), wait / 1e6, start / 1e6) for g, n, step, start, wait in items
        ]
    return [
        (f"{groups[g]}@{step}#{n}", groups[g], int(step), wait / 1e6, start / 1e6) for g, n, step, start, wait in items
    ]


def _gloo_waits(
    ranges: list[tuple[float, float, str]], alone: set[str], calls: list[tuple[float, str]]
) -> list[tuple[float, str, float]]:
    """``(ts, name, wait_us)`` of each gloo range: from its call to its end where the calls and the
    ranges of its name pair up in order, else (and for the names ``alone``) its own duration;
    ``ts`` is the call's, else its own."""
    by_op: dict[str, tuple[list, list]] = {}
    waits = []
    for ts, dur, name in sorted(ranges):
        if name in alone:
            waits.append((ts, name, dur))
        else:
            by_op.setdefault(_op_of(name), ([], []))[0].append((ts, dur, name))
    for ts, name in sorted(calls):
        if _op_of(name) in by_op:
            by_op[_op_of(name)][1].append(ts)
    for found, called in by_op.values():
        if called:
            found = [one for one in found if one[0] >= called[0]]  # called before the window opened
        paired = len(found) <= len(called) and all(one[0] >= call for one, call in zip(found, called))
        for index, (ts, dur, name) in enumerate(found):
            waits.append((called[index], name, ts + dur - called[index]) if paired else (ts, name, dur))
    return waits


def _op_of(name: str) -> str:
    """What a call and its gloo range share: "c10d::_allgather_base_" and "gloo:all_gather" are "allgather"."""
    return name.rpartition(":")[2].strip("_").removesuffix("_base").replace("_", "")


def _step_at(steps: list[tuple[float, float, int]], ts: float, within: bool) -> tuple[int, float] | None:
    """The recorded step a collective belongs to, and its start: the one that holds ``ts``
    (``within``: a call made in it), else the last begun by then (a kernel runs after the step that
    launched it)."""
    found = None
    for start, end, number in steps:
        if start > ts:
            break
        found = (number, start) if not within or ts < end else None
    return found
