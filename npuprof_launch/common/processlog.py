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


def log_idle(environ, declared: list[dict], stepped: bool) -> None:
    """At exit: a process that imported torch (or a declared function's module) and made no step,
    or whose declared functions made none here, with the reasons."""
    import json
    import multiprocessing

    from npuprof_launch.common import files

    if multiprocessing.parent_process() is not None:
        return  # data-loader and compile workers: many, and never meant to step
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
    }
    files.append_line(path, json.dumps(line))


def read(output_dir: str, run_id: str | None = None) -> list[dict]:
    """The log's lines (of one run, if given: "" is the lines written without a run id)."""
    from npuprof_launch.common import files

    lines = files.read_json_lines(names.process_log(output_dir))
    return [line for line in lines if run_id is None or (line.get("run_id") or "") == run_id]
