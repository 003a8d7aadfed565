"""``npuprof-run``: the command line and its modes.

It resolves the options (flags over ``NPU_PROF_*`` variables over defaults, all from the one
table in options.py), refuses a bad configuration or an argument it would not use before
starting anything (exit 2, one ``npuprof:`` line), then runs the job (launch.py) and reports
what was collected (report.py), or does what a mode asks: ``--print-env``, ``--check``,
``--trigger``, ``--analyse DIR``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time

from npuprof_launch.common import names, options
from npuprof_launch.common.record import ReadRecord, alive_here
from npuprof_launch.launcher import launch, onslowdown, report, runs, stallview, summary
from npuprof_launch.launcher.arguments import (
    TRIGGER_TIMEOUT,
    USAGE_ERROR,
    UsageError,
    given_options,
    parse,
    resolve_config,
)
from npuprof_launch.launcher.progress import Progress

#: The offline parse's module (inprocess/backends/npuoffline.py), run as a process of its own.
OFFLINE_PARSE = "npuprof_launch.inprocess.backends.npuoffline"
#: How long the launcher waits, after the job, for its windows' aftercare (compression, moves).
AFTERCARE_WAIT_S = 120.0


def main(argv: list[str] | None = None) -> int:
    """``npuprof-run``. A reader that stops early (``npuprof-run --check DIR | head``) closes our
    standard output: what is left unprinted goes nowhere, with no traceback, as Python's own
    documentation of SIGPIPE advises (stdout pointed at devnull, so the flush at exit is quiet)."""
    try:
        return _main(argv)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        namespace, command, mode = parse(argv)
        if mode == "--check":
            return check(
                namespace.check,
                bool(namespace.json),
                bool(namespace.verbose),
                namespace.deep,
                namespace.run,
                explain=bool(namespace.explain),
                window=namespace.window,
            )
        if mode == "--trigger":
            timeout = TRIGGER_TIMEOUT if namespace.timeout is None else namespace.timeout
            return trigger(namespace.trigger, resolve_config(namespace, os.environ), timeout, namespace.align)
        if mode == "--analyse DIR":
            return analyse(namespace.analyse_dir, namespace)
        if mode == "--print-env":
            return print_env(namespace)
        config = resolve_config(namespace, os.environ)
        command = launch.find_command(command)
        output_dir = launch.prepare_output_dir(config.output_dir)
    except (UsageError, launch.Refused) as exc:
        for line in str(exc).splitlines():
            names.say(line)
        return USAGE_ERROR
    # Inside another npuprof-run, keep its run: both launchers then report the same processes.
    run_id = os.environ.get(names.RUN_ID_VAR) or launch.new_run_id()
    watcher = None
    if config.hang_after != 0 or config.on_slowdown:
        asking = (
            onslowdown.Trigger(output_dir, run_id, config.on_slowdown, config.active, config.warmup, names.say)
            if config.on_slowdown
            else None
        )
        watcher = stallview.Watcher(output_dir, run_id, hangs=config.hang_after != 0, slowdowns=asking)
    if watcher:
        watcher.start()  # says while the job runs when its processes stop stepping
    outcome = launch.run(command, launch.job_environment(config, os.environ, output_dir, run_id))
    if watcher:
        watcher.stop()
    try:
        run = launch.write_run(output_dir, run_id, command, outcome, given_options(namespace))
        wait_for_aftercare(output_dir, run_id)
        result = report.build(output_dir, run_id, run=run)
        result["html"] = write_html(result)
        width = summary.WIDTH if sys.stderr.isatty() else None
        sys.stderr.write(summary.format_table(result, explain=bool(namespace.explain), width=width) + "\n")
    except Exception as exc:  # noqa: BLE001 - the job's status matters more than our summary
        names.say(f"could not build the report: {exc!r}")
    return outcome["status"]


def wait_for_aftercare(output_dir: str, run_id: str) -> None:
    """The windows' compression and moves run after the job's processes ended (aftercare.py)."""
    from npuprof_launch.common import record, windowresults

    records = [r for r in record.read_dir(output_dir) if r.get("run_id") == run_id]
    what = f"compressing and moving windows home (waiting {AFTERCARE_WAIT_S:.0f} s at most)"
    progress = Progress(what, 0, "windows done")  # shows nothing unless the wait lasts

    def tick(done: int, total: int) -> None:
        progress.total = total
        progress.set(done)

    windowresults.wait(output_dir, records, AFTERCARE_WAIT_S, tick)
    progress.finish()


def write_html(result: dict) -> str | None:
    """The page of the run (htmlreport.py); its failure is one line, never the run's."""
    try:
        from npuprof_launch.launcher import htmlreport

        return htmlreport.write(result)
    except Exception as exc:  # noqa: BLE001 - the page is never worth the run's report
        names.say(f"could not write the HTML report: {exc!r}")
        return None


