"""Which process group each of gloo's worker threads serves: so that a window's collectives are
matched across the ranks of their own group.

A gloo trace names a collective by its operation alone ("gloo:all_reduce", on a worker thread), never
by its process group. In a job with groups of several shapes (tensor-parallel pairs beside
data-parallel ones, a pipeline's stages), the first all-reduce of a step on rank 0 and on rank 2 may
belong to two different groups, {0, 1} and {2, 3}: matched by order alone they are one collective,
and the rank the others wait for is lost among them (tried: a 4-rank job, tensor-parallel pairs and
data-parallel pairs, rank 3 sleeping 30 ms a step: "no rank stands out", every step 3x longer).

Each ProcessGroupGloo starts its worker threads (``pt_gloo_runloop``) in its constructor, and torch
then registers the group in its registry, ``distributed_c10d._world.pg_map`` (the module's
``_pg_map`` dict), the default group included. So the threads that appeared since the group before
it was registered serve it (others made then, gloo's own transport loop among them, run no
collective's range); its global ranks are the registry's ``pg_group_ranks``. The trace names the
thread of each range (Kineto's tid is the system's), and tracecollectives.py matches each
collective within its group.

Why the registry, not a wrapper of the function that makes groups: a wrapper is a frame of ours in
every traceback of a group that fails to be made (a rendezvous that timed out, a backend not
built), which the job must see as it is bare. The registry's dict is swapped for one that notes its
new entries, only where torch's ``pg_map`` is that module global (torch 2.0 on); an entry's note
runs after the group is made and cannot fail into torch.

Standard library only; the group's ranks are read when the map is (``threads``), so no reference
to a group is kept (one would keep a destroyed group's threads and connections alive).
"""

from __future__ import annotations

import os

_TASKS = "/proc/self/task"

#: Each group registered, in order: [its id, its label once read (None before; "" for one destroyed
#: before it was read)]; each noted thread -> its group's index there.
_groups: list[list] = []
_group_of: dict[int, int] = {}
_seen: set[int] = set()
#: torch's registry (its ``_world``) once installed: the map's source of ranks, and the mark it is.
_world = None


class _Noting(dict):
    """torch's registry of process groups, noting each new group's threads as it is registered."""

    __slots__ = ()

    def __setitem__(self, group, value) -> None:
        new = group not in self
        dict.__setitem__(self, group, value)
        if new:
            try:
                _registered(group)
            except Exception:  # noqa: BLE001 - the group is registered; only our map lacks it
                pass


def install(c10d) -> bool:
    """Note every process group ``c10d`` (torch.distributed.distributed_c10d) registers from now on;
    False where its registry is not the module's ``_pg_map`` dict (a torch this was not tried on), or
    there is no /proc."""
    global _world
    current, world = getattr(c10d, "_pg_map", None), getattr(c10d, "_world", None)
    if _world is not None or type(current) is not dict or world is None or not os.path.isdir(_TASKS):
        return False
    noting = _Noting(current)
    c10d._pg_map = noting
    try:
        held = world.pg_map is noting
    except Exception:  # noqa: BLE001
        held = False
    if not held:  # its pg_map is not the module global: put it back as it was
        c10d._pg_map = current
        return False
    _world = world
    _seen.update(_threads_now())
    os.register_at_fork(after_in_child=_forget)
    return True


def threads() -> dict[str, str]:
    """Each noted thread (a tid as a string) and its group's label: the group's global ranks ("0,2"),
    and after a slash how many groups of the same ranks were registered before it ("0,2/1"; every
    member registers its groups in the same order, so the label is the same on each). A group
    destroyed before it was read labels nothing."""
    if _world is None or not _group_of:
        return {}
    try:
        _read()
    except Exception:  # noqa: BLE001
        return {}
    return {str(tid): _groups[index][1] for tid, index in _group_of.items() if _groups[index][1]}


def _registered(group) -> None:
    """A group was registered: the threads that appeared since the one before are its."""
    _read()
    for entry in _groups:
        if entry[0] == id(group) and entry[1] is None:
            entry[1] = ""  # an id reused: that group was destroyed before it was read
    now = _threads_now()
    for tid in now - _seen:
        _group_of[tid] = len(_groups)
    _seen.update(now)
    _groups.append([id(group), None])


def _read() -> None:
    """Label the groups registered so far whose ranks torch has set (it sets them just after it
    registers a group: the last one may not have them yet)."""
    if _world is None:
        return
    ranks = {id(group): sorted(int(rank) for rank in mapping) for group, mapping in _world.pg_group_ranks.items()}
    for index, entry in enumerate(_groups):
        if entry[1] is not None:
            continue
        if entry[0] in ranks:
            label = ",".join(str(rank) for rank in ranks[entry[0]])
            before = sum(1 for other in _groups if other[1] and other[1].split("/")[0] == label)
            entry[1] = f"{label}/{before}" if before else label
        elif index < len(_groups) - 1:
            entry[1] = ""  # destroyed before it was read


def _forget() -> None:
    """In a forked child: its threads are its own."""
    _group_of.clear()
    _groups.clear()
    _seen.clear()
    _seen.update(_threads_now())


def _threads_now() -> set[int]:
    """Every thread of the process now, by its tid: not only those named ``pt_gloo_runloop``, since a
    new thread names itself once it runs, which may be after its group is registered (tried: a
    group's threads were taken for the next group's)."""
    try:
        return {int(tid) for tid in os.listdir(_TASKS)}
    except (OSError, ValueError):
        return set()
