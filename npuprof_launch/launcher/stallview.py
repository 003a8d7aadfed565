"""Hangs and pauses in the job's answer: which ranks stopped stepping, where, and for how long.

Each process's hang watch (inprocess/hangwatch.py) dumps its threads' stacks when it has not
stepped for its threshold, and again every threshold while it stays stuck; a process notes a
*pause* when stepping resumes (or when it then ends by itself), with the number of dumps written
by then. So the dumps past the last pause are a stall that never ended: the process is stuck now,
or was when it was stopped or killed. Ranks are grouped by where their main thread is
(common/stalls.py), the odd one out first.

The profiler's own stop is none of these: it exports the window in the step after it, minutes for
a large window parsed inside that step (torch_npu's default, sync), and the job waits. A pause the
window's stop takes up (its ``stop_s``) is left out (its cost is told with the tool's steps), and a
process that stops stepping while a stop is under way (its record's ``stop_began_ns``) is told as
in that stop, with what makes it shorter.

Used twice: at the end (``job["stalls"]`` and ``job["pauses"]`` of the report, its summary and
page) and while the job runs (``Watcher``, a thread of the launcher that reads the status folder
every few seconds and says once, then rarely, that the job stopped stepping).
"""

from __future__ import annotations

import glob
import os
import threading

from npuprof_launch.common import names, record, stalls
from npuprof_launch.common.record import ReadRecord
from npuprof_launch.launcher import answer, launch, wording

#: How often the launcher looks at the stacks files while the job runs.
WATCH_EVERY_S = 2.0


def of_process(
    rec: ReadRecord, output_dir: str, stops: dict[int, float] | None = None
) -> tuple[dict | None, list[dict]]:
    """One record's stall (its uncovered dumps, or None) and its pauses, each with where it was.
    ``stops``: the longest window stop at each step of the job (stops_by_step, over every process:
    in lockstep the others wait for a rank's stop); its own, where not given."""
    watch = rec.get("hang_watch") or {}
    if not watch.get("stacks"):
        return None, []
    dumps = stalls.read(os.path.join(output_dir, watch["stacks"]))
    if dumps is None:
        return None, []
    main = watch.get("main_thread")
    base = {"rank": rec.get("rank"), "pid": rec.get("pid"), "host": rec.get("host"), "steps": rec.get("steps")}
    pauses, covered = [], 0
    stops = stops if stops is not None else stops_by_step([rec])
    for pause in rec.get("pauses") or ():
        mine = dumps[covered : pause.get("dumps", covered)]
        covered = max(covered, pause.get("dumps", covered))
        stop_s = stops.get(pause["step"] + (rec.get("step_offset") or 0), 0.0)
        if stop_s >= pause["seconds"] - (watch.get("after_s") or 0):
            continue  # the profiler's stop took it up, here or on a rank this one waited for: not the job's
        place = stalls.where(stalls.main_frames(mine[-1], main)) if mine else {"call": None, "at": None, "frames": []}
        pauses.append({**base, **pause, "where": place})
    uncovered = dumps[covered:]
    if not uncovered:
        return None, pauses
    stuck = {
        **base,
        "dumps": len(uncovered),
        "at_least_s": sum(dump["after_s"] for dump in uncovered),
        "ended": rec.get("ended"),
        # the step it stopped after (its last record, or its mark: record.read_all); else its last checkpoint's
        "step_exact": rec.get("ended") is not None or bool(rec.get("marked")),
        "where": stalls.where(stalls.main_frames(uncovered[-1], main)),
    }
    stopping = record.stop_under_way(rec)
    if stopping is not None:
        steps = [stopping.get("first_step"), stopping.get("last_step")]
        stuck["in_stop"] = {"steps": steps, "npu": rec.get("backend") == "npu"}
    return stuck, pauses


def stops_by_step(records: list[ReadRecord]) -> dict[int, float]:
    """The longest stop of a window at each step of the job (its last step: the stop runs in the
    step after it, the step a pause after that one held), from the windows' ``stop_s``."""
    found: dict[int, float] = {}
    for rec in records:
        for window in rec.get("windows") or ():
            step, seconds = window.get("last_step"), window.get("stop_s")
            if isinstance(step, int) and seconds:
                found[step] = max(found.get(step, 0.0), seconds)
    return found


def summarize(records: list[ReadRecord], output_dir: str) -> tuple[list[dict], list[dict]]:
    """The report's ``stalls`` (ranks grouped by where they are stuck, the odd one out first) and
    ``pauses`` (grouped by step: a pause in lockstep holds every rank)."""
    stuck, paused = [], []
    stops = stops_by_step(records)
    for rec in records:
        found, pauses = of_process(rec, output_dir, stops)
        if found:
            stuck.append(found)
        paused.extend(pauses)
    stall_groups = []
    if stuck:
        groups = stalls.group(stuck)
        # a process in its window's stop: the others stuck with it wait for it, in lockstep
        stopping = [item for item in stuck if item.get("in_stop")]
        in_stop = None
        if stopping:
            ranks = sorted(item["rank"] for item in stopping if item.get("rank") is not None)
            in_stop = {**stopping[0]["in_stop"], "ranks": ranks}
        stall_groups.append(
            {
                "in_stop": in_stop,
                "since_step": min(item.get("steps") or 0 for item in stuck),
                "step_exact": all(item["step_exact"] for item in stuck),
                "at_least_s": max(item["at_least_s"] for item in stuck),
                "ranks": sorted(item["rank"] for item in stuck if item.get("rank") is not None),
                "processes": len(stuck),
                "groups": groups,
            }
        )
    by_step: dict[tuple, list[dict]] = {}
    for pause in paused:
        by_step.setdefault((pause["step"], bool(pause.get("at_end"))), []).append(pause)
    pause_groups = [
        {
            "step": step,
            "at_end": at_end,
            "seconds": max(item["seconds"] for item in items),
            "ranks": sorted(item["rank"] for item in items if item.get("rank") is not None),
            "processes": len(items),
            "groups": stalls.group([item for item in items if item["where"].get("frames")]),
        }
        for (step, at_end), items in sorted(by_step.items())
    ]
    return stall_groups, pause_groups


