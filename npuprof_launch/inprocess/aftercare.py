"""A window's aftercare, off the training path: summarize it, compress it, move it home.

The session starts one such process per saved window (``python -m npuprof_launch.inprocess.aftercare``),
detached, at the lowest CPU priority, without the hook, and goes on with the job at once:

1. an NPU session directory that torch_npu parses (``--parsed``: analyse_flag; in the background
   with ``--async-mode``) is first waited for until that parse has finished (its ``analyse.done``
   marker, or the deliverables, in older releases); one kept raw (--no-analyse) is not: no parse comes;
2. the trace is summarized where it ran (deliverables.py: steps, top operators, time in
   collectives and each collective's wait, size), so that the report of a thousand ranks reads
   small files, not terabytes; an NPU session is read once where it ends up, after the move home
   (keptreading.py: its deliverables checked whole, its HCCL operations, steps and operators);
3. a torch trace is compressed (``--gzip``): ``.pt.trace.json.gz``, about a tenth of the size,
   which Perfetto and Holistic Trace Analysis open as they are;
4. with ``--stage-dir``, every file is moved into the output directory, one at a time: copied
   under a temporary name there, renamed into place (atomic), and only then removed from the
   stage, so a file is always whole in one place or the other, SIGTERM included (the file under
   way is finished first).

Its result, written atomically beside the process's status record, says where every file is
now, what is left behind and why, and what the window holds; the report reads it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import sys
import time

from npuprof_launch.common import deliverables, files, keptreading, names, tracecollectives

#: How long to wait for torch_npu's parse to finish (async mode) before moving what is there.
PARSE_WAIT_S = 600.0
#: A parse without analyse.done is over when its session stood this long unchanged (_wait_for_parse).
PARSE_QUIET_S = 3.0
PARTIAL_PREFIX = ".npuprof-partial-"

_stop = False


def command(
    *,
    traces: list[str],
    result: str,
    kind: str,
    gzip_traces: bool,
    stage: str | None,
    home: str,
    parsed: bool = False,
    threads: dict[str, str] | None = None,
) -> list[str]:
    """The command line of one window's aftercare: under ``nice`` where there is one, so that even
    its interpreter's start and its imports take only the CPU the job leaves (os.nice in main()
    comes after them). ``parsed``: torch_npu parses the window (analyse_flag), so its parse is
    waited for; without it (--no-analyse) no parse will ever end, and nothing waits. ``threads``:
    the process's gloo worker threads and their groups (the record's ``gloo_threads``)."""
    nice = shutil.which("nice")
    args = [nice, "-n", "19"] if nice else []
    args += [
        sys.executable,
        "-m",
        "npuprof_launch.inprocess.aftercare",
        "--result",
        result,
        "--kind",
        kind,
        "--home",
        home,
    ]
    if gzip_traces:
        args.append("--gzip")
    if parsed:
        args.append("--parsed")
    if stage:
        args += ["--stage", stage]
    if threads:
        args += ["--threads", json.dumps(threads, separators=(",", ":"))]
    return [*args, *traces]


def _on_sigterm(signum, frame) -> None:
    global _stop
    _stop = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="npuprof_launch.inprocess.aftercare")
    parser.add_argument("--result", required=True)
    parser.add_argument("--kind", choices=["torch", "npu"], required=True)
    parser.add_argument("--home", required=True, help="the output directory")
    parser.add_argument("--stage", help="the stage directory the traces are in (they move to --home)")
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--parsed", action="store_true", help="npu: torch_npu parses the window; wait for its parse")
    parser.add_argument("--threads", type=json.loads, default=None, help="gloo worker threads: {tid: group}")
    parser.add_argument("traces", nargs="+")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        os.nice(19)
    except OSError:
        pass
    outcome: dict = {"status": "running", "started_ns": time.time_ns(), "pid": os.getpid(), "traces": [], "left": []}
    outcome.update(errors=[], logged=[], summary=None, bytes={}, plain_bytes={})
    outcome[keptreading.RESULT_KEY] = {}
    _write(args.result, outcome)
    try:
        for trace in args.traces:
            _care(trace, args, outcome)
    except Exception as exc:  # noqa: BLE001 - say what happened; the trace stays where it is
        outcome["errors"].append(f"{type(exc).__name__}: {exc}")
    outcome["status"] = "stopped" if _stop else ("failed" if outcome["errors"] else "done")
    outcome["ended_ns"] = time.time_ns()
    _write(args.result, outcome)
    return 0


def _care(path: str, args, outcome: dict) -> None:
    trace: str | None = path
    if args.kind == "npu":
        if args.parsed:
            _wait_for_parse(path)
        _count_npu_log_errors(path, outcome)
    else:
        summary = deliverables.summarize_torch_trace(path, args.threads)
        outcome["summary"] = _merge(outcome["summary"], summary)
        outcome["plain_bytes"][os.path.basename(path)] = os.path.getsize(path) if os.path.exists(path) else 0
        if args.gzip and not _stop:
            trace = _compress(path)
    if args.stage and not _stop and trace is not None:
        trace = _move_home(trace, args.stage, args.home, outcome)
    if trace is not None:
        outcome["traces"].append(os.path.relpath(trace, args.home))
        outcome["bytes"][os.path.relpath(trace, args.home)] = _size(trace)
        if args.kind == "npu" and not _stop:  # where it stays: a copy home would change what a reading holds
            outcome[keptreading.RESULT_KEY][os.path.basename(trace)] = _reading(trace)


def _reading(session: str) -> dict | None:
    """What ``--check`` would read of an NPU session, read once here (keptreading.py). One that
    fails is no problem of the window: ``--check`` then reads the files itself."""
    try:
        return keptreading.read(session)
    except Exception:  # noqa: BLE001 - nothing kept; the report reads the session as it is
        return None


def _merge(previous: dict | None, summary) -> dict:
    found = previous or {"steps": 0, "events": 0, "self_time_us": {}, "collective_us": 0.0, "window_us": 0.0}
    found["steps"] += len(summary.step_names)
    found["events"] += summary.events
    found["collective_us"] += summary.collective_us
    found["window_us"] += sum(summary.step_durations_us)
    if summary.collectives is not None:
        found["collectives"] = tracecollectives.merged(found.get("collectives"), summary.collectives)
    found.setdefault("problems", []).extend(summary.problems)
    top = found["self_time_us"]
    for name, us in summary.self_time_us.items():
        top[name] = top.get(name, 0.0) + us
    found["self_time_us"] = dict(sorted(top.items(), key=lambda kv: -kv[1])[:20])
    return found


def _compress(path: str) -> str:
    """``path`` -> ``path.gz``, written under a temporary name and renamed: never half a file."""
    target = path + ".gz"
    partial = os.path.join(os.path.dirname(path), PARTIAL_PREFIX + os.path.basename(target))
    with open(path, "rb") as source, gzip.open(partial, "wb", compresslevel=6) as sink:
        shutil.copyfileobj(source, sink, 1 << 20)
    os.chmod(partial, os.stat(path).st_mode & 0o777 & files.NOT_WORLD_WRITABLE)
    os.replace(partial, target)
    os.unlink(path)
    return target


def _move_home(path: str, stage: str, home: str, outcome: dict) -> str | None:
    """Move ``path`` (a file or a directory tree) from the stage into home, one file at a time."""
    relative = os.path.relpath(path, stage)
    target = os.path.join(home, relative)
    if os.path.isdir(path):
        for folder, _, entries in os.walk(path):
            where = os.path.normpath(os.path.join(target, os.path.relpath(folder, path)))
            files.make_dirs(where)  # an empty folder of the tree (raw data not written yet) comes home too
            for entry in sorted(entries):
                if _stop:
                    outcome["left"].append(os.path.join(folder, entry))
                    continue
                _move_file(os.path.join(folder, entry), os.path.join(where, entry))
        if not outcome["left"]:
            shutil.rmtree(path, ignore_errors=True)
        return target
    if _stop:
        outcome["left"].append(path)
        return None
    _move_file(path, target)
    return target


def _move_file(source: str, target: str) -> None:
    files.make_dirs(os.path.dirname(target))
    try:
        os.replace(source, target)  # the same filesystem: one atomic rename
        return
    except OSError:
        pass
    partial = os.path.join(os.path.dirname(target), PARTIAL_PREFIX + os.path.basename(target))
    try:
        shutil.copyfile(source, partial)
        os.chmod(partial, os.stat(source).st_mode & 0o777 & files.NOT_WORLD_WRITABLE)
        os.replace(partial, target)
    except BaseException:
        if os.path.exists(partial):
            os.unlink(partial)
        raise
    os.unlink(source)


def _wait_for_parse(session_dir: str) -> None:
    """torch_npu's async parse writes the deliverables after the window: wait until it is done.

    Done is its ``analyse.done``; a release without the marker is done when every deliverable is
    there and the session has not changed for PARSE_QUIET_S. The deliverables alone are not enough:
    the parse's later steps (its communication and integration parsers, forked) still write their
    logs then, and a session moved home under them is left half in the stage (seen under a loaded
    suite: the stage kept logs/ of two parse steps that came after the move)."""
    deadline = time.monotonic() + PARSE_WAIT_S
    output = os.path.join(session_dir, deliverables.ASCEND_OUTPUT)
    state, since = None, time.monotonic()
    while time.monotonic() < deadline and not _stop:
        if os.path.exists(os.path.join(output, deliverables.ANALYSE_DONE)):
            return
        if os.path.isdir(output) and deliverables.parsed_enough(session_dir):
            now = _tree_state(session_dir)
            if now != state:
                state, since = now, time.monotonic()
            elif time.monotonic() - since >= PARSE_QUIET_S:
                return
        time.sleep(0.5)


def _tree_state(path: str) -> tuple[int, int, float]:
    """How many files a tree holds, their bytes and the newest change: what a writer moves."""
    count = size = 0
    newest = 0.0
    for folder, _, entries in os.walk(path):
        for entry in entries:
            try:
                found = os.stat(os.path.join(folder, entry))
            except OSError:
                continue
            count, size, newest = count + 1, size + found.st_size, max(newest, found.st_mtime)
    return count, size, newest


def _count_npu_log_errors(session_dir: str, outcome: dict) -> None:
    """torch_npu's parse workers log to ``logs/*.log`` in the session directory (2.1.0.post17, 2.6+):
    each error is a problem (``errors``), and its line as logged is kept (``logged``) for the report
    to tell an error the job's process printed and the parse logged once."""
    for line in deliverables.npu_log_errors(session_dir):
        outcome["errors"].append(names.NPU_LOGGED + line)
        outcome["logged"].append(line)


def _size(path: str) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _write(path: str, outcome: dict) -> None:
    files.write_json(path, outcome)


if __name__ == "__main__":
    sys.exit(main())
