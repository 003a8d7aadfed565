"""The hang watch's pure parts: a faulthandler dump read back (common/stalls.py), where a thread
is, ranks grouped by place, the longest gap between steps, and the watch's threshold."""

from __future__ import annotations

import subprocess
import sys

from npuprof_launch.common import stalls
from npuprof_launch.inprocess import hangwatch

LIB = "/venv/lib/python3.11/site-packages/torch/distributed"
DUMP = f"""Timeout (0:00:35)!
Thread 0x00007fa0687a46c0 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Thread 0x00007fa0695e6b80 (most recent call first):
  File "{LIB}/distributed_c10d.py", line 3252 in all_reduce
  File "{LIB}/c10d_logger.py", line 83 in wrapper
  File "/job/train.py", line 42 in step
  File "/job/train.py", line 60 in <module>
Timeout (0:00:35)!
Thread 0x00007fa0695e6b80 (most recent call first):
  File "/job/train.py", line 25 in step
  File "/job/train.py", line 60 in <module>
"""
MAIN = 0x00007FA0695E6B80


def test_a_dump_reads_back_as_threads_of_frames_most_recent_first():
    dumps = stalls.parse(DUMP)
    assert [dump["after_s"] for dump in dumps] == [35, 35]
    assert sorted(dumps[0]["threads"]) == [0x00007FA0687A46C0, MAIN]
    assert dumps[0]["threads"][MAIN][0] == (f"{LIB}/distributed_c10d.py", 3252, "all_reduce")
    assert stalls.parse('garbage\n  File "x", line 1 in f\n') == [], "frames before any dump are no dump"


def test_where_names_the_library_call_the_job_is_in_and_the_jobs_line():
    place = stalls.where(stalls.parse(DUMP)[0]["threads"][MAIN])
    assert (place["call"], place["at"]) == ("all_reduce", "train.py:42"), "the public function, not 'wrapper'"
    assert place["frames"][:2] == ["train.py:42 in step", "train.py:60 in <module>"], "the job's frames first"


def test_where_reads_the_call_on_the_jobs_own_line_when_it_is_the_innermost_frame():
    frames = stalls.parse(DUMP)[1]["threads"][MAIN]
    lines = {("/job/train.py", 25): "        time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 60)\n"}
    place = stalls.where(frames, read_line=lambda path, number: lines.get((path, number), ""))
    assert (place["call"], place["at"]) == ("time.sleep", "train.py:25"), "the outermost call of the line"
    assert stalls.where(frames, read_line=lambda path, number: "")["call"] is None, "a line it cannot read"


def test_a_rank_waiting_for_its_data_loader_is_in_the_loaders_next_at_the_jobs_line():
    """The public names inside a DataLoader's ``__next__`` (a queue's ``get``, a connection's
    ``wait``, which is a collective's name too) say nothing of where the job is."""
    frames = [
        ("/usr/lib/python3.11/selectors.py", 415, "select"),
        ("/usr/lib/python3.11/multiprocessing/connection.py", 947, "wait"),
        ("/usr/lib/python3.11/multiprocessing/queues.py", 113, "get"),
        ("/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", 1291, "_try_get_data"),
        ("/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", 725, "__next__"),
        ("/job/train.py", 52, "main"),
    ]
    place = stalls.where(frames)
    assert (place["call"], place["at"]) == ("dataloader.__next__", "train.py:52")
    assert place["frames"][0] == "train.py:52 in main"
    assert not stalls.is_collective(place["call"])


def test_ranks_are_grouped_by_place_the_odd_one_out_first():
    def item(rank, call, at):
        return {"rank": rank, "where": {"call": call, "at": at, "frames": [f"{at} in main"]}}

    stuck = [item(r, "all_reduce", "train.py:42") for r in (0, 2, 3)] + [item(1, "time.sleep", "train.py:25")]
    groups = stalls.group(stuck)
    assert [(g["ranks"], g["call"]) for g in groups] == [([1], "time.sleep"), ([0, 2, 3], "all_reduce")]
    two = stalls.group([item(0, "all_reduce", "t.py:1"), item(1, "next", "t.py:9")])
    assert [g["ranks"] for g in two] == [[1], [0]], "of two groups of one, the one outside a collective first"
    assert stalls.place_text(groups[0]) == "in time.sleep (train.py:25)"


