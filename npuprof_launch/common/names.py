"""Names both halves agree on: the variables, the output paths, the ranks launchers set, the voice.

The hook (which writes) and the launcher (which reads and reports) must never spell a variable
or a file name differently, so each is spelled here once. Standard library only, and nothing of
ours: the sitecustomize hook imports this in every Python process of a job.
"""

from __future__ import annotations

import os
import sys

ENV_PREFIX = "NPU_PROF_"
#: The master switch the launcher sets; the hook does nothing without it.
ENABLE_VAR = ENV_PREFIX + "ENABLE"
#: Internal: set by the launcher so its report shows only the processes of its own run.
RUN_ID_VAR = "_" + ENV_PREFIX + "RUN_ID"
#: Internal: ``PID:STEPS`` handed to the new image of a process that re-executes itself (os.exec*),
#: so that it goes on counting the job's steps where the old image stopped.
EXEC_VAR = "_" + ENV_PREFIX + "EXEC_STEPS"


def env_name(option: str) -> str:
    """The variable of an option: ``NPU_PROF_`` + the name upper-cased, dashes as underscores."""
    return ENV_PREFIX + option.upper().replace("-", "_")


#: The options that are the schedule's five numbers (torch.profiler.schedule's, in its order). Their
#: defaults and bounds are the options table's; stages, on-demand requests and suggested runs take
#: their keys from here.
SCHEDULE_KEYS = ("skip-first", "wait", "warmup", "active", "repeat")
#: The schedule numbers an on-demand request may carry (it starts where it lands: no skip, one window).
REQUEST_KEYS = ("active", "warmup", "wait")

#: The variables the hook reads before it resolves any option (they decide what to watch).
TARGET_VAR = env_name("target")
STAGE_VAR = env_name("stage")
SCENARIO_VAR = env_name("scenario")
OUTPUT_DIR_VAR = env_name("output-dir")
DEFAULT_OUTPUT_DIR = "./npuprof_output"

#: Where each launcher family puts the global rank, in the order they are consulted.
RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
#: Subdirectory of the output directory that holds the per-process status records.
STATUS_DIR = "npuprof_status"
#: Subdirectory that carries on-demand requests to the job.
REQUESTS_DIR = "npuprof_requests"
#: Where the report lays out one window for msprof-analyze (launcher/handoff.py): links, never traces of their own.
HANDOFF_DIR = "msprof_handoff"
#: One line per process that loaded the hook, and one per process that imported torch and never stepped.
PROCESS_LOG = "processes.jsonl"
#: Suffix of a torch.profiler Chrome trace written by the torch backend (and once compressed).
TORCH_TRACE_SUFFIX = ".pt.trace.json"
TORCH_TRACE_SUFFIXES = (TORCH_TRACE_SUFFIX, TORCH_TRACE_SUFFIX + ".gz")
#: Suffix of a torch_npu profiler session directory.
ASCEND_DIR_SUFFIX = "_ascend_pt"
#: Suffix of a process's whole-run step times (one record of them per status record).
STEP_TIMES_SUFFIX = ".steps"
#: How a profiler's own error reaches the answer: printed in the job's process (the status
#: record's errors), and logged by torch_npu's parse in a session's logs/ (the window's aftercare).
PROFILER_ERROR = "the profiler logged an error: "
NPU_LOGGED = "torch_npu logged: "
#: The prefix of every line the tool writes for a person to read.
VOICE = "npuprof:"


def without_hook(environ) -> dict[str, str]:
    """An environment for the tool's own processes (a window's aftercare, the offline parse): the
    job's, without the hook's variables, so that such a process never profiles itself."""
    env = {key: value for key, value in environ.items() if not key.startswith(ENV_PREFIX)}
    env.pop(RUN_ID_VAR, None)
    return env


def say(message: str) -> None:
    """The one way the tool speaks from inside a job: one line on stderr, prefixed ``npuprof:``."""
    try:
        sys.stderr.write(f"{VOICE} {message}\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a closed stderr must not break the job
        pass


def rank_from_env(environ=os.environ) -> tuple[int | None, str | None]:
    """The global rank a launcher gave this process, and the variable it came from."""
    for var in RANK_VARS:
        raw = environ.get(var, "")
        if raw.strip().isdigit():
            return int(raw), var
    return None, None


def host() -> str:
    """The short host name (``os.uname``: no socket import in every process)."""
    try:
        name = os.uname().nodename
    except AttributeError:  # not a POSIX system
        import socket

        name = socket.gethostname()
    return name.split(".")[0] or "localhost"


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


def attempt_of_worker(worker: str | None) -> int:
    """Which attempt of its job a worker is (0 the first, N after torchelastic's Nth restart), from
    the name ``worker_name`` gave it: the one place that spells the ``_restartN`` suffix."""
    head, _, last = (worker or "").rpartition("_restart")
    return int(last) if head and last.isdigit() else 0


def resolve_output_dir(raw: str, environ=os.environ) -> str:
    """Relative paths are relative to where the job was launched, not to the process's cwd.

    The launcher always exports an absolute path. In env-only mode ``$PWD`` (kept by the shell
    that ran the launch script, unchanged by ``os.chdir``) is the launch directory.
    """
    if os.path.isabs(raw):
        return raw
    base = environ.get("PWD", "")
    if not os.path.isabs(base):
        base = os.getcwd()
    return os.path.normpath(os.path.join(base, raw))


def output_dir(environ=os.environ) -> str:
    """The job's output directory as the hook sees it, before any option is resolved."""
    return resolve_output_dir(environ.get(OUTPUT_DIR_VAR) or DEFAULT_OUTPUT_DIR, environ)


def status_dir(output: str) -> str:
    return os.path.join(output, STATUS_DIR)


def requests_dir(output: str) -> str:
    return os.path.join(output, REQUESTS_DIR)


def process_log(output: str) -> str:
    return os.path.join(status_dir(output), PROCESS_LOG)


def status_path(output: str, record_name: str, started_ns: int) -> str:
    """One record per process (and stage); the start time keeps a reused pid from overwriting an older one."""
    return os.path.join(status_dir(output), f"{record_name}.{started_ns}.json")


def step_times_path(status_file: str) -> str:
    """The step-times file that belongs to a status record: beside it, same stem."""
    return status_file[: -len(".json")] + STEP_TIMES_SUFFIX


def of_worker(trace: str, worker: str) -> bool:
    """Whether a trace's file or session directory was named for ``worker``: torch's
    ``{worker}.{time}.pt.trace.json`` (torch_trace_name), torch_npu's ``{worker}_{pid}_{time}_ascend_pt``."""
    name = os.path.basename(os.path.normpath(trace))
    return bool(worker) and (
        name.startswith(worker + ".") or (name.startswith(worker + "_") and name.endswith(ASCEND_DIR_SUFFIX))
    )


def torch_trace_name(worker: str, time_ns: int) -> str:
    """The file name torch's tensorboard_trace_handler would use."""
    return f"{worker}.{time_ns}{TORCH_TRACE_SUFFIX}"
