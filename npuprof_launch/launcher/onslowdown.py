"""--on-slowdown: the live trigger that asks every process for a window in a slowdown's slow steps
while the job runs, and what the report says of what it asked for. The slowdown is slowdowns.py's
(``judged``): one judge for the live trigger and the end's answer, so they agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npuprof_launch.launcher import answer
from npuprof_launch.launcher.slowdowns import group, judged, text

if TYPE_CHECKING:
    from npuprof_launch.common.record import ReadRecord

#: The items that tell what --on-slowdown asked for while the job ran.
ASKED = ("slowdown_window", "window_not_reached")


def unseen_item(slowdown: dict) -> dict:
    """The note that ``--on-slowdown`` asked for no window though the end's answer holds a slowdown:
    the step times reach the launcher at the processes' checkpoints only, so a slowdown late in a
    short run is seen in the whole run's times at the end (a server's from call 35 of 60, its step
    times written at calls 32 and 64: said nothing, 2026-12-05)."""
    line = (
        f"--on-slowdown asked for no window: the slowdown from step {slowdown['step']:,} was found in the whole "
        "run's step times at the end; while the job ran, the launcher looked every 4 s at the step times the "
        "processes wrote at their checkpoints (steps 1, 2, 4, ... 64, then every 5 s), and it was not found "
        "before the job ended"
    )
    return answer.item("slowdown_unseen", line, slowdown["ranks"], [slowdown["step"]])


def asked_windows(processes: list[dict], records: list[ReadRecord]) -> list[dict]:
    """One line per window that --on-slowdown asked for (the same steps on every rank: one line),
    and one per window a request asked for that the job ended before (outcomes.NOT_REACHED: told,
    not a failure). A window that began and recorded no whole step before the job ended says so."""
    from npuprof_launch.common import outcomes

    asked = {
        (window["first_step"], window.get("last_step"), window["reason"])
        for process in processes
        for window in process.get("windows") or ()
        if window.get("reason")
    }
    told = []
    for first, last, reason in sorted(asked, key=str):
        if last is None:
            text = (
                f"the window from step {first} was asked for by --on-slowdown ({reason}); "
                "the job ended before it recorded a step"
            )
        else:
            text = f"the window on steps {first}-{last} was asked for by --on-slowdown: {reason}"
        steps = range(first, (last if last is not None else first) + 1)
        told.append(answer.item("slowdown_window", text, steps=steps, reason=reason))
    unreached: dict[str, dict] = {}
    for found in records:
        for outcome in outcomes.of_kind(outcomes.of_record(found), outcomes.NOT_REACHED):
            sentence = outcomes.sentence(outcome)
            if sentence not in unreached:
                fields = {key: value for key, value in outcome.items() if key != "kind"}
                steps = range(outcome["first"], outcome["last"] + 1)
                unreached[sentence] = answer.item("window_not_reached", sentence, steps=steps, **fields)
            if found.get("rank") is not None:  # the ranks it was asked of
                unreached[sentence]["ranks"] = sorted({*unreached[sentence]["ranks"], found["rank"]})
    return told + [unreached[sentence] for sentence in sorted(unreached)]


#: How many of a process's last steps tell its step time now (Trigger: where it will be).
RECENT_STEPS = 8


class Trigger:
    """``--on-slowdown N``: while the job runs, find a slowdown in the step times the processes
    write at their checkpoints, and ask every process for one on-demand window in the slow regime
    (the aligned request of ``--trigger``: a step none has reached), up to N times, each for a
    slowdown that began after the last one asked for."""

    #: Seconds between looks: the step times come at the processes' checkpoints, every few seconds.
    every_s = 4.0

    def __init__(self, output_dir: str, run_id: str, times: int, active: int, warmup: int, say) -> None:
        self.output_dir = output_dir
        self.run_id = run_id
        self.left = times
        self.times = times
        self.active = active
        self.warmup = warmup
        self._say = say
        self._sizes: dict[str, int] = {}
        self._asked_after = 0

    def look(self) -> dict | None:
        """One look: the request written now, if any."""
        import os

        from npuprof_launch.common import ondemand, record, stepstats, steptimes

        if self.left <= 0:
            return None
        running = [
            rec
            for rec in record.read_dir(self.output_dir)
            if rec.get("run_id") == self.run_id and not rec.get("ended") and rec.get("step_times")
        ]
        found = []
        recent: dict[str | None, float | None] = {}
        for rec in running:
            path = os.path.join(self.output_dir, rec["step_times"] or "")
            size = os.path.getsize(path) if os.path.exists(path) else 0
            if size == self._sizes.get(path):
                continue
            self._sizes[path] = size
            durations = steptimes.read(path)
            if len(durations):
                recent[rec["step_times"]] = stepstats.quantile(sorted(durations[-RECENT_STEPS:]), 0.5)
            slow = judged(durations, rec.get("windows"), rec.get("cpu_wait"))
            if slow and "cpu_wait_s" not in slow and slow["step"] > self._asked_after and slow["to_end"]:
                found.append({**slow, "rank": rec.get("rank")})  # its own wait for a CPU explains none of it
        if not found:
            return None
        (slowdown,) = group(found, len(running))[:1]
        # Where each process is now, from its step time since the slowdown, not its whole run's
        # mean (shorter: a window asked at step 162 of a 120-step job, 60 ms steps after 20 ms ones).
        start = ondemand.common_start(
            [{**rec, "mean_step_s": recent.get(rec["step_times"], rec.get("mean_step_s"))} for rec in running]
        )
        reason = text(slowdown)
        request = ondemand.write_request(
            self.output_dir, self.active, self.warmup, 0, None, start_step=start, reason=reason
        )
        self.left -= 1
        self._asked_after = max(item["step"] for item in found)
        where = f"at step {start}" if start else "at its next step"
        self._say(
            f"{reason}: every process was asked for a window of {self.active} steps {where} "
            f"(--on-slowdown, {self.times - self.left} of {self.times})"
        )
        return request
