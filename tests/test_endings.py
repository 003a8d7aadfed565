"""The record stays true however a process ends, and the rank is the job's own.

os._exit (after and inside a window), a fork-started multiprocessing trainer (which leaves through
os._exit), os.execv of the process after one step, a runpy wrapper around a script with a
``__main__`` target, Lightning's DDP workers (no RANK set) under --ranks. A process that
stops stepping inside a window (its end, or DDP's Join with uneven inputs) keeps only its steps.
"""

from __future__ import annotations

import os
import re
import signal
import sys

import pytest
from answers import check_json, texts
from compare import profiled_against_bare, sorted_lines
from jobs import npuprof, script
from npu_standin import standin_env
from outputs import read_trace, status_records, step_spans, torch_traces, windows

ENDINGS = script("endings.py")
UNEVEN = script("uneven_join.py")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]


def run(out, how, *schedule, job=()):
    return profiled_against_bare([ENDINGS, "--how", how, *job], schedule, out=out).profiled


def test_os_exit_after_the_window_leaves_a_true_record(out):
    run(out, "os_exit", "--skip-first", "2", "--active", "3")
    (record,) = status_records(out)
    assert record["ended"] == "os._exit" and record["steps"] == 8 and record["state"] == "done"
    assert check_json(out)[0] == 0


def test_os_exit_inside_the_window_keeps_the_whole_steps_it_recorded(out):
    result = run(out, "os_exit_inside", "--skip-first", "2", "--active", "4")
    (record,) = status_records(out)
    assert record["ended"] == "os._exit" and record["steps"] == 4
    assert windows(record) == [{"first_step": 3, "last_step": 4, "complete": False, "traces": record["traces"]}]
    assert len(torch_traces(out)) == 1
    code, report = check_json(out)
    assert code == 1
    assert any("cut short by os._exit at step 4" in p and "steps 3-4" in p for p in texts(report["problems"])), report
    assert "run more steps" not in result.stderr


def test_a_fork_started_trainer_is_profiled_and_its_record_closed(out):
    run(out, "fork_trainer", "--skip-first", "2", "--active", "3")
    (record,) = status_records(out)
    assert record["ended"] == "os._exit" and record["steps"] == 8 and record["windows"][0]["complete"]


def test_a_process_that_re_executes_itself_counts_on_in_its_new_image(out):
    result = run(out, "exec", "--skip-first", "2", "--active", "3")
    old, new = sorted(status_records(out), key=lambda r: r["started_ns"])
    assert old["pid"] == new["pid"]
    assert old["ended"] == "exec" and old["steps"] == 1
    assert new["ended"] == "exit" and new["steps"] == 8
    assert new["windows"][0]["first_step"] == 3 and new["windows"][0]["last_step"] == 5
    code, report = check_json(out)
    assert code == 0, report
    assert "replaced itself with os.exec" in result.stderr


