"""Opening the session of a process (or of one stage in it), from the environment the launcher set.

Everything that can go wrong before the first step is decided here, once, so the session itself
only ever deals with steps: a bad option value, an output directory that cannot be written, a rank
outside ``--ranks``. Each gives a session that is off: it says why (one ``npuprof:`` line, and its
record where it can be written) and counts nothing, and the job runs unprofiled. hook.py reaches
this, at a clock's first step.
"""

from __future__ import annotations

import os

from npuprof_launch.common import names, options
from npuprof_launch.inprocess.session import Session


def writable_problem(path: str) -> str | None:
    """Why ``path`` could not be created or written, or None; creates nothing."""
    probe = path
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        return f"{probe} is not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


def open_session(environ, *, lifecycle, points, say, armed_ns: int, stage_text: str | None = None) -> Session:
    """The session of this process (or of one stage), from the environment.

    A bad value, an unusable output directory or a rank outside ``--ranks`` gives a session that
    is off: it says why (once, and in its record where it can) and counts nothing.
    """
    from npuprof_launch.common import stages
    from npuprof_launch.inprocess import process

    config, problems = options.resolve({}, environ)
    stage = None
    if stage_text is not None:
        if not problems:
            config = config.with_values(options.stage_overrides(stage_text))
        stage = stages.split(stage_text)[0]
    rank, rank_source = process.rank(environ)
    output_dir = names.resolve_output_dir(config.output_dir, environ)
    session = Session(
        config=config,
        output_dir=output_dir,
        rank=rank,
        rank_source=rank_source,
        environ=environ,
        lifecycle=lifecycle,
        points=points,
        say=say,
        stage=stage,
    )
    if problems:
        for problem in problems:
            say(f"{problem}; this process runs unprofiled")
        session.turn_off("bad options: " + "; ".join(problems), write=False)
        return session
    unwritable = writable_problem(output_dir)
    if unwritable:
        say(f"{names.OUTPUT_DIR_VAR}={config.output_dir!r}: {unwritable}; this process runs unprofiled")
        session.turn_off(f"output directory unusable: {unwritable}", write=False)
        return session
    lifecycle.add(session)
    if stage is None:
        session.go_on_from(lifecycle.steps_before_exec(environ))
    for warning in options.unknown_variables(environ):
        session.note_warning(warning)
    if config.ranks is not None and (rank or 0) not in config.ranks:
        source = f" (from {rank_source})" if rank_source else ""
        session.turn_off(f"rank {rank}{source} not in --ranks {options.BY_NAME['ranks'].format(config.ranks)}")
        return session
    if config.on_demand or config.on_slowdown:
        session.start_watching_requests(armed_ns or session.started_ns)
    session.write_safely()
    return session
