"""A job profiled against the same job run bare: the tool must leave the job's output unchanged.

``profiled_against_bare`` runs the job without the launcher (``jobs.bare_run``: once per suite for
the same command, folder and environment), then under it, and holds the profiled run to the bare
one on the parts a test names: ``"stdout"``, ``"stderr"`` or ``"returncode"`` whole, ``(stream,
view)`` for what ``view`` makes of each (the ranks' result lines, the job's stderr without the
launcher's lines), or ``Kept(stream, view)`` where the profiled run must keep each of the bare
run's items and may add its own. A part that differs fails the test with a diff of the two. The
views several test files use are here; a test's own view stays in its file."""

from __future__ import annotations

import difflib
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable, Union

from jobs import PYTHON, bare_run, npuprof

STREAMS = ("stdout", "stderr", "returncode")


@dataclass(frozen=True)
class Kept:
    """The profiled run keeps each item of the bare run's ``view(stream)`` (a list) and may add
    items of its own: the bare job's warnings are all there, beside any the profiler's import adds."""

    stream: str
    view: Callable[[Any], list]


#: One part of the two runs to hold equal: a stream whole, ``(stream, view)``, or ``Kept(stream, view)``.
Part = Union[str, tuple, Kept]


@dataclass(frozen=True)
class Runs:
    """The two runs of one comparison, and the output directory of the profiled one."""

    bare: subprocess.CompletedProcess
    profiled: subprocess.CompletedProcess
    out: str | None

    def assert_same(self, *parts: Part) -> None:
        """Fail with a diff where a part differs: what ``compare`` does, for the tests that share
        one pair of runs and each hold it to a part of its own."""
        for part in parts:
            _assert_same(part, self.bare, self.profiled)


def profiled_against_bare(
    job: Sequence[str],
    options: Sequence[str] = (),
    *,
    out: str | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    timeout: float = 300,
    compare: Sequence[Part] = ("stdout",),
    ok: bool = True,
    bare_job: Sequence[str] | None = None,
    bare_env: dict[str, str] | None = None,
    bare_cwd: str | None = None,
    profiled: Callable[[], subprocess.CompletedProcess] | None = None,
) -> Runs:
    """Run ``python JOB`` bare, then ``npuprof-run OPTIONS --output-dir OUT -- python JOB``, and
    assert that the parts named in ``compare`` are the same in both (the default: stdout, whole).

    ``job`` is what follows the interpreter (``[script, *args]``, ``["-c", code]``, ``["-m",
    "torch.distributed.run", ...]``). ``out`` is added to ``options`` as ``--output-dir``; without
    it, the ``--output-dir`` that ``options`` already hold (where a test wants it elsewhere in the
    command line) is the one returned. ``env`` and ``cwd`` apply to both runs (a clean environment
    without ``env``); ``bare_job``, ``bare_env`` and ``bare_cwd`` give the bare run its own, where
    the test compares against another command or environment (the same job without the NPU
    stand-in on its path, the same results from fewer data-loader workers). ``ok``: both runs must
    exit 0, checked before any comparison (the bare run before the profiled one starts);
    ``compare=()`` compares nothing yet, for runs that several tests share and each compare with
    ``Runs.assert_same``.
    ``profiled`` makes the profiled run instead of the launcher with ``options``: the job started
    through the hook's variables alone, a server triggered while it runs, a process under a limit.
    Returns both runs and ``out``, for the test's further assertions on the profiled run."""
    bare = bare_run(
        list(job if bare_job is None else bare_job),
        cwd=cwd if bare_cwd is None else bare_cwd,
        env=env if bare_env is None else bare_env,
        timeout=timeout,
    )
    if ok:
        _assert_exited_0("bare", bare)
    if profiled is None:
        options = list(options)
        if out is not None:
            options += ["--output-dir", out]
        elif "--output-dir" in options:
            out = options[options.index("--output-dir") + 1]
        result = npuprof([*options, "--", PYTHON, *job], cwd=cwd, env=env, timeout=timeout)
    else:
        assert not options, "options are the launcher's: a test that makes its own profiled run gives none"
        result = profiled()
    if ok:
        _assert_exited_0("profiled", result)
    runs = Runs(bare, result, out)
    runs.assert_same(*compare)
    return runs


def _assert_exited_0(which: str, result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, (
        f"the {which} run exited {result.returncode}: {_command(result)}\n"
        f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    )


def _assert_same(part: Part, bare: subprocess.CompletedProcess, profiled: subprocess.CompletedProcess) -> None:
    kept = isinstance(part, Kept)
    if isinstance(part, str):
        stream, view = part, None
    elif kept:
        stream, view = part.stream, part.view
    else:
        stream, view = part
    assert stream in STREAMS, f"no such part of a run: {stream!r} (one of {STREAMS})"
    seen = [getattr(run, stream) for run in (bare, profiled)]
    if view is not None:
        seen = [view(value) for value in seen]
    what = f"{stream} ({getattr(view, '__name__', 'its view')})" if view is not None else stream
    if kept:
        missing = [item for item in seen[0] if item not in seen[1]]
        assert not missing, (
            f"the profiled run's {what} lacks what the bare run's holds:\n"
            + "\n".join(map(str, missing))
            + f"\nprofiled's {what}:\n"
            + "\n".join(_lines(seen[1]))
            + ("" if stream == "stderr" else _stderr_tail(profiled))
        )
        return
    if seen[0] == seen[1]:
        return
    diff = "\n".join(difflib.unified_diff(_lines(seen[0]), _lines(seen[1]), "bare", "profiled", lineterm=""))
    raise AssertionError(
        f"the job's {what} differs profiled from bare: {_command(profiled)}\n{diff}"
        + ("" if stream == "stderr" else _stderr_tail(profiled))
    )


def _lines(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines()
    if isinstance(value, (list, tuple)):
        return [item if isinstance(item, str) else repr(item) for item in value]
    return [repr(value)]


def _command(result: subprocess.CompletedProcess) -> str:
    return " ".join(map(str, result.args)) if isinstance(result.args, (list, tuple)) else str(result.args)


def _stderr_tail(result: subprocess.CompletedProcess) -> str:
    return f"\nprofiled stderr (its end):\n{(result.stderr or '')[-3000:]}"


# -- views that several test files compare through ------------------------------------------------


def rank_lines(stdout: str) -> list[str]:
    """The job's own result lines, one per rank, in rank order (the ranks print concurrently)."""
    return sorted(line for line in stdout.splitlines() if line.startswith("rank "))


def sorted_lines(stdout: str) -> list[str]:
    """Every non-empty line, sorted: processes that print at once interleave their lines differently
    from run to run, but each line must be there."""
    return sorted(filter(None, stdout.splitlines()))


def warning_lines(stderr: str) -> list[str]:
    """The lines that name a warning (``UserWarning: ...``), in order."""
    return [line for line in stderr.splitlines() if "Warning" in line]


def without_launcher_lines(stderr: str) -> list[str]:
    """The job's stderr without npuprof's own lines: each ``npuprof:`` line and the indented rows of
    the summary that follow one."""
    lines, in_summary = [], False
    for line in stderr.splitlines():
        if line.startswith("npuprof:"):
            in_summary = True
            continue
        if in_summary and line.startswith("  "):
            continue
        in_summary = False
        lines.append(line)
    return lines