def print_env(namespace: argparse.Namespace) -> int:
    """``--print-env``: export lines; a refusal is printed as shell that ends the script (see launch.py)."""
    try:
        config = resolve_config(namespace, os.environ)
    except UsageError as exc:
        if sys.stdout.isatty():
            for line in str(exc).splitlines():
                names.say(line)
        else:  # for an eval: the shell it runs says why, once, and stops the script
            print(launch.refusal_for_eval(str(exc)))
        return USAGE_ERROR
    print(launch.export_lines(config, os.environ))
    return 0


def trigger(directory: str, config: options.Config, timeout: float, align: int | None = None) -> int:
    """``--trigger DIR``: write one request, then say which processes took it (exit 1 if none did).

    Every process that takes it opens its window on the same step: one no process has reached yet
    (from their records), or with ``--align N`` each one's next multiple of N plus one.
    """
    from npuprof_launch.common import ondemand, record

    if not os.path.isdir(names.status_dir(directory)):
        raise UsageError(f"--trigger {directory!r}: no npuprof job writes there (no {names.STATUS_DIR}/ folder)")
    records = record.read_dir(directory)
    absent = _ranks_no_process_has(records, config.ranks)
    if absent:
        raise UsageError(absent)
    start = None if align else ondemand.common_start(records, config.ranks)
    request = ondemand.write_request(
        directory, config.active, config.warmup, config.wait, config.ranks, start_step=start, align=align
    )
    deadline = time.monotonic() + timeout
    while True:
        taken = ondemand.pickups(directory, request["id"])
        if taken or time.monotonic() >= deadline:
            break
        time.sleep(ondemand.POLL_INTERVAL / 2)
    if not taken:
        ondemand.withdraw(directory, request["id"])
        sys.stderr.write(
            f"npuprof: no process took request {request['id']} within {timeout:g} s (is the job running with "
            "--on-demand, stepping, and writing to this directory?); request withdrawn\n"
        )
        return 1
    time.sleep(ondemand.POLL_INTERVAL)  # late takers of the same request are listed too
    for taker in ondemand.pickups(directory, request["id"]):
        rank = taker.get("rank")
        who = f"rank {rank} pid {taker.get('pid')}" if rank is not None else f"pid {taker.get('pid')}"
        stage = f" stage {taker['stage']}" if taker.get("stage") else ""
        print(f"npuprof: request {request['id']} taken by {who}{stage} on {taker.get('host')}")
    where = f"at step {start}" if start else (f"at each one's next multiple of {align} plus one" if align else "")
    if where:
        print(f"npuprof: every process that took it opens its window {where}")
    return 0


def _ranks_no_process_has(records: list[ReadRecord], ranks) -> str | None:
    """Where ``--ranks`` names only ranks that no running on-demand process of the job has: the
    ranks there are, instead of a wait that ends in a timeout (a process without a rank takes a
    request as rank 0, as ``--ranks`` counts it everywhere)."""
    running = [
        r
        for r in records
        if "unreadable" not in r
        and r.get("on_demand")
        and not r.get("ended")
        and (r.get("host") != names.host() or alive_here(r))  # another host's: taken as running
    ]
    if ranks is None or not running:
        return None
    there = sorted({r.get("rank") or 0 for r in running})
    if set(there) & set(ranks):
        return None
    rankless = (
        " (its processes have no rank: they take a request as rank 0)"
        if all(r.get("rank") is None for r in running)
        else ""
    )
    wanted = options.BY_NAME["ranks"].format(ranks)
    return (
        f"--ranks {wanted}: no running process of this job has that rank; the ranks it has: "
        f"{options.BY_NAME['ranks'].format(there)}{rankless}"
    )


def check(
    directory: str,
    as_json: bool,
    verbose: bool = False,
    deep: bool | None = None,
    run_id: str | None = None,
    explain: bool = False,
    window: int | None = None,
) -> int:
    """``--check DIR``: the report of DIR's latest run, or of ``run_id``; exit 0 only when it passed.
    ``window``: the NPU window handed to msprof-analyze (handoff.py)."""
    import json

    if not os.path.isdir(directory):
        names.say(f"--check {directory!r}: not a directory")
        return USAGE_ERROR
    if not os.path.isdir(names.status_dir(directory)):
        what = "an empty directory" if not os.listdir(directory) else "a directory with no npuprof output in it"
        names.say(
            f"--check {directory!r}: {what} (no {names.STATUS_DIR}/ folder); give the --output-dir of a run "
            f"(default {names.DEFAULT_OUTPUT_DIR})"
        )
        return 1
    if run_id is not None:
        found = runs.ids(directory)
        if run_id not in found:
            there = ", ".join(repr(item) for item in found) or "none"
            names.say(f"--run {run_id!r}: no such run in {directory} (its runs: {there})")
            return USAGE_ERROR
    result = report.build(directory, run_id, deep=deep, window=window)
    if window is not None and result.get("handoff") is None:
        from npuprof_launch.launcher import handoff

        held = len(handoff.windows(result["processes"]))
        names.say(f"--window {window}: the run has {held} NPU window(s) to hand to msprof-analyze")
        return USAGE_ERROR
    result["html"] = write_html(result)
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        width = summary.WIDTH if sys.stdout.isatty() else None
        print(summary.format_table(result, verbose=verbose, explain=explain, width=width))
        print(f"{names.VOICE} check " + ("passed" if result["passed"] else "FAILED"))
    return 0 if result["passed"] else 1


