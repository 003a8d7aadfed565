"""The README as a newcomer meets it: its generated tables are current, CI runs its test command,
and every example of it that runs on one machine runs as written and profiles."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, clean_env

from npuprof_launch.launcher import readme


def readme_text() -> str:
    with open(os.path.join(ROOT, "README.md")) as handle:
        return handle.read()


def test_readme_options_table_is_current():
    assert readme.options_table() in readme_text(), (
        "README table is stale: run python -m npuprof_launch.launcher.readme"
    )


def test_ci_runs_the_readme_test_command():
    with open(os.path.join(ROOT, ".ci", "run")) as handle:
        ci = handle.read()
    command = ".venv/bin/python -m pytest -q"
    assert f"    {command}\n" in readme_text() and command in ci


def examples() -> list[str]:
    """Every command of the README's code blocks that runs one of examples/ (continuation lines
    joined); of the set-up line, the part after the installs. The others need a cluster, a job of
    the reader's or a running job to talk to, and have tests of their own."""
    found, pending = [], ""
    for line in readme_text().splitlines():
        if not line.startswith("    "):
            pending = ""
            continue
        pending += line.strip()
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        command, pending = pending.split(" && ")[-1], ""
        if "examples/" in command and command.startswith(("npuprof-run ", "bash ", ".venv/bin/npuprof-run ")):
            found.append(command)
    return found


def test_the_readme_has_runnable_examples():
    commands = examples()
    assert len(commands) >= 5, commands
    assert any("stragglers.py" in c for c in commands) and any(c.startswith(".venv/bin/") for c in commands)


@pytest.mark.parametrize("command", examples())
def test_each_readme_example_runs_as_written(command, tmp_path):
    """In a fresh directory holding the examples, with the environment activated as the README
    says (`. .venv/bin/activate`): the example exits 0, its summary (or its --check) passes."""
    shutil.copytree(os.path.join(ROOT, "examples"), tmp_path / "examples")
    venv = sys.prefix
    os.symlink(venv, tmp_path / ".venv")
    env = clean_env(VIRTUAL_ENV=venv, PATH=os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"])
    result = subprocess.run(
        ["bash", "-c", command], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"{command}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "command not found" not in result.stderr and "No module named" not in result.stderr
    where = re.search(r"windows complete; output in (\S+)", result.stderr)
    out = where.group(1) if where else str(tmp_path / "examples" / "npuprof_output")  # env_export.sh: no summary
    assert "open a trace" in result.stderr or not where, result.stderr
    check = subprocess.run(
        [os.path.join(venv, "bin", "npuprof-run"), "--check", out], env=env, capture_output=True, text=True
    )
    assert check.returncode == 0, f"{command}: --check {out}\n{check.stdout}\n{check.stderr}"
