"""STAND-IN ONLY (no such module in torch_npu): the job's real collectives, captured while a window records.

On an NPU, CANN records every HCCL operation the job makes (its device tasks, their times). Here the
job's collectives run on gloo, on the CPU, and a CPU profile of torch's own (``torch.profiler``,
CPU activity only, through the calls under ``torch.profiler.profile``: ``_prepare_profiler``,
``_enable_profiler``, ``_disable_profiler``, so that it is not taken for a profile of the job's)
runs underneath the window while it records, unless a profile of the job's holds kineto: torch's dispatcher reports each
collective as ``c10d::allreduce_``, ``c10d::broadcast_`` ... on the thread that issued it, DDP's
bucket all-reduces included (its reducer calls the process group from C++, which a patched
``torch.distributed.all_reduce`` would not see), and gloo reports the work itself as
``gloo:all_reduce``, ``gloo:broadcast`` ... on its worker thread. The worker's range is the one
kept: it starts when the op is taken up and ends when every rank has sent its part, so a rank that
arrived early waits inside it and the last to arrive does not.

At the window's stop the collectives go, one JSON line each, into ``FRAMEWORK/torch.standin_comm``
(a file of the stand-in's: the real data is CANN's): op type (HCCL's name), the process group's
name, its sequence number in the group, start and end in ns since the epoch, the issuing call's
start, the bytes it moved when torch reported the shapes, the group's size and the rank. Only the
default process group is told apart (gloo's ranges do not name their group).
"""

from __future__ import annotations

import json
import os
import sys
from typing import NamedTuple, Optional

from torch_npu import _switches

COMM_FILE = "torch.standin_comm"
#: gloo's worker-thread range -> HCCL's op type (as in its op names, hcom_{type}_...). HCCL's
#: barrier is an all-reduce of a small buffer (HcclBarrier), and named so.
GLOO_OPS = {
    "gloo:all_reduce": "allReduce",
    "gloo:broadcast": "broadcast",
    "gloo:all_gather": "allGather",
    "gloo:reduce_scatter": "reduceScatter",
    "gloo:reduce": "reduce",
    "gloo:all_to_all": "alltoall",
    "gloo:barrier": "allReduce",
    "gloo:send": "send",
    "gloo:recv": "receive",
    "gloo:scatter": "scatter",
}
#: torch's dispatcher op (the issuing call, on the job's thread) -> HCCL's op type.
C10D_OPS = {
    "c10d::allreduce_": "allReduce",
    "c10d::broadcast_": "broadcast",
    "c10d::allgather_": "allGather",
    "c10d::_allgather_base_": "allGather",
    "c10d::reduce_scatter_": "reduceScatter",
    "c10d::_reduce_scatter_base_": "reduceScatter",
    "c10d::reduce_": "reduce",
    "c10d::alltoall_": "alltoall",
    "c10d::alltoall_base_": "alltoall",
    "c10d::barrier": "allReduce",
    "c10d::send": "send",
    "c10d::recv_": "receive",
    "c10d::scatter_": "scatter",
}


class Collective(NamedTuple):
    op_type: str
    group: str
    seq: int
    start_ns: int
    end_ns: int
    launch_ns: int
    bytes: int
    world: int
    rank: int


def _dist():
    """torch.distributed when the job initialized a process group (never imported here)."""
    dist = sys.modules.get("torch.distributed")
    try:
        return dist if dist is not None and dist.is_available() and dist.is_initialized() else None
    except Exception:  # noqa: BLE001
        return None


def group_name(dist) -> str:
    """The default group's name as HCCL's group names look (``{addr}%{interface}_{port}_0_{id}``),
    the same on every rank."""
    try:
        name = dist.distributed_c10d._get_default_group().group_name
    except Exception:  # noqa: BLE001
        name = "0"
    return f"{os.environ.get('MASTER_ADDR', '127.0.0.1')}%lo_{os.environ.get('MASTER_PORT', '0')}_0_{name}"


def _sequence(dist) -> Optional[int]:
    try:
        return int(dist.distributed_c10d._get_default_group()._get_sequence_number_for_group())
    except Exception:  # noqa: BLE001
        return None


