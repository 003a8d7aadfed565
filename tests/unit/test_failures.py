"""The ``failed`` item (launcher/failures.py): the first process to raise, by its record's last
write; the others after it, grouped; SIGTERM'd and killed processes told in it, never as "first";
torchelastic's attempts apart; several hosts' clocks said."""

from __future__ import annotations

from npuprof_launch.common import outcomes
from npuprof_launch.launcher import answer, failures

SECOND = 1_000_000_000


def record(rank, at_s, raised=None, step=7, host="a", ended="exit", attempt=None, offset=0):
    made = {
        "rank": rank,
        "pid": 100 + rank,
        "host": host,
        "ended": ended,
        "steps": step,
        "step_offset": offset,
        "updated_ns": int(at_s * SECOND),
        # the session writes the job's own step (its count and its offset) in the outcome
        "outcomes": [outcomes.make(outcomes.UNCAUGHT, step + offset, **dict(zip(("type", "message"), raised)))]
        if raised
        else [],
    }
    if attempt:
        made["worker"] = f"rank{rank}_restart{attempt}"
    return made


def killed_note(one):
    return answer.item("ended_without_handlers", "killed", [one["rank"]], [one["steps"]], pid=one["pid"], host="a")


def test_the_first_to_raise_is_named_first_whatever_the_rank_order():
    records = [
        record(0, 10.58, ("RuntimeError", "[/w/gloo/transport/tcp/pair.cc:553] Connection closed by peer")),
        record(1, 10.0, ("ValueError", "loss is nan"), offset=100),
        record(2, 10.0, None, ended="signal"),
    ]
    (item,), folded = failures.items(records, [])
    assert folded == []
    assert item["kind"] == "failed" and item["severity"] == answer.FINDING
    first = item["evidence"]["first"]
    assert (first["rank"], first["step"], first["type"], first["message"]) == (1, 107, "ValueError", "loss is nan")
    assert [one["rank"] for one in item["evidence"]["processes"]] == [1, 0]
    assert item["evidence"]["processes"][1]["after_s"] == 0.58
    assert item["evidence"]["stopped"] == [2]
    assert item["text"].startswith("rank 1 raised first: an uncaught ValueError after step 107: loss is nan; ")
    assert "then rank 0 raised RuntimeError 0.58 s later (Connection closed by peer)" in item["text"]
    assert item["text"].endswith("; rank 2 stopped by SIGTERM")


def test_many_later_ranks_are_one_group_and_a_lone_raise_claims_no_order():
    later = [record(rank, 5 + rank / 10, ("RuntimeError", f"peer {rank}")) for rank in range(1, 8)]
    (item,), _ = failures.items([record(0, 4.0, ("OSError", "disk")), *later], [])
    assert "then ranks 1-7 raised RuntimeError within 1.70 s" in item["text"]
    assert "peer" not in item["text"]  # seven messages: in the evidence, not the sentence
    (alone,), _ = failures.items([record(3, 1.0, ("KeyError", "x"))], [])
    assert alone["text"] == "rank 3 ended with an uncaught KeyError after step 7: x"


def test_processes_killed_without_handlers_are_told_in_it_and_first_is_of_the_raisers_only():
    raiser, other, killed = (
        record(2, 3.0, ("ValueError", "nan")),
        record(1, 3.5, ("RuntimeError", "peer")),
        record(0, 2.0),
    )
    killed["ended"] = None
    note = killed_note(killed)
    (item,), folded = failures.items([killed, raiser, other], [note])
    assert folded == [note]
    assert item["text"].startswith("rank 2 raised first of the processes that raised: ")
    assert "rank 0 ended without exit handlers (last known step 7): killed" in item["text"]
    assert item["evidence"]["ended_without_handlers"] == [{"rank": 0, "pid": 100, "step": 7}]


