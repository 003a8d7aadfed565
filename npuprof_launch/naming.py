"""Naming rules: which rank a process is, and what its files are called.

One place for these so that the hook (which writes) and the report (which reads) agree. Every
file a process writes carries host, rank (when known), pid and, after a torchelastic restart,
the restart count, so no two processes or runs overwrite each other.
"""

from __future__ import annotations

import os
import socket

#: Where each launcher family puts the global rank, in the order they are consulted.
RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
#: Subdirectory of the output directory that holds the per-process status records.
STATUS_DIR = "npuprof_status"
#: Subdirectory that carries on-demand requests to the job.
REQUESTS_DIR = "npuprof_requests"
#: Suffix of a torch.profiler Chrome trace written by the torch backend.
TORCH_TRACE_SUFFIX = ".pt.trace.json"
#: Suffix of a torch_npu profiler session directory.
ASCEND_DIR_SUFFIX = "_ascend_pt"


def rank_from_env(environ=os.environ) -> int | None:
    """The global rank of this process, or None when no launcher told it."""
    for var in RANK_VARS:
        raw = environ.get(var, "")
        if raw.strip().isdigit():
            return int(raw)
    return None


def host() -> str:
    return socket.gethostname().split(".")[0] or "localhost"


def worker_name(rank: int | None, pid: int | None = None, environ=os.environ) -> str:
    """``{host}_rank{R}_pid{P}``; without a rank ``{host}_pid{P}``; ``_restart{N}`` after a restart."""
    parts = [host()]
    if rank is not None:
        parts.append(f"rank{rank}")
    parts.append(f"pid{os.getpid() if pid is None else pid}")
    restart = environ.get("TORCHELASTIC_RESTART_COUNT", "0").strip()
    if restart.isdigit() and int(restart) > 0:
        parts.append(f"restart{int(restart)}")
    return "_".join(parts)


def status_dir(output_dir: str) -> str:
    return os.path.join(output_dir, STATUS_DIR)


def status_path(output_dir: str, worker: str, started_ns: int) -> str:
    """One record per process; the start time keeps a reused pid from overwriting an older record."""
    return os.path.join(status_dir(output_dir), f"{worker}.{started_ns}.json")


def torch_trace_name(worker: str, time_ns: int) -> str:
    """The file name torch's tensorboard_trace_handler would use, so TensorBoard finds it."""
    return f"{worker}.{time_ns}{TORCH_TRACE_SUFFIX}"
