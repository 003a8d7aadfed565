"""Which process group each gloo worker thread serves (inprocess/groupthreads.py), on real threads:
a stand-in for torch's group helper that starts threads as ProcessGroupGloo's constructor does."""

from __future__ import annotations

import threading
import types

import pytest

from npuprof_launch.inprocess import groupthreads


@pytest.fixture
def c10d():
    """A module with the helper torch's distributed_c10d makes every group with; its groups' threads
    wait until the test ends. The map is emptied before and after."""
    done = threading.Event()
    started: list[threading.Thread] = []

    def _new_process_group_helper(group_size, group_rank, global_ranks_in_group, backend, store, group_name, **kw):
        if kw.get("fail"):
            raise RuntimeError("the store timed out")
        for _ in range(2):
            thread = threading.Thread(target=done.wait, daemon=True)
            thread.start()
            started.append(thread)
        return ("pg", group_name), store

    module = types.SimpleNamespace(_new_process_group_helper=_new_process_group_helper)
    groupthreads._forget()
    groupthreads._installed = False
    yield module
    done.set()
    for thread in started:
        thread.join()
    groupthreads._forget()
    groupthreads._installed = False


def test_the_threads_a_group_starts_are_mapped_to_its_ranks_the_default_group_to_every_rank(c10d):
    assert groupthreads.install(c10d)
    assert c10d._new_process_group_helper(4, 0, [], "gloo", "store", "0") == (("pg", "0"), "store")
    c10d._new_process_group_helper(2, 0, [2, 0], "gloo", "store", "1")
    c10d._new_process_group_helper(
        group_size=2, group_rank=1, global_ranks_in_group=[0, 2], backend="gloo", store="store", group_name="2"
    )
    labels = sorted(groupthreads.threads().values())
    assert labels == ["0,1,2,3", "0,1,2,3", "0,2", "0,2", "0,2/1", "0,2/1"], "a second group of the same ranks apart"
    assert all(tid.isdigit() for tid in groupthreads.threads())
    assert not groupthreads.install(c10d), "once per process"


def test_a_helper_that_raises_raises_as_it_would_and_maps_nothing(c10d):
    groupthreads.install(c10d)
    with pytest.raises(RuntimeError, match="the store timed out"):
        c10d._new_process_group_helper(2, 0, [0, 1], "gloo", "store", "1", fail=True)
    assert groupthreads.threads() == {}


def test_a_torch_without_the_helper_is_left_alone():
    assert groupthreads.install(types.SimpleNamespace()) is False
