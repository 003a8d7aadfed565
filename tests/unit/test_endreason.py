"""How a process's profiling ended (endreason.py): what cut its window, and an uncaught exception."""

from __future__ import annotations

import sys
import time

import pytest

from npuprof_launch.common import outcomes, record
from npuprof_launch.inprocess import endreason


@pytest.fixture
def uncaught(monkeypatch):
    """Set the exception the interpreter keeps for the exit handlers (none to begin with)."""
    monkeypatch.delattr(sys, "last_exc", raising=False)
    monkeypatch.delattr(sys, "last_value", raising=False)
    return lambda exc: monkeypatch.setattr(sys, "last_value", exc, raising=False)


def test_each_ending_names_what_cut_the_window(uncaught):
    assert endreason.cause_and_uncaught(record.ENDED_EXIT, 4) == ("exit", None)
    assert endreason.cause_and_uncaught(record.ENDED_FAST, 4) == ("os._exit", None)
    assert endreason.cause_and_uncaught(record.ENDED_EXEC, 4) == ("os.exec", None)
    assert endreason.cause_and_uncaught(record.ENDED_SIGNAL, 4) == ("SIGTERM", None)
    assert set(endreason.CAUSES.values()) <= set(outcomes.CUT_BY), "every cause has its words"


def test_an_uncaught_exception_at_exit_leaves_an_outcome_with_its_first_line(uncaught):
    uncaught(ValueError("boom\nsecond line"))
    cause, raised = endreason.cause_and_uncaught(record.ENDED_EXIT, 3)
    assert cause == "exit"
    at_ns = raised.pop("at_ns")  # when the exit handlers began: the order of the ranks' ends
    assert raised == {"kind": outcomes.UNCAUGHT, "step": 3, "type": "ValueError", "message": "boom ... second line"}
    assert abs(at_ns - time.time_ns()) < 60e9
    assert (
        outcomes.sentence(raised) == "the process ended with an uncaught ValueError (boom ... second line) after step 3"
    )
    uncaught(RuntimeError())
    raised = endreason.cause_and_uncaught(record.ENDED_EXIT, 0)[1]
    assert outcomes.sentence(raised) == "the process ended with an uncaught RuntimeError after step 0"
    uncaught(OSError("x" * 300))
    assert endreason.cause_and_uncaught(record.ENDED_EXIT, 1)[1]["message"] == "x" * 197 + "..."


def test_ctrl_c_is_the_cause_and_only_an_exit_reads_the_exception(uncaught):
    uncaught(KeyboardInterrupt())
    assert endreason.cause_and_uncaught(record.ENDED_EXIT, 9) == ("SIGINT", None)
    uncaught(ValueError("boom"))
    assert endreason.cause_and_uncaught(record.ENDED_SIGNAL, 9) == ("SIGTERM", None)


def test_an_mp_spawn_parent_names_the_child_and_its_exception_s_last_line(uncaught):
    class ProcessRaisedException(Exception):  # torch.multiprocessing's, as its parent raises it
        def __init__(self, msg, error_index, error_pid):
            super().__init__(msg)
            self.msg, self.error_index, self.error_pid = msg, error_index, error_pid

    trace = 'Traceback (most recent call last):\n  File "t.py", line 3\ntorch.OutOfMemoryError: out of memory\n'
    uncaught(ProcessRaisedException(f"\n\n-- Process 1 terminated with the following error:\n{trace}", 1, 4242))
    assert endreason.raised_in_child() == {"child_pid": 4242, "type": "OutOfMemoryError", "message": "out of memory"}
    uncaught(ValueError("boom"))
    assert endreason.raised_in_child() is None


def test_a_launcher_whose_children_failed_names_each_with_its_exit_code(uncaught):
    class ProcessFailure:  # torch.distributed.elastic's, as torchrun's agent keeps it
        def __init__(self, pid, exitcode):
            self.pid, self.exitcode = pid, exitcode

    class ChildFailedError(Exception):
        def __init__(self, failures):
            super().__init__("train.py FAILED")
            self.failures = failures

    uncaught(ChildFailedError({1: ProcessFailure(4242, -9), 0: ProcessFailure(4241, 1)}))
    assert endreason.children_ended() == [
        {"pid": 4242, "rank": 1, "exitcode": -9},
        {"pid": 4241, "rank": 0, "exitcode": 1},
    ]
    uncaught(ValueError("boom"))
    assert endreason.children_ended() is None