def test_a_probe_step_then_re_exec_gets_its_window_in_the_new_image_and_passes(out):
    """A job runs one probe step and re-executes itself: the window opened at the step-1 boundary is
    cut by the exec before any whole step; the new image records the window. The job got what was
    asked: the empty window is a note, its trace is no row's, and the check passes."""
    result = run(out, "exec_again", "--active", "2", job=("--at", "1"))
    old, new = sorted(status_records(out), key=lambda r: r["started_ns"])
    assert old["ended"] == "exec" and old["windows"][0]["last_step"] is None, old["windows"]
    assert new["windows_completed"] == 1, new["windows"]
    code, report = check_json(out)
    assert code == 0 and report["problems"] == [], texts(report["problems"])
    (moved,) = [note for note in report["notes"] if note["kind"] == "window_moved_on"]
    assert moved["steps"] == [old["windows"][0]["first_step"]], moved
    assert [t for p in report["processes"] for t in p["traces"]] == new["traces"], "the empty trace is no row's"
    assert report["job"]["windows_planned"] == report["job"]["windows_completed"] == 1
    assert "no ProfilerStep#" not in result.stderr and "1 of 1 windows complete" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("at", "passed", "kept"),
    [(3, False, ["ProfilerStep#2", "iteration#2", "ProfilerStep#3", "iteration#3"]), (5, True, None)],
    ids=["inside_the_window", "after_the_window"],
)
def test_a_process_that_re_executes_itself_after_opening_a_window_accounts_for_both_images(out, at, passed, kept):
    """A job that re-executes itself once with its own arguments (an environment marker
    says it did), after iteration ``at``, under a window over steps 2-4. The old image's record
    ends with the exec and holds the window (cut short at step 3, or whole); the new image counts
    on and plans no window of its own. The report shows the old image's trace in a row of its own
    and, where it was cut short, says so as the problem, never "the schedule needs more steps"."""
    result = run(out, "exec_again", "--skip-first", "1", "--active", "3", job=("--at", str(at)))
    old, new = sorted(status_records(out), key=lambda r: r["started_ns"])
    assert old["pid"] == new["pid"] and old["ended"] == "exec" and new["ended"] == "exit"
    assert old["steps"] == at and new["steps"] == at + 8
    assert new["windows"] == [] and new["windows_planned"] == 0
    (trace,) = torch_traces(out)
    assert old["traces"] == [os.path.relpath(trace, out)]
    if kept:
        assert step_spans(trace) == kept
    code, report = check_json(out)
    assert (code == 0) is passed, report
    shown = [t for process in report["processes"] for t in process["traces"]]
    assert shown == old["traces"]
    if not passed:
        (problem,) = texts(report["problems"])
        assert "before its os.exec" in problem and "cut short by os.exec at step 3" in problem, problem
    assert "run more steps" not in result.stderr
    spans = [tuple(map(int, span)) for span in re.findall(r"steps (\d+)-(\d+)", result.stderr)]
    assert all(first <= last for first, last in spans), result.stderr  # no "steps 4-3" beside an aftercare


