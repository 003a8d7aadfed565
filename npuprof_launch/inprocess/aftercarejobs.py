"""The aftercare processes one session started: one per saved window, started, watched, waited for.

A window's summary, compression and move home run off the training path (aftercare.py), in a
detached process at the lowest priority. The session starts it when the window's trace is ready
and goes on at once; this part keeps those processes so that the record can say, for each window,
the steps its aftercare ran beside (stepstats.ToolSteps: those steps' times are not the job's),
and so that the process's end gives them a bounded time to finish. It also says where each file
of a window will be once its aftercare is done (home from --stage-dir, compressed with --gzip),
which is what the record names from the start. None of it is on the per-step path:
``subprocess`` and aftercare.py are imported only when a window is saved, since this code runs
in every process of the job.
"""

from __future__ import annotations

import os
import time

from npuprof_launch.common import names


class AftercareJobs:
    """The aftercare processes of the windows a session saved so far, with each window's result."""

    def __init__(self, status_path: str, output_dir: str, stage_root: str | None, note_warning) -> None:
        self._status_path = status_path
        self._output_dir = output_dir
        self._stage_root = stage_root
        self._note_warning = note_warning
        #: (process, the window's result in the record), in the order they were started.
        self.started: list[tuple] = []

    def __bool__(self) -> bool:
        return bool(self.started)

    def home_of(self, path: str, gzip: bool) -> str:
        """Where a window's file will be once its aftercare is done: home, and compressed."""
        if self._stage_root:
            path = os.path.join(self._output_dir, os.path.relpath(path, self._stage_root))
        if gzip and path.endswith(names.TORCH_TRACE_SUFFIX):
            path += ".gz"
        return path

    def start(self, paths: list[str], window: int, result: dict, *, backend, gzip: bool) -> tuple[str, int] | None:
        """Summarize, compress and move window number ``window`` (its files ``paths``) off the
        training path: a detached process at the lowest priority, started here, waited for at the
        end; returns its result file (relative to the output directory) and its pid, or None when
        there is nothing to do or it could not start (said once)."""
        from npuprof_launch.common import windowresults
        from npuprof_launch.inprocess import aftercare, groupthreads

        if not paths or not getattr(backend, "aftercare", False):
            return None
        result_file = windowresults.result_path(self._status_path, window)
        gzip_traces = bool(gzip) and backend.name == "torch"
        try:
            import subprocess

            process = subprocess.Popen(
                aftercare.command(
                    traces=list(paths),
                    result=result_file,
                    kind=backend.name,
                    gzip_traces=gzip_traces,
                    stage=self._stage_root,
                    home=self._output_dir,
                    parsed=getattr(backend, "parse_pending", False),
                    threads=groupthreads.threads(),
                ),
                env=names.without_hook(os.environ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except Exception as exc:  # noqa: BLE001 - the window is saved; only its aftercare is lost
            self._note_warning(f"the window's aftercare (summary, compression, move) could not start: {exc!r}")
            return None
        self.started.append((process, result))
        return os.path.relpath(result_file, self._output_dir), process.pid

    def note_ended(self, steps: int) -> None:
        """At a checkpoint and at the end: the windows whose aftercare has ended now record the
        last step it ran beside, ``steps`` (stepstats.ToolSteps: those steps' times are not the job's)."""
        for process, result in self.started:
            care = result.get("aftercare_steps")
            if care and care[1] is None and process.poll() is not None:
                care[1] = steps

    def wait(self, timeout: float, steps: int) -> None:
        """At the end: give the windows' aftercare a bounded time to finish (moves, compression)."""
        deadline = time.monotonic() + timeout
        for process, _ in self.started:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except Exception:  # noqa: BLE001 - a slow one goes on alone; the report names what is left
                pass
        self.note_ended(steps)
