"""Helpers for running the real launcher with the recording torch_npu stand-in (tests/standin)."""

from __future__ import annotations

import json
import os

from jobs import ROOT, clean_env

STANDIN = os.path.join(ROOT, "tests", "standin")
RECORD_VAR = "TORCH_NPU_STANDIN_RECORD"


def standin_env(record: str, version: str = "2.14.0", npu: bool = True, **extra: str) -> dict[str, str]:
    """The test environment with the stand-in importable as torch_npu, recording into ``record``."""
    return clean_env(
        PYTHONPATH=STANDIN,
        TORCH_NPU_STANDIN_VERSION=version,
        TORCH_NPU_STANDIN_NPU="1" if npu else "0",
        **{RECORD_VAR: record},
        **extra,
    )


def calls(record: str, name: str | None = None) -> list[dict]:
    """Every call the stand-in recorded (or only those to ``name``), in order."""
    if not os.path.exists(record):
        return []
    with open(record) as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
    return [line for line in lines if name is None or line["call"] == name]


def only(record: str, name: str) -> dict:
    """The one call to ``name``; fails when there were none or several."""
    found = calls(record, name)
    assert len(found) == 1, f"expected exactly one {name} call, got {len(found)}: {found}"
    return found[0]
