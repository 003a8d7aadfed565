"""Where a job stops stepping: the hang watch's stack dumps, told while the job runs and at its end.

Real jobs under the real launcher (a 2-rank gloo job under torchrun, one process alone), with a
threshold of 2 s: each test waits for the launcher's own line, never for a fixed time. A rank
stops in a sleep (examples/stuck.py), in a data loader whose worker never returns, or at a
barrier the other never reaches (tests/scripts/stuck_ways.py); the profiler's own stop, a long
export (the torch_npu stand-in's), is none of these.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

from answers import answer_json, check_json
from jobs import PYTHON, ROOT, assert_ok, clean_env, npuprof
from npu_standin import standin_env
from outputs import status_records

STUCK = os.path.join(ROOT, "examples", "stuck.py")
WAYS = os.path.join(ROOT, "tests", "scripts", "stuck_ways.py")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]


def line_of(marker: str, path: str = STUCK) -> str:
    """``stuck.py:N``, the line of the job that holds ``marker``."""
    with open(path) as handle:
        (number,) = [i for i, line in enumerate(handle, 1) if line.rstrip().endswith(marker)]
    return f"{os.path.basename(path)}:{number}"


#: The job's lines (examples/stuck.py) where a rank sleeps, pauses, and where the others wait.
SLEEP_AT, PAUSE_AT, ALL_REDUCE_AT = line_of("# the hang"), line_of("# the pause"), line_of("# the others wait here")
#: stuck_ways.py's lines: the loader, its others' all_reduce, the barrier and where the other sleeps.
LOADER_AT, WAYS_ALL_REDUCE_AT = line_of("# the loader", WAYS), line_of("# the others wait here", WAYS)
BARRIER_AT, ELSEWHERE_AT = line_of("# the barrier", WAYS), line_of("# the others are elsewhere", WAYS)


def launch(out: str, job: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [PYTHON, "-m", "npuprof_launch", "--hang-after", "2", "--output-dir", out, "--", *job],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


class Stderr:
    """The launcher's stderr, read by a thread: a test waits for a line, the pipe never fills."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stderr:
            with self._seen:
                self.lines.append(line)
                self._seen.notify_all()
        with self._seen:
            self.lines.append(None)
            self._seen.notify_all()

    def wait_for(self, text: str, limit_s: float = 400) -> str:
        """The first line holding ``text`` (the job is stuck by then); the limit is for a failure only."""
        with self._seen:
            found = self._seen.wait_for(lambda: self._find(text) is not None, timeout=limit_s)
        assert found, f"no line with {text!r} in {limit_s} s:\n{''.join(filter(None, self.lines))}"
        line = self._find(text)
        assert line, f"the launcher ended without a line holding {text!r}:\n{''.join(filter(None, self.lines))}"
        return line

    def _find(self, text: str):
        for line in self.lines:
            if line is None:
                return ""
            if text in line:
                return line
        return None

    def join(self) -> None:
        self._thread.join(timeout=300)


def test_a_rank_stuck_in_a_sleep_is_named_while_it_hangs_and_after_sigterm(out):
    launcher = launch(out, [*TORCHRUN, STUCK, "--stuck-rank", "1", "--after", "4"])
    stderr = Stderr(launcher)
    try:
        line = stderr.wait_for("npuprof: no step for")
        launcher.send_signal(signal.SIGTERM)  # forwarded to torchrun, which tears the ranks down
        launcher.wait(timeout=300)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
    stderr.join()
    assert f"(after step 4): rank 1 in time.sleep ({SLEEP_AT}); rank 0 in all_reduce ({ALL_REDUCE_AT})" in line, line
    _, report = check_json(out)
    stalls = report["job"]["stalls"]
    assert len(stalls) == 1 and stalls[0]["ranks"] == [0, 1], stalls
    first, second = stalls[0]["groups"]
    assert (first["ranks"], first["call"], first["at"]) == ([1], "time.sleep", SLEEP_AT), "the odd one out first"
    assert (second["ranks"], second["call"], second["at"]) == ([0], "all_reduce", ALL_REDUCE_AT)
    assert first["frames"][0].startswith(f"{SLEEP_AT} in main"), "the job's frames in front"
    assert any(f.startswith(f"{ALL_REDUCE_AT} in main") for f in second["frames"][:1]), second["frames"]
    assert report["job"]["pauses"] == [], "a stall that never ended is no pause"
    assert any(finding["kind"] == "stall" for finding in report["findings"])