def analyse(directory: str, namespace: argparse.Namespace) -> int:
    """``--analyse DIR``: parse raw torch_npu data offline, then check it; exit 0 only when complete.

    For ``--no-analyse`` runs and for jobs killed before their data was parsed. torch_npu's
    ``analyse`` reports failures only as log lines, so the deliverable check afterwards decides.
    """
    from npuprof_launch.common import deliverables

    if not os.path.isdir(directory):
        raise UsageError(f"--analyse {directory!r}: not a directory")
    sessions = deliverables.ascend_dirs(directory)
    if not sessions and _torch_run(directory):
        names.say(
            f"--analyse {directory!r}: a run of the torch backend: its traces are already complete (torch.profiler "
            f"writes them parsed; only torch_npu's raw data needs --analyse); npuprof-run --check {directory} "
            "validates them"
        )
        return 0
    if not sessions:
        raise UsageError(
            f"--analyse {directory!r}: no *{names.ASCEND_DIR_SUFFIX} directory there; give the --output-dir "
            "of a run or one of its session directories"
        )
    config = resolve_config(namespace, os.environ)
    explicit = namespace.export_type is not None or os.environ.get(options.BY_NAME["export-type"].env)
    export_types = config.export_type if explicit else None
    with _parse_progress(sessions):
        version = _parse_offline(directory, export_types)
    problems = []
    for path in sessions:
        problems.extend(deliverables.check_ascend_dir(path, export_types or deliverables.recorded_export_types(path)))
    print(f"npuprof: torch_npu {version} analysed {len(sessions)} session(s) in {os.path.abspath(directory)}")
    if problems:
        print("npuprof: still incomplete (parsing needs CANN's msprof on PATH; each session's logs/ says more):")
        print("\n".join(f"  - {problem}" for problem in problems))
    print("npuprof: analyse " + ("FAILED" if problems else "passed"))
    return 1 if problems else 0


def _parse_offline(directory: str, export_types: tuple[str, ...] | None) -> str:
    """torch_npu's offline parse of ``directory``, in a process of its own (npuoffline.py names
    why); returns the torch_npu version that parsed."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="npuprof-analyse-") as folder:
        result_file = os.path.join(folder, "result.json")
        subprocess.run(
            [sys.executable, "-m", OFFLINE_PARSE, directory, "--result", result_file]
            + (["--export-type", ",".join(export_types)] if export_types else []),
            env=names.without_hook(os.environ),
            stdout=2,  # torch_npu prints its progress: the launcher's stdout is for its own lines
            check=False,
        )
        try:
            with open(result_file) as handle:
                result = json.load(handle)
        except (OSError, ValueError):
            result = {}
    if "import_error" in result:
        raise UsageError(f"--analyse needs torch_npu, which does not import here: {result['import_error']}")
    if "version" not in result:
        raise UsageError(f"--analyse {directory!r}: torch_npu's parse ended without a word (its messages above)")
    return str(result["version"])


def _torch_run(directory: str) -> bool:
    """Whether ``directory`` is the output of a torch-backend run: a record says so, or a trace is there."""
    from npuprof_launch.common import record

    if any(r.get("backend") == "torch" for r in record.read_dir(directory)):
        return True
    try:
        return any(name.endswith(names.TORCH_TRACE_SUFFIXES) for name in os.listdir(directory))
    except OSError:
        return False


@contextlib.contextmanager
def _parse_progress(sessions: list[str]):
    """torch_npu parses every session in one call (its own process pool), and says nothing until
    the end: a thread looks at the sessions' deliverables meanwhile and keeps a progress line."""
    from npuprof_launch.common import deliverables

    pending = [path for path in sessions if not deliverables.looks_parsed(path)]
    progress = Progress("torch_npu parsing", len(pending), "sessions parsed")
    stop = threading.Event()

    def watch() -> None:
        left = list(pending)
        while not stop.wait(1.0):
            left = [path for path in left if not deliverables.looks_parsed(path)]
            progress.set(len(pending) - len(left))

    watcher = threading.Thread(target=watch, name="npuprof-analyse-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join(timeout=5)
        # The last look: a parse that ended between two looks of the thread is counted too.
        progress.set(sum(1 for path in pending if deliverables.looks_parsed(path)))
        progress.finish()
