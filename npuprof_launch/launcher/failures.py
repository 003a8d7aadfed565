"""Which process of the job failed, at which step, and how: the answer's ``failed`` item.

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
import signal
from collections.abc import Iterable

from npuprof_launch.common import outcomes
from npuprof_launch.common.record import ENDED_SIGNAL, ReadRecord, attempt_of
from npuprof_launch.launcher import answer, reasons, wording

#: How much of a later process's message the sentence keeps (the first raiser's is kept as
#: recorded, unless a process died or exited before it: then it is likely the consequence).
LATER_MESSAGE_CHARS = 90


def items(records: list[ReadRecord], unhandled: list[dict], log: Iterable[dict] = ()) -> tuple[list[dict], list[dict]]:
    """One ``failed`` item for each attempt of the job in which a process failed: ended with an
    uncaught exception, died of a signal or exited with an error status (torchelastic's restarts are
    told apart: attempt N's failure is not attempt N+1's); and the ``ended_without_handlers`` notes
    (of ``unhandled``) told in them instead.

    A process of the same attempt that ended without its exit handlers is told in the item: a
    launcher's SIGTERM to the others ends a process so, and so does the out-of-memory kill that may
    have set off the exception. Its launcher's account (``log``: torchrun's agent's ChildFailedError,
    mp.spawn's parent's ProcessExitedException, endreason.children_ended) says how, where there is
    one: "died of SIGKILL", "exited with status 3", told before the exceptions, as they are often
    the others' "Connection closed by peer". Which came first is unknown (a killed process writes
    nothing as it dies), so "first" is said of the processes that raised only.

    A worker of torch.multiprocessing.spawn catches its exception and hands it to its parent, which
    raises it again (ProcessRaisedException): the parent's line in the process log names the child
    and its exception, and the child is told as having raised it.
    """
    lines = list(log)
    spawned = {
        (line.get("host"), line["raised"].get("child_pid")): line["raised"] for line in lines if line.get("raised")
    }
    ended = accounts(lines)
    attempts: dict[int, list[ReadRecord]] = {}
    for record in records:
        if "unreadable" not in record:
            attempts.setdefault(attempt_of(record), []).append(record)
    made, folded = [], []
    for attempt, members in sorted(attempts.items()):
        ends: dict[tuple, tuple[ReadRecord, dict]] = {}
        for record in reversed(members):  # a process with two stages has two records: one end
            key = (record.get("host"), record.get("pid"))
            outcome = _uncaught(record, spawned)
            account = ended.get(key)
            if outcome is not None:
                ends[key] = (record, outcome)
            elif account and account.get("exitcode"):
                ends[key] = (record, {"exitcode": account["exitcode"], "step": _last_step(record)})
            elif record.get("ended") == ENDED_SIGNAL:
                ends[key] = (record, {"exitcode": -signal.SIGTERM, "step": _last_step(record)})
        if any("type" in outcome or _signal_of(outcome) not in STOPPED for _, outcome in ends.values()):
            killed = [note for note in unhandled if _key(note) in {(r.get("host"), r.get("pid")) for r in members}]
            made.append(_item(list(ends.values()), [n for n in killed if _key(n) not in ends], attempt, len(attempts)))
            folded += killed
    return made, folded


def accounts(log: Iterable[dict]) -> dict[tuple, dict]:
    """How each failed child ended, as its launcher saw it (endreason.children_ended), by (host, pid)."""
    return {(line.get("host"), child.get("pid")): child for line in log for child in line.get("children") or ()}


#: Processes that raised within this of each other raised alike (two ranks on one bad batch), not
#: one for the other: none is said to be first (a peer's "Connection closed" took 0.58 s and more).
TOO_CLOSE_S = 0.05
#: The signals a launcher stops the other processes with: told after the failure, never as one.
STOPPED = ("SIGTERM", "SIGINT")


def _key(note: dict) -> tuple:
    return note["evidence"].get("host"), note["evidence"].get("pid")


def _last_step(record: ReadRecord) -> int | None:
    steps = record.get("steps")
    return steps + (record.get("step_offset") or 0) if isinstance(steps, int) else None


def _signal_of(outcome: dict) -> str | None:
    code = outcome.get("exitcode")
    if not isinstance(code, int) or code >= 0:
        return None
    return reasons.signal_name(-code)


def _uncaught(record: ReadRecord, spawned: dict) -> dict | None:
    """The process's own uncaught exception, or the one its mp.spawn parent raised for it."""
    found = outcomes.of_kind(outcomes.of_record(record), outcomes.UNCAUGHT)
    if found:
        return found[-1]
    handed = spawned.get((record.get("host"), record.get("pid")))
    if handed is None:
        return None
    return {
        "kind": outcomes.UNCAUGHT,
        "step": _last_step(record),
        "type": handed.get("type"),
        "message": handed.get("message"),
    }


