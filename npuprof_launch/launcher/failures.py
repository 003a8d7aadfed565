"""Which process of the job raised first, at which step, and what: the answer's ``raised`` item.

A job that fails on one rank ends on all of them: the others lose their peer and raise in a
collective ("Connection closed by peer"), or their launcher stops them with SIGTERM. The first
exception is the one to read; the rest follow from it, and a user who reads torchrun's tracebacks
rank by rank can take a consequence for the cause. The hook keeps each process's uncaught exception
as an outcome (endreason.py, kind UNCAUGHT) with the wall clock as its exit handlers began
(``at_ns``; a record written before it had none: its last write, ``updated_ns``, which a window's
export at exit delays); on several hosts that order rests on their clocks, and the text says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from npuprof_launch.common import outcomes
from npuprof_launch.common.record import ENDED_SIGNAL, ReadRecord, attempt_of
from npuprof_launch.launcher import answer, reasons, wording

#: How much of a later process's message the sentence keeps (the first's is kept whole).
LATER_MESSAGE_CHARS = 90


def items(records: list[ReadRecord], unhandled: list[dict], log: Iterable[dict] = ()) -> tuple[list[dict], list[dict]]:
    """One ``raised`` item for each attempt of the job in which a process ended with an uncaught
    exception (torchelastic's restarts are told apart: attempt N's failure is not attempt N+1's);
    and the ``ended_without_handlers`` notes (of ``unhandled``) told in them instead.

    A process of the same attempt that ended without its exit handlers is told in the item: a
    launcher's SIGTERM to the others ends a process so, and so does the out-of-memory kill that may
    have set off the exception. Which came first is unknown (a killed process writes nothing as it
    dies), so the item says "first" of the processes that raised only, never of those.

    A worker of torch.multiprocessing.spawn catches its exception and hands it to its parent, which
    raises it again (ProcessRaisedException): the parent's line in the process log (``log``) names
    the child and its exception, and the child is told as having raised it.
    """
    spawned = {
        (line.get("host"), line["raised"].get("child_pid")): line["raised"] for line in log if line.get("raised")
    }
    attempts: dict[int, list[ReadRecord]] = {}
    for record in records:
        if "unreadable" not in record:
            attempts.setdefault(attempt_of(record), []).append(record)
    made, folded = [], []
    for attempt, members in sorted(attempts.items()):
        raised = [(record, outcome) for record in members if (outcome := _uncaught(record, spawned)) is not None]
        once = {(record.get("host"), record.get("pid")): (record, outcome) for record, outcome in reversed(raised)}
        raised = list(once.values())  # a process with two stages has two records: one end
        if raised:
            pids = {(record.get("host"), record.get("pid")) for record in members}
            killed = [note for note in unhandled if (note["evidence"].get("host"), note["evidence"].get("pid")) in pids]
            stopped = [r for r in members if r.get("ended") == ENDED_SIGNAL and _uncaught(r, spawned) is None]
            made.append(_item(raised, stopped, killed, attempt if len(attempts) > 1 else None))
            folded += killed
    return made, folded


def _uncaught(record: ReadRecord, spawned: dict) -> dict | None:
    """The process's own uncaught exception, or the one its mp.spawn parent raised for it."""
    found = outcomes.of_kind(outcomes.of_record(record), outcomes.UNCAUGHT)
    if found:
        return found[-1]
    handed = spawned.get((record.get("host"), record.get("pid")))
    if handed is None:
        return None
    steps = record.get("steps")
    step = steps + (record.get("step_offset") or 0) if isinstance(steps, int) else None
    return {"kind": outcomes.UNCAUGHT, "step": step, "type": handed.get("type"), "message": handed.get("message")}


def _item(
    raised: list[tuple[ReadRecord, dict]], stopped: list[ReadRecord], killed: list[dict], attempt: int | None
) -> dict:
    raised.sort(key=lambda pair: _at_ns(*pair))
    first_ns = _at_ns(*raised[0])
    ended = [_ended(record, outcome, first_ns) for record, outcome in raised]
    first = ended[0]
    hosts = {one["host"] for one in ended}
    order = "first" if len(hosts) == 1 else "first by the hosts' clocks"
    if killed:
        order += " of the processes that raised"
    if len(ended) > 1:
        text = f"{_who(first)} raised {order}: an uncaught {first['type']} after step {first['step']}"
    else:
        text = f"{_who(first)} ended with an uncaught {first['type']} after step {first['step']}"
    text += f": {first['message']}" if first["message"] else ""
    later = ended[1:]
    for kind in sorted(
        {one["type"] for one in later}, key=lambda k: min(o["after_s"] for o in later if o["type"] == k)
    ):
        group = [one for one in later if one["type"] == kind]
        lag = max(one["after_s"] for one in group)
        said = f"{_whose(group)} raised {kind} "
        said += f"{lag:.2f} s later" if len(group) == 1 else f"within {lag:.2f} s"
        message = group[0]["message"] if len(group) == 1 else None
        if message:
            said += f" ({_shortened(message)})"
        text += f"; then {said}"
    stopped_ranks = [r.get("rank") for r in stopped if r.get("rank") is not None]
    if stopped_ranks:
        text += f"; {wording.who(stopped_ranks)} stopped by SIGTERM"
    killed_ranks = [rank for note in killed for rank in note["ranks"]]
    if killed:
        last = sorted({step for note in killed for step in note["steps"]})
        steps = f" (last known step {last[0]})" if len(last) == 1 else f" (last known steps {last[0]}-{last[-1]})"
        whom = wording.who(killed_ranks) if killed_ranks else wording.count(len(killed), "process")
        text += (
            f"; {whom} ended without exit handlers{steps if last else ''}: killed, by a launcher's SIGTERM as "
            "torchrun's when a worker fails, or by an out-of-memory kill"
        )
    if attempt is not None:
        text = f"attempt {attempt}: {text}"
    ranks = [one["rank"] for one in ended]
    unhandled = [
        {"rank": (note["ranks"] or [None])[0], "pid": note["evidence"].get("pid"), "step": (note["steps"] or [None])[0]}
        for note in killed
    ]
    return answer.item(
        "raised",
        text,
        ranks,
        [first["step"]],
        first=first,
        processes=ended,
        stopped=sorted(stopped_ranks) or None,
        ended_without_handlers=unhandled or None,
        attempt=attempt,
    )


def _ended(record: ReadRecord, outcome: dict, first_ns: int) -> dict:
    """One process's end as evidence: who, where, the job's step, the exception, how long after the first."""
    step = outcome.get("step")  # the job's own number: the session adds its step_offset
    return {
        "rank": record.get("rank"),
        "pid": record.get("pid"),
        "host": record.get("host"),
        "step": step,
        "type": outcome.get("type"),
        "message": outcome.get("message"),
        "after_s": round(((_at_ns(record, outcome) or first_ns) - first_ns) / 1e9, 3),
    }


def _at_ns(record: ReadRecord, outcome: dict) -> int:
    """When the process raised: its exit handlers' start, else its record's last write."""
    return outcome.get("at_ns") or record.get("updated_ns") or 0


def _who(one: dict) -> str:
    return f"rank {one['rank']}" if one["rank"] is not None else f"the process (pid {one['pid']})"


def _whose(group: list[dict]) -> str:
    ranks = [one["rank"] for one in group if one["rank"] is not None]
    rankless = len(group) - len(ranks)
    said = [wording.who(ranks)] if ranks else []
    if rankless:
        said.append(wording.count(rankless, "process"))
    return " and ".join(said)


def _shortened(message: str) -> str:
    """A later process's message, its source location left out ("[.../pair.cc:553] Connection closed
    by peer" is gloo's): its own words come first within the few kept."""
    message = re.sub(r"^\[[^\]\s]*:\d+\]\s*", "", message)
    return message if len(message) <= LATER_MESSAGE_CHARS else message[: LATER_MESSAGE_CHARS - 3].rstrip() + "..."


def ended_item(run: dict | None, records: list[ReadRecord], told: bool) -> dict | None:
    """The ``job_ended`` note: how the command ended, where it did not end well and nothing else
    says so (``told``: a ``raised`` item or a problem already did): a Ctrl-C, a ``sys.exit(3)``, a
    signal after the windows were complete, with the job's last step."""
    ended = reasons.how_the_job_ended(run)
    if told or ended is None:
        return None
    last = [r["steps"] + (r.get("step_offset") or 0) for r in records if isinstance(r.get("steps"), int)]
    text = f"{ended}, after step {max(last)}" if last else ended
    status = run.get("status") if run else None
    return answer.item(
        "job_ended", text, steps=[max(last)] if last else [], status=status, signal=run and run.get("signal")
    )
