"""The job's answer as items: the closed table of what it can say, one item per thing said.

An item is ``{"kind", "severity", "ranks", "steps", "evidence", "text"}``: ``kind`` a key of
KINDS, whose severity it takes; ``ranks`` and ``steps`` the job's own numbers it is about;
``evidence`` the numbers, test and level it rests on; ``text`` the sentence a person reads (and a
reader of schema version 1 got). The summary, ``--check``'s exit code, the page and ``--json`` are
views of the same items; they decide on kinds and fields, never on ``text``, so a rewording never
changes a verdict and a tool reading ``--json`` never parses English.

The JSON Schema that ships beside this module (``answer.schema.json``) is written from this table
(``schema()``; tests/unit/test_answer.py holds the file to it), and docs/answer.md documents each
kind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: The shape of the report's JSON: 2 since findings and problems are items (1: sentences).
SCHEMA_VERSION = 2
SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "answer.schema.json")

#: What a user acts on: something about the job.
FINDING = "finding"
#: Why the profile is not complete: ``--check`` fails on any of these.
PROBLEM = "problem"
#: Told apart, not a finding: the tool's own work, waits for a CPU, information about the run.
NOTE = "note"
SEVERITIES = (FINDING, PROBLEM, NOTE)


@dataclass(frozen=True)
class Kind:
    name: str
    severity: str
    #: One line of what it means, for the schema and docs/answer.md.
    means: str
    #: The words that name it at the head of its line (a note told whole: --explain, the page).
    head: str = ""


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        # Findings: about the job.
        Kind("stall", FINDING, "no process stepped for a while during the run: where each one was"),
        Kind("pause", FINDING, "stepping stopped for a while and resumed (or the job ended): where each one was"),
        Kind("slowdown", FINDING, "from a step on, a rank's steps (or every rank's) took longer than before"),
        Kind("slow_rank", FINDING, "a rank whose steps take longer than the others' (per-step binomial test)"),
        Kind("waited_for_rank", FINDING, "the rank the others wait for in collectives, over the windows"),
        Kind("waited_for_in_window", FINDING, "the rank the others waited for in one profiled window"),
        Kind(
            "held_back_rank",
            FINDING,
            "a rank whose thread waits for a CPU in step after step, the others' not, and the job pays for it",
        ),
        Kind("spike", FINDING, "a step far over its rank's median, not the tool's doing nor a wait for a CPU"),
        Kind("period", FINDING, "spikes evenly spaced: what the job does every N steps"),
        Kind(
            "failed",
            FINDING,
            "a process failed (an exception, a signal, an error status): which, at which step, with what; the others",
        ),
        # Notes: told apart, information.
        Kind(
            "tool_steps",
            NOTE,
            "steps the profiler worked in (windows and their edges): left out of the findings",
            "the tool's own steps",
        ),
        Kind(
            "aftercare_steps",
            NOTE,
            "steps that ran beside the tool's compression and summary of a window",
            "beside the tool's aftercare",
        ),
        Kind(
            "record_steps",
            NOTE,
            "steps that held the tool's own record writing, with spikes only there",
            "the tool's record writing",
        ),
        Kind(
            "job_end_steps",
            NOTE,
            "the job's last step, slow on some ranks of a lockstep group only: the others' exit beside it",
            "the job's end",
        ),
        Kind(
            "cpu_wait", NOTE, "steps or a slowdown that the process's own wait for a CPU explains", "waiting for a CPU"
        ),
        Kind("no_rank_stands_out", NOTE, "why no rank was named slow: the test and what it saw", "no rank stands out"),
        Kind("slowdown_window", NOTE, "a window --on-slowdown asked for, and why"),
        Kind("slowdown_unseen", NOTE, "--on-slowdown asked for no window: the slowdown was found at the end only"),
        Kind("window_not_reached", NOTE, "a window asked for that the job ended before: not a failure"),
        Kind("windows_differ", NOTE, "the ranks' windows cover different steps"),
        Kind("window_moved_on", NOTE, "a window cut by os.exec before any step, recorded by the new image"),
        Kind(
            "rpc_caller_only",
            NOTE,
            "a window recorded while the process ran an RPC agent: torch profiles RPC calls on the caller's side only",
        ),
        Kind("job_ended", NOTE, "how the command ended, where it did not end well and nothing else says so"),
        Kind("ended_without_handlers", NOTE, "a process ended without its exit handlers; its counts are its last"),
        Kind("traces_summarized", NOTE, "the traces were too large to read again: their summaries were used"),
        Kind(
            "handoff_differs",
            NOTE,
            "msprof-analyze on the whole output directory would read other sessions than the window handed off",
        ),
        # Problems: the profile is not complete.
        Kind("window_incomplete", PROBLEM, "a process completed fewer windows than planned, and why"),
        Kind("not_profiled", PROBLEM, "a process meant to profile declined to, and why"),
        Kind("trace_problem", PROBLEM, "a window's deliverable is missing or does not parse"),
        Kind("profiler_error", PROBLEM, "the profiler (torch.profiler, torch_npu) reported an error"),
        Kind("output_size", PROBLEM, "a window's output is larger than the tools that open it can take"),
        Kind("record_unreadable", PROBLEM, "a status record could not be read"),
        Kind("ranks_matched_nothing", PROBLEM, "--ranks named no process that stepped"),
        Kind("target_no_step", PROBLEM, "a declared function (--target, a stage) made no step in any process"),
        Kind("nothing_profiled", PROBLEM, "no process profiled: the first link of the chain that broke"),
        Kind("untracked_output", PROBLEM, "the output directory holds files of runs not recorded"),
        Kind("disk_full", PROBLEM, "the output's file system was full"),
    )
}


def item(
    kind: str,
    text: str,
    ranks: Iterable[int | None] = (),
    steps: Iterable[int] = (),
    **evidence: Any,
) -> dict[str, Any]:
    """One thing the answer says. ``evidence``: JSON numbers, strings, lists (None values are left out)."""
    return {
        "kind": kind,
        "severity": KINDS[kind].severity,
        "ranks": sorted({rank for rank in ranks if rank is not None}),
        "steps": sorted({int(step) for step in steps}),
        "evidence": {key: value for key, value in evidence.items() if value is not None},
        "text": text,
    }


def of_severity(items: Iterable[dict], severity: str) -> list[dict]:
    return [one for one in items if one["severity"] == severity]


def of_kind(items: Iterable[dict], *kinds: str) -> list[dict]:
    return [one for one in items if one["kind"] in kinds]


def texts(items: Iterable[dict]) -> list[str]:
    """The sentences, in order: what a reader of schema version 1 got."""
    return [one["text"] for one in items]


def steps_of(spans: Iterable[Iterable[int]]) -> list[int]:
    """Every step of ``[first, last]`` spans."""
    return sorted({step for first, last in spans for step in range(int(first), int(last) + 1)})


def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the report's JSON: its items from KINDS, the rest open
    (the process rows and the ``job`` object grow; they never change a field's type)."""
    kinds = sorted(KINDS)
    item_schema = {
        "type": "object",
        "required": ["kind", "severity", "ranks", "steps", "evidence", "text"],
        "additionalProperties": False,
        "properties": {
            "kind": {"enum": kinds, "description": "a key of the closed table of kinds (docs/answer.md)"},
            "severity": {"enum": list(SEVERITIES)},
            "ranks": {"type": "array", "items": {"type": "integer", "minimum": 0}},
            "steps": {"type": "array", "items": {"type": "integer"}},
            "evidence": {"type": "object"},
            "text": {"type": "string", "description": "the sentence, for a person; never parse it"},
        },
        # Each kind has one severity: a kind's severity is part of the contract.
        "allOf": [
            {
                "if": {"properties": {"kind": {"const": name}}},
                "then": {"properties": {"severity": {"const": KINDS[name].severity}}},
            }
            for name in kinds
        ],
    }

    def items_of(severity: str) -> dict:
        return {
            "type": "array",
            "items": {"allOf": [{"$ref": "#/$defs/item"}, {"properties": {"severity": {"const": severity}}}]},
        }

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://npuprof-launch/answer.schema.json",
        "title": "npuprof-run --check DIR --json",
        "type": "object",
        "required": ["schema_version", "passed", "findings", "problems", "notes", "job", "processes"],
        "properties": {
            "schema_version": {"const": SCHEMA_VERSION},
            "passed": {"type": "boolean"},
            "findings": items_of(FINDING),
            "problems": items_of(PROBLEM),
            "notes": items_of(NOTE),
            "job": {"type": "object"},
            "processes": {"type": "array", "items": {"type": "object"}},
            "handoff": {
                "description": "the NPU window laid out for msprof-analyze (handoff.py), or null",
                "type": ["object", "null"],
                "required": ["stage", "steps", "path", "command", "sessions", "left_out", "export_types"],
                "properties": {
                    "steps": {"type": "array", "items": {"type": "integer"}},
                    "path": {"type": "string"},
                    "command": {"type": "string"},
                    "sessions": {"type": "array", "items": {"type": "object", "required": ["rank", "session"]}},
                    "left_out": {"type": "array", "items": {"type": "string"}},
                    "export_types": {"type": "array", "items": {"enum": ["text", "db"]}},
                },
            },
        },
        "$defs": {
            "item": item_schema,
            "kinds": {name: {"severity": kind.severity, "description": kind.means} for name, kind in KINDS.items()},
        },
    }


def schema_text() -> str:
    """The schema file's text, as the package ships it."""
    return json.dumps(schema(), indent=1) + "\n"