def test_ranks_killed_while_stuck_leave_their_stacks_and_the_report_names_the_odd_one(out):
    launcher = launch(out, [*TORCHRUN, STUCK, "--stuck-rank", "1", "--after", "3"])
    stderr = Stderr(launcher)
    try:
        line = stderr.wait_for("npuprof: no step for")
        for record in status_records(out):
            os.kill(record["pid"], signal.SIGKILL)  # no exit handler of ours runs
        launcher.wait(timeout=300)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
    stderr.join()
    # Both ranks ended step 3 (rank 0 then waits in step 4's all_reduce); their records were last
    # written at step 2 (checkpoints at 1, 2, 4, ...), and no exit handler wrote them again: the
    # step is each process's mark, live and at the end.
    assert [record["steps"] for record in status_records(out)] == [2, 2], "no checkpoint at step 3"
    assert "(after step 3)" in line, line
    _, report = check_json(out)
    (stall,) = report["job"]["stalls"]
    assert (stall["since_step"], stall["step_exact"]) == (3, True), stall
    told = npuprof(["--check", out]).stdout
    assert "the job stopped stepping on ranks 0-1 (after step 3);" in told, told
    assert told.count("ended without exit handlers; last known step 3") == 2, told
    groups = stall["groups"]
    assert [(g["ranks"], g["call"], g["at"]) for g in groups] == [
        ([1], "time.sleep", SLEEP_AT),
        ([0], "all_reduce", ALL_REDUCE_AT),
    ]


def test_a_pause_that_ends_is_a_pause_at_its_step_not_a_hang(out):
    result = npuprof(
        ["--hang-after", "2", "--output-dir", out, "--", PYTHON, STUCK, "--after", "3", "--pause", "7", "--steps", "8"]
    )
    assert_ok(result)
    _, report = check_json(out)
    assert report["job"]["stalls"] == []
    (pause,) = report["job"]["pauses"]
    assert pause["step"] == 3 and pause["seconds"] >= 6.5 and not pause["at_end"], pause
    assert [(g["call"], g["at"]) for g in pause["groups"]] == [("time.sleep", PAUSE_AT)]
    assert "a pause of" in result.stderr and "after step 3" in result.stderr
    (record,) = status_records(out)
    assert record["hang_watch"]["after_s"] == 2.0 and record["pauses"][0]["dumps"] >= 1


def test_hang_after_0_turns_the_watch_off(out):
    result = npuprof(["--hang-after", "0", "--output-dir", out, "--", PYTHON, STUCK, "--steps", "3"])
    assert_ok(result)
    (record,) = status_records(out)
    assert record["hang_watch"] is None and record["pauses"] == []
    assert not [name for name in os.listdir(os.path.join(out, "npuprof_status")) if name.endswith(".stacks")]
    assert answer_json(npuprof(["--check", out, "--json"]).stdout)["job"]["stalls"] == []


def stop_stuck(launcher: subprocess.Popen, stderr: Stderr, how: str, out: str) -> str:
    """The first stall line, then the job stopped ``how`` (SIGTERM of the launcher, or SIGKILL of
    the ranks, whose exit handlers then never run); returns the line."""
    try:
        line = stderr.wait_for("npuprof: no step for")
        if how == "SIGTERM":
            launcher.send_signal(signal.SIGTERM)
        else:
            for record in status_records(out):
                os.kill(record["pid"], signal.SIGKILL)
        launcher.wait(timeout=300)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
    stderr.join()
    return line