class Capture:
    """A CPU profile of torch's own under a recording window, where a process group exists or the
    device computes the job's work ($TORCH_NPU_STANDIN_DEVICE_WORK: then with the operators' FLOPs,
    ``flops``, as (start in ns since the epoch, FLOPs) for each operator torch counts them for)."""

    def __init__(self) -> None:
        self._profile = None
        self._dist = _dist()
        self._work = os.environ.get(_switches.DEVICE_WORK) == "1"
        self.flops: list[tuple[int, int]] = []
        if self._dist is None and not self._work:
            return
        try:
            from torch.autograd import profiler as autograd_profiler

            if autograd_profiler.torch._C._autograd._profiler_enabled():
                return  # a profile of the job's own holds kineto's one session
            config = autograd_profiler.ProfilerConfig(
                autograd_profiler.ProfilerState.KINETO,
                True,  # report_input_shapes
                False,  # profile_memory
                False,  # with_stack
                self._work,  # with_flops
                False,  # with_modules
                autograd_profiler._ExperimentalConfig(),
            )
            activities = {autograd_profiler.ProfilerActivity.CPU}
            autograd_profiler._prepare_profiler(config, activities)
            autograd_profiler._enable_profiler(config, activities)
            self._profile = autograd_profiler
        except Exception:  # noqa: BLE001
            self._profile = None

    def stop(self) -> list[Collective]:
        if self._profile is None:
            return []
        dist = self._dist
        try:
            events = list(self._profile._disable_profiler().events())
        except Exception:  # noqa: BLE001
            return []
        finally:
            self._profile = None
        if self._work:
            self.flops = [(int(e.start_ns()), int(e.flops())) for e in events if e.flops() > 0]
        if dist is None:
            return []
        issued = sorted((e for e in events if e.name() in C10D_OPS), key=lambda e: e.start_ns())
        worked = sorted((e for e in events if e.name() in GLOO_OPS), key=lambda e: e.start_ns())
        # Each issuing call is paired with the next worker range of its type (gloo runs a group's
        # work in the order it was issued); without worker ranges (another backend) the call is the op.
        pending: dict[str, list] = {}
        for event in worked:
            pending.setdefault(GLOO_OPS[event.name()], []).append(event)
        ops = []
        for call in issued:
            op_type = C10D_OPS[call.name()]
            queue = pending.get(op_type) or []
            work = queue.pop(0) if queue else call
            ops.append((op_type, call, work))
        ops.sort(key=lambda op: op[2].start_ns())
        try:
            world, rank = dist.get_world_size(), dist.get_rank()
        except Exception:  # noqa: BLE001
            world, rank = 1, 0
        last = _sequence(dist)
        first = (last - len(ops) + 1) if last is not None and last >= len(ops) else 1
        group = group_name(dist)
        found = []
        for index, (op_type, call, work) in enumerate(ops):
            start = int(work.start_ns())
            found.append(
                Collective(
                    op_type=op_type,
                    group=group,
                    seq=first + index,
                    start_ns=start,
                    end_ns=start + max(int(work.duration_ns()), 1),
                    launch_ns=int(call.start_ns()),
                    bytes=_bytes(work) or _bytes(call),
                    world=world,
                    rank=rank,
                )
            )
        return found


#: Bytes per element of the dtypes torch reports.
_SIZES = {
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "long int": 8,
    "int": 4,
    "bool": 1,
    "unsigned char": 1,
    "signed char": 1,
    "short int": 2,
}


def _bytes(event) -> int:
    """The bytes of the tensors an op was given, from the shapes and dtypes torch recorded (gloo's
    worker range records its flat buffer; the dispatcher's call has a TensorList, no shapes)."""
    try:
        shapes, dtypes = event.shapes(), event.dtypes()
    except Exception:  # noqa: BLE001
        return 0
    total = 0
    for shape, dtype in zip(shapes, dtypes):
        if not shape or not all(isinstance(n, int) for n in shape):
            continue
        count = 1
        for n in shape:
            count *= n
        total += count * _SIZES.get(dtype, 4)
    return total


def write(framework: str, found: list[Collective]) -> None:
    if not found:
        return
    path = os.path.join(framework, COMM_FILE)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640), "w") as handle:
        handle.write("".join(json.dumps(op._asdict()) + "\n" for op in found))


def read(session: str) -> list[Collective]:
    """The collectives a window recorded (none without them)."""
    try:
        with open(os.path.join(session, "FRAMEWORK", COMM_FILE)) as handle:
            return [Collective(**json.loads(line)) for line in handle if line.strip()]
    except (OSError, ValueError, TypeError):
        return []