def test_attempts_are_told_apart_and_hosts_clocks_are_said():
    records = [
        record(0, 1.0, ("RuntimeError", "first try")),
        record(1, 1.2, ("RuntimeError", "peer"), host="b"),
        record(0, 9.0, attempt=1),
        record(1, 9.0, attempt=1),
    ]
    (item,), _ = failures.items(records, [])
    assert item["evidence"]["attempt"] == 0
    assert item["text"].startswith("attempt 0: rank 0 raised first by the hosts' clocks: ")
    assert failures.items([record(0, 1.0), record(1, 1.0)], []) == ([], [])


def test_a_spawned_worker_is_told_from_its_parents_line():
    """mp.spawn's worker catches its exception and exits 1: its parent's log line names it."""
    worker, other = record(1, 2.0, step=9, offset=3), record(0, 1.0, step=9)
    worker["ended"] = "exit"
    other["ended"] = None
    parent = {
        "event": "idle",
        "host": "a",
        "pid": 99,
        "raised": {"child_pid": 101, "type": "OSError", "message": "disk"},
    }
    (item,), folded = failures.items([worker, other], [killed_note(other)], [parent])
    assert item["evidence"]["first"] == {
        "rank": 1,
        "pid": 101,
        "host": "a",
        "step": 12,
        "type": "OSError",
        "message": "disk",
        "after_s": 0.0,
    }
    assert item["text"].startswith("rank 1 ended with an uncaught OSError after step 12: disk; rank 0 ended without")
    assert len(folded) == 1
    assert failures.items([worker], [], [{**parent, "host": "b"}]) == ([], []), "another host's pid 101"


def test_a_process_with_two_stages_raised_once():
    rollout, update = record(0, 1.0, ("ValueError", "nan")), record(0, 1.0, ("ValueError", "nan"))
    rollout["stage"], update["stage"] = "rollout", "update"
    (item,), _ = failures.items([rollout, update], [])
    assert len(item["evidence"]["processes"]) == 1 and "then" not in item["text"]


def test_its_launcher_s_account_names_the_process_that_died_or_exited_before_the_exceptions():
    """Rank 1 died of SIGKILL (an out-of-memory kill) and rank 0 raised "Connection closed by peer":
    the answer led with rank 0. Rank 0's sys.exit(3) was not told at all."""
    died, victim = record(1, 3.0), record(0, 3.5, ("RuntimeError", "Connection closed by peer"))
    died["ended"] = None
    agent = {"event": "idle", "host": "a", "children": [{"pid": 101, "rank": 1, "exitcode": -9}]}
    (item,), folded = failures.items([victim, died], [killed_note(died)], [agent])
    assert folded and item["text"].startswith("rank 1 died of SIGKILL after step 7 (its launcher's account); rank 0 ")
    assert item["evidence"]["died"] == [
        {"rank": 1, "pid": 101, "host": "a", "step": 7, "exitcode": -9, "signal": "SIGKILL"}
    ]
    assert "ended_without_handlers" not in item["evidence"] and item["ranks"] == [0, 1]
    quit_, other = record(0, 2.0), record(1, 2.5, ("RuntimeError", "peer"))
    agent = {"event": "idle", "host": "a", "children": [{"pid": 100, "rank": 0, "exitcode": 3}]}
    (item,), _ = failures.items([quit_, other], [], [agent])
    assert item["text"].startswith("rank 0 exited with status 3 after step 7 (its launcher's account); rank 1 ended")
    stopped = record(0, 2.0, ended="signal")
    assert failures.items([stopped], [], []) == ([], []), "a SIGTERM alone is a stop, not a failure"


def test_two_ranks_raising_within_milliseconds_are_not_ordered_as_cause():
    (item,), _ = failures.items([record(0, 1.0, ("ValueError", "nan")), record(1, 1.003, ("ValueError", "nan"))], [])
    assert item["text"].startswith("rank 0 ended with an uncaught ValueError after step 7: nan; then rank 1 raised")
    assert "first" not in item["text"]
