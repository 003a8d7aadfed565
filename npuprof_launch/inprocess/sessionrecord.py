"""What a session writes as its status record: the dict, built from the session as it stands.

The record (record.py holds its one schema) is what the report, ``--check``, ``--trigger`` and a
person reading the output directory see of a process, so its fields are built in one place, apart
from the session's state machine: the session only says when to write it (session.write_safely,
at its start, every window edge, its checkpoints and its end). Building it reads the session and
changes nothing, so a record written twice in a row says the same but for ``updated_ns``.
"""

from __future__ import annotations

import os
import sys
import time

from npuprof_launch.common import names, outcomes
from npuprof_launch.common.record import State, StatusRecord
from npuprof_launch.inprocess import groupthreads, steptiming


def windows_planned(session) -> int:
    """How many windows this session means to record: none when it is off, one per request taken
    when it profiles on demand, else the schedule's and those of the requests it took besides
    (--on-slowdown), less those that began in the old image of a process that re-executed itself
    (its own record holds them)."""
    if session.state == State.OFF:
        return 0
    unreached = len(outcomes.of_kind(session.outcomes, outcomes.NOT_REACHED))  # asked, the job ended first
    if session.on_demand:
        return len(session.requests) - unreached
    return len(session.schedule.windows()) - session.windows_before_exec + len(session.requests) - unreached


def to_record(session) -> StatusRecord:
    """The status record of ``session`` (a session.Session), now; copies of its lists, never them."""
    results = session.results
    window_steps = None
    if results:
        window_steps = [results[0]["first_step"], results[-1]["last_step"] or session.steps + session.step_offset]
    return {
        "host": names.host(),
        "pid": os.getpid(),
        "rank": session.rank,
        "rank_source": session.rank_source,
        "worker": session.worker,
        "run_id": session.run_id,
        "attempt": names.attempt_of_worker(session.worker),
        "argv": list(sys.argv),
        "state": session.state.value,
        "clock": session.clock_name,
        "target": session.target,
        "stage": session.stage,
        "range": bool(session.config.range),
        "on_demand": session.on_demand,
        "requests": list(session.requests),
        "backend": session.backend.name if session.backend is not None else None,
        "options": session.config.as_dict(),
        "steps": session.steps,
        "step_offset": session.step_offset,
        "numbered_by": session.numbered_by,
        "mean_step_s": steptiming.mean_step_s(session.first_time, session.times, session.steps),
        "window_steps": window_steps,
        "windows": [dict(result, traces=list(result["traces"])) for result in results],
        "schedule_steps": session.schedule.length(),
        "windows_planned": windows_planned(session),
        "windows_completed": session.windows_completed,
        "partial_traces": session.partial_traces,
        "traces": list(session.traces),
        "warnings": list(session.warnings),
        "outcomes": [dict(outcome) for outcome in session.outcomes],
        "errors": list(session.errors),
        "profiler_errors": list(session.notes.profiler_errors),
        "declined": session.declined,
        "step_times": session.step_times_file.relative_to(session.output_dir),
        "step_stats": session.step_stats,
        "checkpoint_s": [list(item) for item in session.step_times_file.checkpoints.kept],
        "cpu_wait": session.cpu_wait.record(),
        "profiler_messages": dict(session.profiler_messages),
        "started_ns": session.started_ns,
        "updated_ns": time.time_ns(),
        "ended": session.ended,
        "hang_watch": session.hang.record(session.output_dir),
        "pauses": [dict(pause) for pause in session.hang.found],
        "gloo_threads": groupthreads.threads(),
    }
