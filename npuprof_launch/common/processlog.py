"""The process log: which processes of a job loaded the hook, and which imported torch but never stepped.

One JSON line per event in ``OUT/npuprof_status/processes.jsonl``, appended with one write so
that the lines of many processes never mix. With it the report can tell apart "no Python
process loaded the hook" (a replaced ``PYTHONPATH``, ``python -I``), "the hook loaded but no
process imported torch", and "torch was imported but nothing stepped". Lines are written only
where a launcher made the status folder: an env-only job writes none until a process profiles.
"""

from __future__ import annotations

import os
import sys

from npuprof_launch.common import names

LOADED = "loaded"
IDLE = "idle"
#: What an idle line's ``worker`` says of a child of Python's multiprocessing.
DATA_LOADER = "data_loader"
MULTIPROCESSING = "multiprocessing"
#: Written by sitecustomize.py itself (it cannot import this module): an interpreter that found the
#: hook but has no npuprof_launch installed.
NO_PACKAGE = "no_package"


def log_loaded(environ=os.environ) -> None:
    """At hook install, in every Python process: one line (standard library only, a few µs)."""
    try:
        path = names.process_log(names.output_dir(environ))
        if not os.path.isdir(os.path.dirname(path)):
            return
        argv0 = (sys.argv[0] if sys.argv else "").replace("\\", "/").replace('"', "'")[-200:]
        line = (
            f'{{"event": "{LOADED}", "pid": {os.getpid()}, "host": "{names.host()}", '
            f'"run_id": "{environ.get(names.RUN_ID_VAR, "")}", "argv0": "{argv0}"}}\n'
        )
        # files.append_bytes's one O_APPEND write, here by hand: this line is written at every
        # process's start, and importing ``files`` for it would cost more than the write.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o664)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except Exception:  # noqa: BLE001 - the log is never worth a failure at start-up
        pass


#: Training frameworks whose steps are no torch.optim step, and a function that runs one of their
#: steps (for --target), or None when none is known: an idle process names those it imported.
FRAMEWORK_STEPS = {
    "keras": "keras.src.backend.torch.trainer:TorchTrainer.train_step",
    "vllm": "vllm.v1.worker.gpu_worker:Worker.execute_model",
    "sglang": None,
    "jax": None,
    "tensorflow": None,
    "mindspore": None,
}


#: Why a declared function (--target, a stage) made no step in a process: the kind its idle line
#: carries beside its sentence (``why``), in the order the report tells them, the most telling first.
NOT_FOUND = "not found"
NEVER_CALLED = "never called"
NEVER_IMPORTED = "never imported"
WHY_ORDER = (NOT_FOUND, NEVER_CALLED, NEVER_IMPORTED)


def why_of(item: dict) -> str | None:
    """An idle line's declared item's kind (WHY_ORDER); for a line written before ``why`` existed,
    read once from the start of its sentence, here, as the reader of old logs."""
    if item.get("why") in WHY_ORDER:
        return item["why"]
    reason = str(item.get("reason") or "")
    return next((why for why in WHY_ORDER if reason.startswith(why)), None)


#: The launchers that start a job's workers and wait for them, importing torch on the way (their
#: command's name, or the module run with ``python -m``): such a process is never meant to step, so
#: the report counts it apart, not as a process that "imported torch but never stepped".
LAUNCHERS = {
    "torchrun": "torchrun",
    "torch.distributed.run": "torchrun",
    "torch.distributed.launch": "torch.distributed.launch",
    "accelerate": "accelerate launch",
    "accelerate.commands.launch": "accelerate launch",
    "deepspeed": "deepspeed",
    "deepspeed.launcher.runner": "deepspeed",
    "deepspeed.launcher.launch": "deepspeed",
}


def launcher_name(argv: list[str], main_module: str | None) -> str | None:
    """Which launcher (LAUNCHERS) this process is, from its command or its ``-m`` module; else None."""
    command = os.path.basename(argv[0]) if argv else ""
    return LAUNCHERS.get(main_module or "") or LAUNCHERS.get(command)


def log_idle(
    environ, declared: list[dict], stepped: bool, raised: dict | None = None, children: list[dict] | None = None
) -> None:
    """At exit: a process that imported torch (or a declared function's module) and made no step,
    or whose declared functions made none here, with the reasons; ``raised``: the child whose
    exception ended it (endreason.raised_in_child); ``children``: the children that failed, as this
    launcher saw them (endreason.children_ended); both for the report's ``failed`` item."""
    import json
    import multiprocessing

    from npuprof_launch.common import files

    worker = None
    if multiprocessing.parent_process() is not None:
        # A child of Python's multiprocessing (mp.spawn's ranks and RPC agents, a spawned data
        # loader's workers; a forked child leaves through os._exit, without this): counted apart,
        # as a worker, never as a process meant to step, and its declared functions are the parent's.
        data = sys.modules.get("torch.utils.data")
        worker = DATA_LOADER if getattr(data, "get_worker_info", lambda: None)() is not None else MULTIPROCESSING
        declared = []
    path = names.process_log(names.output_dir(environ))
    if not os.path.isdir(os.path.dirname(path)):
        return
    line = {
        "event": IDLE,
        "pid": os.getpid(),
        "host": names.host(),
        "rank": names.rank_from_env(environ)[0],
        "run_id": environ.get(names.RUN_ID_VAR, ""),
        "argv": sys.argv[:3],
        "stepped": stepped,
        "declared": declared,
        "frameworks": [name for name in FRAMEWORK_STEPS if name in sys.modules],
    }
    if worker:
        line["worker"] = worker
    if raised:
        line["raised"] = raised
    if children:
        line["children"] = children
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    launcher = launcher_name(sys.argv, getattr(spec, "name", None))
    if launcher:
        line["launcher"] = launcher
    files.append_line(path, json.dumps(line))


def read(output_dir: str, run_id: str | None = None) -> list[dict]:
    """The log's lines (of one run, if given: "" is the lines written without a run id)."""
    from npuprof_launch.common import files

    lines = files.read_json_lines(names.process_log(output_dir))
    return [line for line in lines if run_id is None or (line.get("run_id") or "") == run_id]