def test_the_longest_gap_between_step_readings():
    assert hangwatch.longest_gap([1.0, 1.1, 9.1, 9.2]) == (2, 8.0)
    assert hangwatch.longest_gap([1.0]) == (0, 0.0)


def test_the_threshold_is_the_option_else_steps_with_a_floor(tmp_path):
    fixed = hangwatch.HangWatch(str(tmp_path / "r.json"), 2.0)
    assert fixed.threshold(5.0) == 2.0 and fixed.path == str(tmp_path / "r.stacks")
    auto = hangwatch.HangWatch(str(tmp_path / "r.json"), None)
    assert auto.threshold(None) == hangwatch.FLOOR_S and auto.threshold(0.01) == hangwatch.FLOOR_S
    assert auto.threshold(10.0) == 10.0 * hangwatch.STEP_MULTIPLE
    assert hangwatch.watch_for(str(tmp_path / "r.json"), 0) is None, "--hang-after 0: off"


#: Run in a fresh interpreter: the watch patches faulthandler and registers fork handlers.
FORK_AND_JOB = """
import faulthandler, os, sys
from npuprof_launch.inprocess import hangwatch
watch = hangwatch.watch_for(sys.argv[1], 30.0)
watch.arm(0.01, 1.0)
pid = os.fork()
if pid == 0:  # a forked child: no timer of the parent's to cancel (that would deadlock)
    child = hangwatch.watch_for(sys.argv[1] + ".child.json", 30.0)
    child.arm(0.01, 1.0)
    child.disarm()
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert status == 0, status
faulthandler.dump_traceback_later(100)  # the job takes the timer: the watch stands down
assert watch.stood_down
watch.arm(0.01, 1.0)
faulthandler.cancel_dump_traceback_later()
print("ok")
"""


def test_a_fork_and_the_jobs_own_timer_are_safe(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", FORK_AND_JOB, str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.strip() == "ok", result.stderr


def test_a_pause_the_window_s_stop_took_up_is_the_tool_s_and_a_stall_in_a_stop_is_told_as_one():
    from npuprof_launch.launcher import stallview

    stopped = {"windows": [{"first_step": 13, "last_step": 14, "stop_s": 9.5}]}
    waited = {"windows": [{"first_step": 13, "last_step": 14, "stop_s": 0.2}]}
    assert stallview.stops_by_step([stopped, waited]) == {14: 9.5}  # the job's step; the longest stop there
    stall = {
        "ranks": [0, 1],
        "processes": 2,
        "since_step": 4,
        "step_exact": True,
        "at_least_s": 31.0,
        "groups": [],
        "in_stop": {"steps": [3, 4], "npu": False, "ranks": [0]},
    }
    assert "window (steps 3-4) for at least 31 s on rank 0 (after step 4), in the step after the window; rank 1 " in (
        stallview.stall_line(stall)
    )
    stall = {
        "ranks": [1],
        "processes": 1,
        "since_step": 4,
        "step_exact": True,
        "at_least_s": 31.0,
        "groups": [],
        "in_stop": {"steps": [3, 4], "npu": False, "ranks": [1]},
    }
    line = stallview.stall_line(stall)
    assert line.startswith("the profiler has been stopping and exporting its window (steps 3-4) for at least 31 s")
    assert "--async-mode" not in line, "torch's export has no such option"
    on_npu = {**stall, "in_stop": {"steps": [3, 4], "npu": True}}
    assert "--async-mode parses beside the job" in stallview.stall_line(on_npu)
