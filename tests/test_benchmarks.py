"""The overhead benchmark (benchmarks/run.py) must keep running: CI runs its quick mode.

No timing is asserted here: a shared CI machine cannot judge milliseconds. The test only holds
the benchmark to printing every figure (start-up, the step clock, the whole run, memory, --check,
a window's end, trace bytes, whole-run step times, --check of a thousand ranks), so that a change
to the hook, the launcher or the report that breaks a measurement shows up at once instead of
on the next release. Figure 6b may say "skipped: <reason>" where no slow filesystem can be
mounted (no /dev/fuse, not root).
"""

from __future__ import annotations

import os
import re

import pytest
from jobs import ROOT, clean_env, python

#: The line of each figure, in the order the benchmark prints them.
FIGURES = (
    r"machine: .+ \d+ cores.+Python \d+\.\d+.+torch ",
    r"1a\. start-up, hook on .+ [+-]\d+\.\d+ ms  \[target <= 5 ms: (met|MISSED)\]",
    r"1b\. start-up, hook dir on path, switch unset: [+-]\d+\.\d+ ms  \[target <= 1\.5 ms: (met|MISSED)\]",
    r"1c\. a process that imports torch and never steps: ",
    r"2a\. step clock outside a window: [+-]\d+\.\d+ us per optimizer\.step  \[target <= 2 us: (met|MISSED)\]",
    r" +a bare one-scalar SGD step .+control \(detached vs detached\): [+-]\d+\.\d+ \+- \d+\.\d+ us",
    r" +in a \d+\.\d+ ms training step, the same comparison: [+-]\d+\.\d+ \+- \d+\.\d+ us .+control: ",
    r"2b\. after the last window, the hooks that remain: [+-]\d+\.\d+% per training step  "
    r"\[target <= 1 %: (met|MISSED)\]",
    r" +attached vs detached in one process.+post-window against bare processes: [+-]\d+\.\d+%, bare against bare",
    r"3\. whole run through npuprof-run .+: [+-]\d+\.\d+% wall, .+\[target <= 5 %: (met|MISSED)\]",
    r"4\. peak memory \(max RSS\) outside the window: [+-]\d+\.\d+ MB",
    r"5\. --check on \d+ ranks, trace size 1x/2x/4x: .+ ratio 2x/1x \d+\.\d+, 4x/2x \d+\.\d+",
    r"6a\. window-end stall, npuprof-run \(gzip, the default\) .+: -?\d+\.\d+ s vs -?\d+\.\d+ s \(ratio -?\d+\.\d+\)  "
    r"\[target <= 1 x hand-written: (met|MISSED)\]",
    r" +a \d+\.\d+ MB trace \(\d+ recorded steps of \d+ layers, record_shapes; .+--no-gzip -?\d+\.\d+ s ",
    r"6b\. window-end stall with --stage-dir, output on slow storage: (-?\d+\.\d+ s vs -?\d+\.\d+ s .+"
    r"\[target <= 0\.5 x hand-written: (met|MISSED)\]|skipped: .+)",
    r"7\. trace bytes per recorded step: plain \d+ KB, gzip \d+ KB \(ratio \d+\.\d+\)",
    r"8\. whole-run step times \(--step-times vs --no-step-times\): [+-]\d+\.\d+ us per optimizer\.step  "
    r"\[target <= 0\.5 us: (met|MISSED)\]",
    r" +a one-scalar SGD step under the clock .+control \(off vs off\): [+-]\d+\.\d+ \+- \d+\.\d+ us",
    r"9a\. --check at \d+/\d+/\d+ ranks with step times and window summaries: .+ MB; "
    r"ratios \d+/\d+ \d+\.\d+ and \d+/\d+ \d+\.\d+ \(time\), \d+\.\d+ and \d+\.\d+ \(HTML\)",
    r"9b\. --check at \d+ ranks with window summaries, trace size 1x/4x .+ ratio 4x/1x \d+\.\d+",
    r"9c\. --check at \d+/\d+/\d+ NPU ranks, text export, with step times: .+ s CPU; ratios .+ \(linear: 2\.00\)",
    r"9d\. --check at \d+/\d+/\d+ NPU ranks, db export, with step times: .+ s CPU; ratios .+ \(linear: 2\.00\)",
    r"10\. hang watch \(on vs --hang-after 0\), at the real checkpoint interval: [+-]\d+\.\d+ us per "
    r"optimizer\.step  \[target <= 0\.2 us: (met|MISSED)\]",
    r" +a one-scalar SGD step under the clock, the watch on .+control \(off vs off\): [+-]\d+\.\d+ \+- \d+\.\d+ us",
)


#: The figures each quick run measures (4 comes with 2, 7 with 6), one run per group so that a
#: parallel suite spreads them over its workers; every figure is in one group.
GROUPS = {"1": "1", "2": "2,4", "3": "3", "5": "5", "6": "6,7", "8": "8,10", "9": "9"}


@pytest.mark.parametrize("only", sorted(GROUPS.values()))
def test_quick_benchmark_prints_every_figure(tmp_path, only):
    result = python(
        [os.path.join(ROOT, "benchmarks", "run.py"), "--quick", "--only", only],
        cwd=str(tmp_path),
        env=clean_env(),
        timeout=900,
    )
    assert result.returncode == 0, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    lines = result.stdout.splitlines()
    wanted = set(only.split(","))
    position = 0
    for figure, pattern in figure_patterns():
        if figure is not None and figure not in wanted:
            assert not any(re.match(pattern, line) for line in lines), f"{pattern!r} measured without being asked for"
            continue
        found = [i for i, line in enumerate(lines) if re.match(pattern, line)]
        assert found, f"no line matches {pattern!r} in:\n{result.stdout}"
        assert found[0] >= position, f"{pattern!r} is out of order in:\n{result.stdout}"
        position = found[0]


def figure_patterns():
    """Each pattern with the figure it belongs to ("6" for 6a, 6b and their indented lines; None: every run)."""
    figure = None
    for pattern in FIGURES:
        number = re.match(r"(\d+)", pattern)
        if number:
            figure = number.group(1)
        elif not pattern.startswith(" "):
            figure = None
        yield figure, pattern


def test_the_groups_cover_every_figure():
    figures = {figure for figure, _ in figure_patterns() if figure is not None}
    assert figures == {figure for group in GROUPS.values() for figure in group.split(",")}


def test_against_times_the_step_clock_of_each_checkout(tmp_path):
    """benchmarks/against.py, figure 2a of two checkouts side by side (this one and a link to it), keeps running."""
    twin = tmp_path / "twin"
    twin.symlink_to(ROOT)
    result = python(
        [os.path.join(ROOT, "benchmarks", "against.py"), ROOT, str(twin), "--rounds", "1", "--blocks", "3"],
        cwd=str(tmp_path),
        env=clean_env(TMPDIR=str(tmp_path)),
        timeout=300,
    )
    assert result.returncode == 0, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    figure = r"{}: [+-]\d+\.\d+ us per optimizer\.step \(control [+-]\d+\.\d+\); runs [+-]\d+\.\d+$"
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    for path, line in zip((ROOT, str(twin)), lines):
        assert re.match(figure.format(re.escape(path)), line), result.stdout
