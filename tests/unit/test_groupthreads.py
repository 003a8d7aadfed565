"""Which process group each gloo worker thread serves (inprocess/groupthreads.py), on real threads:
a stand-in for torch's distributed_c10d whose groups start threads as ProcessGroupGloo's constructor
does, then are registered as torch registers them (``_world.pg_map``, then ``pg_group_ranks``)."""

from __future__ import annotations

import threading

import pytest

from npuprof_launch.inprocess import groupthreads


class Group:
    """A process group: its worker threads wait until the test ends."""

    def __init__(self, done: threading.Event) -> None:
        self.threads = [threading.Thread(target=done.wait, daemon=True) for _ in range(2)]
        for thread in self.threads:
            thread.start()


class C10d:
    """torch.distributed.distributed_c10d as far as groups are made: the registry is the module's
    ``_pg_map``, which ``_world.pg_map`` returns."""

    def __init__(self) -> None:
        self._pg_map: dict = {}
        self.done = threading.Event()
        self.made: list[Group] = []
        module = self

        class World:
            pg_group_ranks: dict = {}

            @property
            def pg_map(self) -> dict:
                return module._pg_map

        self._world = World()

    def new_group(self, ranks: list[int]) -> Group:
        group = Group(self.done)
        self.made.append(group)
        self._world.pg_map[group] = ("gloo", "store")
        self._world.pg_group_ranks[group] = {rank: index for index, rank in enumerate(ranks)}
        return group

    def destroy(self, group: Group) -> None:
        del self._world.pg_map[group]
        del self._world.pg_group_ranks[group]


@pytest.fixture
def c10d():
    module = C10d()
    groupthreads._forget()
    groupthreads._world = None
    yield module
    module.done.set()
    for group in module.made:
        for thread in group.threads:
            thread.join()
    groupthreads._forget()
    groupthreads._world = None


def test_the_threads_a_group_starts_are_mapped_to_its_ranks(c10d):
    assert groupthreads.install(c10d)
    world = c10d.new_group([0, 1, 2, 3])
    c10d.new_group([2, 0])
    c10d.new_group([0, 2])
    found = groupthreads.threads()
    assert {found[str(thread.native_id)] for thread in world.threads} == {"0,1,2,3"}
    assert sorted(found.values()) == ["0,1,2,3", "0,1,2,3", "0,2", "0,2", "0,2/1", "0,2/1"], "a second group apart"
    assert not groupthreads.install(c10d), "once per process"


def test_a_group_destroyed_before_it_was_read_labels_nothing_and_its_id_reused_is_the_new_group(c10d):
    groupthreads.install(c10d)
    first = c10d.new_group([0, 1])
    c10d.destroy(first)
    second = c10d.new_group([2, 3])
    found = groupthreads.threads()
    assert {found.get(str(thread.native_id)) for thread in first.threads} == {None}
    assert {found[str(thread.native_id)] for thread in second.threads} == {"2,3"}


def test_a_registry_that_is_not_the_module_global_is_left_as_it_was(c10d):
    own: dict = {}
    type(c10d._world).pg_map = property(lambda self: own)
    assert groupthreads.install(c10d) is False
    assert type(c10d._pg_map) is dict and groupthreads.threads() == {}


def test_a_torch_without_the_registry_is_left_alone():
    assert groupthreads.install(object()) is False
