"""The README's options table is generated from the options table: it must not be stale."""

import os

from conftest import ROOT

from npuprof_launch import readme


def test_readme_options_table_is_current():
    with open(os.path.join(ROOT, "README.md")) as handle:
        text = handle.read()
    assert readme.options_table() in text, "README table is stale: run python -m npuprof_launch.readme"


def test_ci_runs_the_readme_test_command():
    with open(os.path.join(ROOT, "README.md")) as handle:
        text = handle.read()
    with open(os.path.join(ROOT, ".ci", "run")) as handle:
        ci = handle.read()
    command = ".venv/bin/python -m pytest -q"
    assert f"    {command}\n" in text and command in ci
