"""The suite's own layout: pytest imports test files without packages by their base name, so a
file in tests/unit named like one in tests/ stops the whole collection ('import file mismatch')."""

from __future__ import annotations

import os

HERE = os.path.dirname(os.path.abspath(__file__))


def test_no_unit_test_file_shares_a_name_with_another_test_file():
    unit = {name for name in os.listdir(HERE) if name.startswith("test_") and name.endswith(".py")}
    outer = {name for name in os.listdir(os.path.dirname(HERE)) if name.startswith("test_") and name.endswith(".py")}
    assert not unit & outer, f"rename one of each: {sorted(unit & outer)}"