def test_a_killed_process_is_told_as_such_with_its_last_known_step(out):
    """SIGKILL runs no handler: the record holds the last count written (steps 1, 2, 4, 8, ...), and
    the process's step mark the count it reached (common/stepmark.py), which the answer tells."""
    code = (
        "import os, signal, torch\n"
        "m = torch.nn.Linear(4, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "for i in range(9):\n"
        "    m(torch.ones(4)).sum().backward(); o.step(); o.zero_grad()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    result = npuprof(["--skip-first", "2", "--active", "2", "--output-dir", out, "--", sys.executable, "-c", code])
    assert result.returncode == 128 + 9
    (record,) = status_records(out)
    assert record["ended"] is None and record["steps"] == 8
    code, report = check_json(out)
    assert "ended without exit handlers; last known step 9" in report["processes"][0]["ended_note"]
    assert "killed by signal SIGKILL" in result.stderr or "ended without its exit handlers" in result.stderr


#: The job is killed (SIGKILL, as the OOM killer sends it) while its window's stop exports it: a
#: thread of its own sends it once the export's parse has begun in its pool worker (the worker's
#: log is there). The worker then waits for its dead parent's next task for ever, as the real one's
#: does: the job's output goes to /dev/null first, so that the worker holds no pipe of the test's.
KILLED_IN_EXPORT = """\
import glob, os, signal, threading, time, torch
quiet = os.open(os.devnull, os.O_WRONLY); os.dup2(quiet, 1); os.dup2(quiet, 2)
def kill_in_export():
    parsing = os.path.join(os.environ["NPU_PROF_OUTPUT_DIR"], "*_ascend_pt", "logs", "*_ProfilingParser.log")
    while not glob.glob(parsing):
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGKILL)
threading.Thread(target=kill_in_export, daemon=True).start()
m = torch.nn.Linear(4, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(9):
    m(torch.ones(4)).sum().backward(); o.step(); o.zero_grad()
"""


def test_a_process_killed_in_its_window_s_export_is_told_so_with_what_it_left(tmp_path):
    """The stop exports the window in the step after it (the stand-in's parse made to take 30 s): a
    process killed there is told as killed in that export, the unfinished session directory as what
    it left (named for it, so not a stranger's trace), the parse's pool worker it left running with
    the command that ends it, and where a SIGKILL's sender is told."""
    out = str(tmp_path / "out")
    env = standin_env(str(tmp_path / "calls.jsonl"), TORCH_NPU_STANDIN_PARSE_S="30")
    schedule = ["--backend", "npu", "--skip-first", "2", "--active", "2", "--output-dir", out]
    result = npuprof([*schedule, "--", sys.executable, "-c", f"{KILLED_IN_EXPORT}# {out}\n"], env=env)
    assert result.returncode == 128 + 9, result.stderr
    assert "open NPU data" not in result.stderr, "no window's trace to open: msprof-analyze would read the unfinished"
    (record,) = status_records(out)
    (window,) = record["windows"]
    assert record["ended"] is None and isinstance(window["stop_began_ns"], int) and "stop_s" not in window
    code, report = check_json(out)
    assert code == 1 and [p["kind"] for p in report["problems"]] == ["window_incomplete"], report["problems"]
    (session,) = [name for name in os.listdir(out) if name.endswith("_ascend_pt")]
    text = report["problems"][0]["text"]
    assert "killed by signal SIGKILL while the profiler stopped its window (steps 3-4) and exported it" in text
    assert f"the export left 1 unfinished trace: {session}; it left running 1 process" in text, text
    assert text.endswith("; dmesg says whether the kernel's out-of-memory killer sent it"), text
    (worker,) = re.findall(r"it forked in that stop, pid (\d+) \(torch_npu's parse workers: .*\): kill \1;", text)
    with open(f"/proc/{worker}/cmdline", "rb") as handle:  # the job's fork: its command
        assert out.encode() in handle.read()
    os.kill(int(worker), signal.SIGKILL)  # as the answer says


#: The job stops its window's aftercare (its own child) for a while, then kills itself: the
#: aftercare outlives it, as a slow compression outlives a job the OOM killer ends.
KILLED_BESIDE_AFTERCARE = """\
import os, signal, subprocess, time, torch
def children():
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().rpartition(")")[2].split()[1] == str(os.getpid()):
                    found.append(int(pid))
        except (OSError, IndexError, ValueError):
            pass
    return found
m = torch.nn.Linear(4, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(9):
    m(torch.ones(4)).sum().backward(); o.step(); o.zero_grad()
    if i == 4:
        kids = children()
        for kid in kids:  # once it runs python: its priority then is the one its imports had
            for _ in range(2000):
                with open(f"/proc/{kid}/cmdline", "rb") as handle:
                    if b"npuprof_launch.inprocess.aftercare" in handle.read():
                        break
                time.sleep(0.001)
            os.kill(kid, signal.SIGSTOP)
            with open(f"/proc/{kid}/stat") as handle:
                print("nice", handle.read().rpartition(")")[2].split()[16], flush=True)
        print("stopped", len(kids), flush=True)
        subprocess.Popen(["sh", "-c", "sleep 3; kill -CONT " + " ".join(map(str, kids))], start_new_session=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_process_s_aftercare_is_waited_for_before_the_report(out):
    """CI failed here: the report was built while the orphaned aftercare was compressing the trace."""
    schedule = ["--skip-first", "2", "--active", "2", "--output-dir", out]
    result = npuprof([*schedule, "--", sys.executable, "-c", KILLED_BESIDE_AFTERCARE])
    assert result.returncode == 128 + 9, result.stderr
    assert result.stdout == "nice 19\nstopped 1\n", "the aftercare starts at the lowest priority"
    assert "could not build the report" not in result.stderr, result.stderr
    (trace,) = torch_traces(out)
    assert trace.endswith(".gz"), "the launcher reported before the aftercare had compressed the window"
    (record,) = status_records(out)
    assert record["ended"] is None and record["windows"][0]["complete"]
    code, report = check_json(out)
    assert report["processes"][0]["profiler_steps"] == 2, report


def test_a_main_target_found_in_the_script_a_runpy_wrapper_runs(out):
    """The wrapper imports torch first, then runs the script as __main__ in a module of its own."""
    loop = script("generate_loop.py")
    wrapper = script("runpy_wrapper.py")
    options = ["--target", "__main__:generate_step", "--skip-first", "1", "--active", "2"]
    profiled_against_bare([wrapper, loop, "--calls", "6"], options, out=out)
    (record,) = status_records(out)
    assert record["steps"] == 6 and record["windows"][0]["complete"], record
    assert check_json(out)[0] == 0


@pytest.mark.parametrize("strategy", ["ddp", "ddp_spawn"])
def test_lightning_ddp_workers_get_their_true_rank(tmp_path, strategy):
    """Lightning's ddp sets only LOCAL_RANK and NODE_RANK, ddp_spawn nothing: torch.distributed tells."""
    pytest.importorskip(
        "lightning", reason="install the frameworks extra: pip install torch==2.13.0 -e '.[frameworks]'"
    )
    job = [script("lightning_job.py"), "--devices", "2", "--strategy", strategy, "--steps", "6"]
    out = str(tmp_path / "out")
    options = ["--ranks", "1", "--skip-first", "2", "--active", "2"]
    # Both ranks print at once: compare their lines, not how the two streams interleaved.
    result = profiled_against_bare(
        job, options, out=out, cwd=str(tmp_path), compare=[("stdout", sorted_lines)]
    ).profiled
    profiled = [r for r in status_records(out) if r["state"] != "off"]
    assert [(r["rank"], r["rank_source"]) for r in profiled] == [(1, "torch.distributed")]
    (trace,) = torch_traces(out)
    assert "_rank1_" in os.path.basename(trace)
    assert "matched no process" not in result.stderr


def teardown_in_no_step(trace: str) -> bool:
    """Whether the job's ``teardown`` range is in the trace and inside no ProfilerStep# span."""
    events = [e for e in read_trace(trace)["traceEvents"] if e.get("ph") == "X"]
    (teardown,) = [e for e in events if e["name"] == "teardown"]
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    return all(teardown["ts"] >= s["ts"] + s["dur"] or teardown["ts"] + teardown["dur"] <= s["ts"] for s in steps)


def test_a_process_that_ends_inside_a_window_keeps_only_the_steps_it_ran(out):
    """6 steps, a window over steps 5-8: the trace holds steps 5 and 6, and no span for a step 7
    that the process never began (torch had opened ProfilerStep#7 at step 6's end); the teardown
    after step 6 stays in the trace, in no step."""
    profiled_against_bare([UNEVEN, "--steps", "6"], ["--skip-first", "4", "--active", "4"], out=out)
    (record,) = status_records(out)
    assert windows(record) == [{"first_step": 5, "last_step": 6, "complete": False, "traces": record["traces"]}]
    (trace,) = torch_traces(out)
    assert step_spans(trace) == ["ProfilerStep#5", "iteration#5", "ProfilerStep#6", "iteration#6"]
    assert teardown_in_no_step(trace)


def test_a_rank_out_of_data_under_join_keeps_only_the_steps_it_ran(out):
    """Real torchrun, 2 ranks, DDP on gloo under Join: rank 0 has 6 batches, rank 1 has 8. Rank 0's
    window over steps 5-8 ends with its process after step 6: no span for the shadow all-reduces it
    ran inside Join while rank 1 made steps 7 and 8. Rank 1's window is whole."""
    job = [*TORCHRUN, "--nproc_per_node", "2", UNEVEN, "--steps", "6", "--extra", "2"]
    profiled_against_bare(job[1:], ["--skip-first", "4", "--active", "4"], out=out, compare=[("stdout", sorted_lines)])
    by_rank = {record["rank"]: record for record in status_records(out)}
    assert windows(by_rank[0])[0]["last_step"] == 6 and not by_rank[0]["windows"][0]["complete"]
    assert by_rank[1]["windows"][0]["complete"] and by_rank[1]["steps"] == 8
    traces = {rank: [t for t in torch_traces(out) if f"_rank{rank}_" in os.path.basename(t)] for rank in (0, 1)}
    assert step_spans(traces[0][0]) == ["ProfilerStep#5", "iteration#5", "ProfilerStep#6", "iteration#6"]
    assert step_spans(traces[1][0], ("ProfilerStep#",)) == [f"ProfilerStep#{n}" for n in (5, 6, 7, 8)]