def unexplained(spikes: list[dict], pauses: list[dict]) -> list[dict]:
    """The spikes that are not the step a pause was in (a pause's step is a spike too: said once)."""
    paused = {(pause["step"] + 1, tuple(pause["ranks"])) for pause in pauses if not pause.get("at_end")}
    return [spike for spike in spikes if (spike["step"], tuple(spike.get("ranks") or ())) not in paused]


def where_text(groups: list[dict]) -> str:
    """``rank 1 in time.sleep (train.py:25); ranks 0, 2-7 in all_reduce (train.py:42)``."""
    parts = []
    for group in groups:
        if group["ranks"]:
            who = wording.who(group["ranks"])
        else:
            who = "it was" if group["processes"] == 1 else f"{group['processes']} processes were"
        parts.append(f"{who} {stalls.place_text(group)}")
    return "; ".join(parts)


def stall_line(stall: dict) -> str:
    who = _who(stall)
    step = ("after step " if stall.get("step_exact") else "last recorded step ") + str(stall["since_step"])
    if stall.get("in_stop"):
        stopping = stall["in_stop"].get("ranks") or []
        others = [rank for rank in stall["ranks"] if rank not in stopping]
        window = wording.steps(*stall["in_stop"]["steps"])
        line = (
            f"the profiler has been stopping and exporting its window ({window}) for at least "
            f"{stall['at_least_s']:.0f} s on {wording.who(stopping) if stopping and others else who} ({step}), "
            "in the step after the window"
        )
        if others:
            line += f"; {wording.who(others)} waiting for it"
        if stall["in_stop"]["npu"]:  # torch_npu parses there unless told otherwise
            line += ": --async-mode parses beside the job, --no-analyse later (--analyse DIR)"
        return line
    return f"no step for at least {stall['at_least_s']:.0f} s on {who} ({step}): {where_text(stall['groups'])}"


def pause_line(pause: dict) -> str:
    who = _who(pause)
    if pause.get("at_end"):
        head = f"no step in the last {pause['seconds']:.0f} s before {who} ended, after step {pause['step']}"
    else:
        head = f"a pause of {pause['seconds']:.0f} s after step {pause['step']} on {who}, then stepping resumed"
    return head + (f": {where_text(pause['groups'])}" if pause["groups"] else "")


def stall_item(stall: dict) -> dict:
    """The answer's item of a stall: its ranks, its last step, how long at least, where each group was."""
    evidence = {
        "at_least_s": round(stall["at_least_s"], 1),
        "processes": stall["processes"],
        "step_exact": bool(stall.get("step_exact")),
        "where": stall["groups"],
    }
    return answer.item("stall", stall_line(stall), stall["ranks"], [stall["since_step"]], **evidence)


def pause_item(pause: dict) -> dict:
    evidence = {
        "seconds": round(pause["seconds"], 1),
        "at_end": bool(pause.get("at_end")),
        "processes": pause["processes"],
        "where": pause["groups"],
    }
    return answer.item("pause", pause_line(pause), pause["ranks"], [pause["step"]], **evidence)


def _who(item: dict) -> str:
    if item["ranks"]:
        return wording.who(item["ranks"])
    return f"{item['processes']} process" + ("es" if item["processes"] != 1 else "")


class Watcher:
    """While the job runs: read the status folder every WATCH_EVERY_S and say when processes
    stop stepping, once, then again only when the stall has doubled in length; with
    --on-slowdown, look for slowdowns too (onslowdown.Trigger)."""

    def __init__(self, output_dir: str, run_id: str, say=names.say, hangs: bool = True, slowdowns=None) -> None:
        self.output_dir = output_dir
        self.run_id = run_id
        self._say = say
        self._hangs = hangs
        #: --on-slowdown's onslowdown.Trigger, looked at every its every_s, or None.
        self._slowdowns = slowdowns
        self._slowdowns_at = 0.0
        self._stop = threading.Event()
        self._told_s = 0.0
        self._sizes: dict[str, int] = {}
        self._thread = threading.Thread(target=self._loop, name="npuprof-stall-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        launch.block_interrupts_here()
        waited = 0.0
        while not self._stop.wait(WATCH_EVERY_S):
            waited += WATCH_EVERY_S
            try:
                if self._hangs:
                    self.look()
                if self._slowdowns is not None and waited - self._slowdowns_at >= self._slowdowns.every_s:
                    self._slowdowns_at = waited
                    self._slowdowns.look()
            except Exception:  # noqa: BLE001 - a look that fails is never worth the launcher
                pass

    def look(self) -> str | None:
        """One look: the line said now, if any."""
        found = glob.glob(os.path.join(names.status_dir(self.output_dir), "*" + stalls.STACKS_SUFFIX))
        sizes = {path: _size(path) for path in found}
        if sizes == self._sizes:
            return None
        self._sizes = sizes
        records = [
            rec
            for rec in record.read_dir(self.output_dir)
            if rec.get("run_id") == self.run_id and rec.get("ended") is None
        ]
        stall_groups, _ = summarize(records, self.output_dir)
        if not stall_groups:
            self._told_s = 0.0
            return None
        stall = stall_groups[0]
        if stall["at_least_s"] < 2 * self._told_s:
            return None
        self._told_s = stall["at_least_s"]
        line = stall_line(stall)
        self._say(line)
        return line


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
