"""The package's floors hold: the shared floor (common) imports neither wing, and the two wings,
the in-process one and the launcher's, stand side by side on it, neither importing the other (the
launcher starts the tool's own processes, an aftercare or an offline parse, by module name); no
module grows past 600 lines without a look (LOOKED_AT). Read from
the sources with ast, so a lazy import inside a function counts as much as one at the top."""

from __future__ import annotations

import ast
import os

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "npuprof_launch")
MOST_LINES = 600
#: Modules past MOST_LINES that were looked at and are one job: the ceiling each may grow to, and why
#: it stays whole. The count is a signal to look, never a target to trim to.
LOOKED_AT = {
    "inprocess/session.py": (
        720,
        "the per-step state machine of one process and its window's profiler (start, step, stop, "
        "fail) in one place; what decides nothing at a step is in parts beside it (2026-12-05; 720 "
        "for the stop's nesting around the calls that stop, whose record is windowstop.py's)",
    ),
}
#: Each floor and the parts of the package it must never import.
APART = {"common": ("inprocess", "launcher"), "inprocess": ("launcher",), "launcher": ("inprocess",)}


def modules():
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def imported(path: str) -> set[str]:
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_module_is_longer_than_600_lines_unless_looked_at():
    long = {}
    for path in modules():
        with open(path) as handle:
            lines = sum(1 for _ in handle)
        name = os.path.relpath(path, PACKAGE)
        if lines > LOOKED_AT.get(name, (MOST_LINES,))[0]:
            long[name] = lines
    assert not long, f"look at these (past {MOST_LINES} lines: split by job, or say in LOOKED_AT why not): {long}"


def test_no_import_runs_back_up_a_floor_or_across_the_wings():
    found = []
    for path in modules():
        floor = os.path.relpath(path, PACKAGE).split(os.sep)[0]
        for apart in APART.get(floor, ()):
            found += [(path, name) for name in imported(path) if name.startswith(f"npuprof_launch.{apart}")]
    assert found == []
    assert any(
        name.startswith("npuprof_launch.common") for name in imported(os.path.join(PACKAGE, "inprocess", "session.py"))
    )
