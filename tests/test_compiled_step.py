"""The step clock under torch.compile of the whole training step, optimizer.step included.

The clock's hooks skip torch.compiler.disable in eager code (it costs more than the rest of the
hook) and use it only while dynamo traces. This holds that trade to its promise: a compiled
step is counted exactly, trains bit for bit as without the tool, and compiles no extra graph.
"""

from __future__ import annotations

import sys

from conftest import assert_ok, npuprof, python, script, status_records, step_counts

COMPILED = script("compiled_step.py")


def test_compiled_optimizer_step_is_counted_and_unchanged(out):
    bare = python([COMPILED])
    assert_ok(bare)
    result = npuprof(["--skip-first", "2", "--active", "2", "--output-dir", out, "--", sys.executable, COMPILED])
    assert_ok(result)
    assert result.stdout == bare.stdout
    assert "recompil" not in result.stderr.lower()
    assert step_counts(out) == [2]
    [record] = status_records(out)
    assert record["steps"] == 12 and record["windows_completed"] == 1
