"""The three scenarios, each with its step clock, its way of controlling collection and its defaults.

The field's rule for adapting the profiler by hand: once a job is called training, inference or reinforcement
learning, every default and the way collection is controlled come from that scenario's reference
implementation, and are never mixed with another's. This table is the one place that says what
each scenario means; ``options.resolve`` reads its defaults (a flag or variable still wins), the
consistency rules read its clock, and the scenario table of docs/scenarios.md is generated from it.

Standard library only: the hook reads it when it resolves the options, once torch is imported.
"""

from __future__ import annotations

from typing import NamedTuple


class Scenario(NamedTuple):
    """One scenario: what a step is, how collection is controlled, and the defaults it fixes."""

    name: str
    #: What one step is, in the words the docs and the error messages use.
    clock: str
    #: How windows are chosen and who may start or stop them.
    control: str
    #: Option name -> value (parsed form, as options.Option.parse returns it) over the table's defaults.
    defaults: dict
    #: The public implementation the defaults come from (MindSpeed-LLM, vLLM-Ascend, verl), named in docs/scenarios.md.
    reference: str


SCENARIOS: dict[str, Scenario] = {
    "train": Scenario(
        "train",
        "one training iteration: each `optimizer.step` (several optimizers in one iteration count once), "
        "or each call of `--target`",
        "schedule windows over the steps: `skip_first`, then `repeat` x (`wait`, `warmup`, `active`)",
        {},
        "MindSpeed-LLM",
    ),
    "infer": Scenario(
        "infer",
        "each call of `--target` (required), the function that runs the model once, e.g. a vLLM worker's "
        "`execute_model`: API-server and scheduler processes never call it, so they never profile",
        "schedule windows over the calls of `--target`",
        {"level": "level1", "with-modules": True},
        "vLLM-Ascend",
    ),
    "rl": Scenario(
        "rl",
        "per stage, each call of that stage's function, declared with `--stage NAME=MOD:QUALNAME` (repeatable)",
        "each stage on its own: its own step selection, its own output `OUT/NAME`; by default each chosen call "
        "is recorded from entry to return as its own window (`--range`); stages in one process take turns "
        "with its one profiler, and no stage starts, steps or stops another's",
        {"range": True, "export-type": ("db",), "mstx": True},
        "verl (discrete mode)",
    ),
}

DEFAULT = "train"
NAMES: tuple[str, ...] = tuple(SCENARIOS)


def defaults(name: str) -> dict:
    """The option values scenario ``name`` fixes (an unknown name fixes none)."""
    scenario = SCENARIOS.get(name)
    return scenario.defaults if scenario is not None else {}