def test_a_rank_whose_data_loader_worker_never_returns_is_named_at_the_jobs_line(out):
    launcher = launch(out, [*TORCHRUN, WAYS, "--way", "loader", "--stuck-rank", "1", "--after", "3"])
    line = stop_stuck(launcher, Stderr(launcher), "SIGTERM", out)
    loader = f"rank 1 in dataloader.__next__ ({LOADER_AT}); rank 0 in all_reduce ({WAYS_ALL_REDUCE_AT})"
    assert loader in line, line
    _, report = check_json(out)
    (stall,) = report["job"]["stalls"]
    first, second = stall["groups"]
    assert (first["ranks"], first["call"], first["at"]) == ([1], "dataloader.__next__", LOADER_AT)
    assert first["frames"][0].startswith(f"{LOADER_AT} in main"), "the job's frame, not the loader's queue"
    assert (second["ranks"], second["call"], second["at"]) == ([0], "all_reduce", WAYS_ALL_REDUCE_AT)


def test_a_rank_at_a_barrier_the_other_never_reaches_is_told_with_where_the_other_is(out):
    launcher = launch(out, [*TORCHRUN, WAYS, "--way", "barrier", "--stuck-rank", "1", "--after", "3"])
    line = stop_stuck(launcher, Stderr(launcher), "SIGKILL", out)
    assert f"rank 0 in time.sleep ({ELSEWHERE_AT}); rank 1 in barrier ({BARRIER_AT})" in line, line
    _, report = check_json(out)
    groups = report["job"]["stalls"][0]["groups"]
    assert [(g["ranks"], g["call"], g["at"]) for g in groups] == [
        ([0], "time.sleep", ELSEWHERE_AT),
        ([1], "barrier", BARRIER_AT),
    ], "the rank outside the collective first: the one the barrier waits for"


#: A 2-rank DDP job whose rank 0's export takes 10 s (the stand-in's parse), rank 1's none.
EXPORTS_UNEVENLY = """\
import os, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
os.environ["TORCH_NPU_STANDIN_PARSE_S"] = "10" if dist.get_rank() == 0 else "0"
m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1)); o = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(8):
    m(torch.ones(4)).sum().backward(); o.step(); o.zero_grad(); time.sleep(0.02)
dist.destroy_process_group()
"""


def test_the_profiler_s_own_stop_is_told_as_such_and_is_no_pause_of_the_job(tmp_path):
    """The stop exports the window inside the step after it (torch_npu parses there: minutes for a
    large window; the stand-in's parse on rank 0 made to take 10 s): rank 0 stops stepping, and rank
    1 waits for it in lockstep; that is the tool's, not the job's. Told while it lasts as the
    profiler's stop with the rank waiting for it, and what makes it shorter; at the end no pause and
    no stall on either rank, and the stop's cost with the tool's steps."""
    out = str(tmp_path / "out")
    job = tmp_path / "exports_unevenly.py"
    job.write_text(EXPORTS_UNEVENLY)
    env = standin_env(str(tmp_path / "calls.jsonl"))
    flags = ["--backend", "npu", "--hang-after", "2", "--skip-first", "2", "--active", "2", "--output-dir", out]
    result = npuprof([*flags, "--", *TORCHRUN, str(job)], env=env)
    assert_ok(result)
    told = "the profiler has been stopping and exporting its window (steps 3-4) for at least "
    assert told in result.stderr and "--async-mode parses beside the job" in result.stderr, result.stderr
    assert "on rank 0 (after step 4), in the step after the window; rank 1 waiting for it" in result.stderr
    _, report = check_json(out)
    assert report["job"]["stalls"] == [] and report["job"]["pauses"] == [], report["job"]
    assert not [item for item in report["findings"] if item["kind"] in ("pause", "stall")]
    records = {record["rank"]: record for record in status_records(out)}
    assert records[0]["pauses"] and records[1]["pauses"], "each rank's watch saw the pause: the answer tells whose"
    assert records[0]["windows"][0]["stop_s"] >= 10.0 > records[1]["windows"][0]["stop_s"]
    (note,) = [n for n in report["notes"] if n["kind"] == "tool_steps"]
    assert note["evidence"]["profiler_stops"][0] == {
        "rank": 0,
        "first_step": 3,
        "stop_s": records[0]["windows"][0]["stop_s"],
    }
