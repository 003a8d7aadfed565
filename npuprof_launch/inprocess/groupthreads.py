"""Which process group each of gloo's worker threads serves: so that a window's collectives are
matched across the ranks of their own group.

A gloo trace names a collective by its operation alone ("gloo:all_reduce", on a worker thread), never
by its process group. In a job with groups of several shapes (tensor-parallel pairs beside
data-parallel ones, a pipeline's stages), the first all-reduce of a step on rank 0 and on rank 2 may
belong to two different groups, {0, 1} and {2, 3}: matched by order alone they are one collective,
and the rank the others wait for is lost among them (tried: a 4-rank job, tensor-parallel pairs and
data-parallel pairs, rank 3 sleeping 30 ms a step: "no rank stands out", every step 3x longer).

Each ProcessGroupGloo starts its worker threads (``pt_gloo_runloop``) in its constructor, and every
group is made by ``distributed_c10d._new_process_group_helper``, the default one included. So the
threads that appear during that call serve the group it makes, whose global ranks are its
arguments (others made then, gloo's own transport loop among them, run no collective's range). The
trace names the thread of each range (Kineto's tid is the system's), and tracecollectives.py matches
each collective within its group.

Standard library only; a failure of ours leaves the group made as it was, and the map without it
(the collectives are then matched as before).
"""

from __future__ import annotations

import functools
import os

HELPER = "_new_process_group_helper"
_TASKS = "/proc/self/task"

#: tid -> the label of the group it serves, of every gloo group this process made: the group's
#: global ranks ("0,2"), and after a slash how many groups of the same ranks came before it ("0,2/1"):
#: every member makes its groups in the same order, so the label is the same on each.
_threads: dict[int, str] = {}
_made: dict[str, int] = {}
_installed = False


def install(c10d) -> bool:
    """Watch every process group ``c10d`` (torch.distributed.distributed_c10d) makes from now on;
    False where it has no such helper (a torch this was not tried on) or no /proc."""
    global _installed
    real = getattr(c10d, HELPER, None)
    if _installed or real is None or not os.path.isdir(_TASKS):
        return False

    @functools.wraps(real)
    def made(*args, **kwargs):
        try:
            before = _threads_now()
        except Exception:  # noqa: BLE001 - never in the way of the job's group
            before = None
        made_group = real(*args, **kwargs)
        if before is not None:
            try:
                _note(before, args, kwargs)
            except Exception:  # noqa: BLE001 - the group is made; only our map lacks it
                pass
        return made_group

    c10d._new_process_group_helper = made
    os.register_at_fork(after_in_child=_forget)  # a child's threads are its own
    _installed = True
    return True


def _forget() -> None:
    _threads.clear()
    _made.clear()


def threads() -> dict[str, str]:
    """The map so far, for JSON (a tid as a string)."""
    return {str(tid): label for tid, label in _threads.items()}


def _note(before: set[int], args: tuple, kwargs: dict) -> None:
    new = _threads_now() - before
    if not new:
        return
    size = kwargs.get("group_size", args[0] if args else None)
    ranks = kwargs.get("global_ranks_in_group", args[2] if len(args) > 2 else None)
    if not ranks and isinstance(size, int):
        ranks = range(size)  # the default group: every rank
    if ranks:
        label = ",".join(str(rank) for rank in sorted(int(rank) for rank in ranks))
        before_it = _made.get(label, 0)
        _made[label] = before_it + 1
        if before_it:
            label += f"/{before_it}"
        for tid in new:
            _threads[tid] = label


def _threads_now() -> set[int]:
    """Every thread of the process now, by its tid. Not only those named THREAD_NAME: a new thread
    names itself once it runs, which may be after the group's constructor has returned (tried: a
    group's threads were taken for the next group's)."""
    try:
        return {int(tid) for tid in os.listdir(_TASKS)}
    except (OSError, ValueError):
        return set()