def _item(ends: list[tuple[ReadRecord, dict]], killed: list[dict], attempt: int, attempts: int) -> dict:
    raised = sorted(((r, o) for r, o in ends if "type" in o), key=lambda pair: _at_ns(*pair))
    died = [(r, o) for r, o in ends if "type" not in o and _signal_of(o) not in (*STOPPED, None)]
    exited = [(r, o) for r, o in ends if "type" not in o and (o.get("exitcode") or 0) > 0]
    stopped = [r for r, o in ends if "type" not in o and _signal_of(o) in STOPPED]
    parts = []
    for name in sorted({_signal_of(o) or "" for _, o in died}):
        group = [(r, o) for r, o in died if _signal_of(o) == name]
        parts.append(f"{_whose_records([r for r, _ in group])} died of {name}{_after(o['step'] for _, o in group)}")
    for code in sorted({o["exitcode"] for _, o in exited}):
        group = [(r, o) for r, o in exited if o["exitcode"] == code]
        parts.append(
            f"{_whose_records([r for r, _ in group])} exited with status {code}{_after(o['step'] for _, o in group)}"
        )
    if parts:
        parts[-1] += " (its launcher's account)"
    first_ns = _at_ns(*raised[0]) if raised else 0
    ended = [_ended(record, outcome, first_ns) for record, outcome in raised]
    if ended:
        first = ended[0]
        hosts = {one["host"] for one in ended}
        order = "first" if len(hosts) == 1 else "first by the hosts' clocks"
        if parts or killed:
            order += " of the processes that raised"
        close = len(ended) > 1 and ended[1]["after_s"] < TOO_CLOSE_S  # raised alike, not one for the other
        verb = f"raised {order}: an uncaught" if len(ended) > 1 and not close else "ended with an uncaught"
        line = f"{_who(first)} {verb} {first['type']} after step {first['step']}"
        message = first["message"] and (_shortened(first["message"]) if parts else first["message"])
        line += f": {message}" if message else ""
        parts.append(line)
    later = ended[1:]
    for kind in sorted(
        {one["type"] for one in later}, key=lambda k: min(o["after_s"] for o in later if o["type"] == k)
    ):
        same = [one for one in later if one["type"] == kind]
        lag = max(one["after_s"] for one in same)
        said = f"then {_whose(same)} raised {kind} " + (
            f"{lag:.2f} s later" if len(same) == 1 else f"within {lag:.2f} s"
        )
        message = same[0]["message"] if len(same) == 1 else None
        parts.append(said + (f" ({_shortened(message)})" if message else ""))
    if stopped:
        parts.append(f"{_whose_records(stopped)} stopped by SIGTERM")
    if killed:
        last = sorted({step for note in killed for step in note["steps"]})
        known = f" (last known step {last[0]})" if len(last) == 1 else f" (last known steps {last[0]}-{last[-1]})"
        ranks = [rank for note in killed for rank in note["ranks"]]
        whom = wording.who(ranks) if ranks else wording.count(len(killed), "process")
        parts.append(
            f"{whom} ended without exit handlers{known if last else ''}: killed, by a launcher's SIGTERM as "
            "torchrun's when a worker fails, or by an out-of-memory kill"
        )
    text = "; ".join(parts)
    if attempts > 1:
        text = f"attempt {attempt}: {text}"
    failing = [*(r for r, _ in died), *(r for r, _ in exited)]
    steps = [o["step"] for _, o in [*died, *exited]] + [one["step"] for one in ended[:1]]
    return answer.item(
        "failed",
        text,
        [*(r.get("rank") for r in failing), *(one["rank"] for one in ended)],
        [step for step in steps if isinstance(step, int)][:1],
        first=ended[0] if ended else None,
        processes=ended or None,
        died=[_account(r, o) for r, o in died] or None,
        exited=[_account(r, o) for r, o in exited] or None,
        stopped=sorted(r.get("rank") for r in stopped if r.get("rank") is not None) or None,
        ended_without_handlers=[
            {"rank": (n["ranks"] or [None])[0], "pid": n["evidence"].get("pid"), "step": (n["steps"] or [None])[0]}
            for n in killed
        ]
        or None,
        attempt=attempt if attempts > 1 else None,
    )


def _account(record: ReadRecord, outcome: dict) -> dict:
    """A process that died of a signal or exited with a status, as its launcher saw it."""
    return {
        "rank": record.get("rank"),
        "pid": record.get("pid"),
        "host": record.get("host"),
        "step": outcome.get("step"),
        "exitcode": outcome.get("exitcode"),
        "signal": _signal_of(outcome),
    }


def _after(steps) -> str:
    known = sorted({step for step in steps if isinstance(step, int)})
    if not known:
        return ""
    return f" after step {known[0]}" if len(known) == 1 else f" after steps {known[0]}-{known[-1]}"


def _whose_records(records: list[ReadRecord]) -> str:
    ranks = [r.get("rank") for r in records if r.get("rank") is not None]
    rankless = [r for r in records if r.get("rank") is None]
    said = [wording.who(ranks)] if ranks else []
    if len(rankless) == 1 and not ranks:
        said.append(f"the process (pid {rankless[0].get('pid')})")
    elif rankless:
        said.append(wording.count(len(rankless), "process"))
    return " and ".join(said)


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
    says so (``told``: a ``failed`` item or a problem already did): a Ctrl-C, a ``sys.exit(3)``, a
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
