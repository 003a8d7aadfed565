"""The job's answer as the tests read it: ``--check OUT --json``, validated against the schema the
package ships, and the parts a failing assertion prints."""

from __future__ import annotations

import json

from jobs import npuprof
from suggestions import accepted


def check_json(out: str, *extra: str) -> tuple[int, dict]:
    """``--check OUT --json`` (and ``extra`` arguments): its exit status and report, valid against
    the schema the package ships; every command the report suggests must be one the tool accepts."""
    result = npuprof(["--check", out, "--json", *extra])
    report = answer_json(result.stdout)
    for suggestion in report["job"]["suggestions"]:
        accepted(suggestion)
    return result.returncode, report


def answer_json(text: str) -> dict:
    """The report ``--check DIR --json`` printed, after validating it against answer.schema.json
    (every JSON the suite makes is held to the schema a tool reading it relies on)."""
    import jsonschema

    from npuprof_launch.launcher import answer

    report = json.loads(text)
    with open(answer.SCHEMA_FILE) as handle:
        jsonschema.validate(report, json.load(handle))
    return report


def texts(items: list[dict]) -> list[str]:
    """The sentences of the answer's items (findings, problems, notes), for a failing assertion's message
    and for the few tests that hold the words themselves."""
    return [item["text"] for item in items]


def slow_rank_evidence(report: dict) -> dict:
    """What a slow-rank assertion prints when it fails: the verdict and reason, and each rank's time
    in collectives, window and median step, and its stepping thread's median time ran and waited for
    a CPU a step (the numbers the lockstep rules judged)."""
    waits = {
        process.get("rank"): [process.get(key) for key in ("collective_s", "window_s", "median_step_s")]
        + [median_ms((process.get("cpu_wait") or {}).get(reading) or []) for reading in ("ran", "waited")]
        for process in report["processes"]
    }
    return {"verdict": report["job"].get("slow_rank_verdict"), "found": report["job"]["slow_ranks"], "waits": waits}


def median_ms(pairs: list) -> float | None:
    """The median of ``[step, seconds]`` readings, in ms."""
    values = sorted(seconds for _, seconds in pairs)
    return round(values[len(values) // 2] * 1e3, 2) if values else None
