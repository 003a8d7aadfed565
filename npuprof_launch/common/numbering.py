"""How a process's steps are numbered: the job's own numbering, and where it came from.

A process counts its steps from 1 (``steps`` in the record, the schedule's ``--skip-first``). A
job resumed from a checkpoint numbers its steps on from where the checkpoint left off, and the
labels (``iteration#N``, ``ProfilerStep#N``), the record's windows and the report use the job's
numbers: the job's step is the process's step plus an *offset*, found once at the process's first
step (inprocess/resumed.py) from one of the sources below. ``--from-step`` places a window by the
job's numbers; where they are unknown it counts the process's steps, and says so.

Standard library only: both halves read it.
"""

from __future__ import annotations

#: Nothing was loaded before the first step: the job begins in this process.
FRESH = "fresh"
#: The largest step count of an optimizer state loaded before the first step (the Adam family's ``step``).
OPTIMIZER_STATE = "optimizer_state"
#: Hugging Face Trainer's ``trainer.state.global_step``.
HF_TRAINER = "hf_trainer"
#: Lightning's ``trainer.global_step``.
LIGHTNING = "lightning"
#: An optimizer state without a step count was loaded (SGD keeps none): the job's numbering is unknown.
NO_COUNT = "no_count"
#: A declared function's calls (``--target``, ``--stage``): numbered as this process calls it.
CALLS = "calls"

#: Each source in the words of the record's readers: "steps numbered by ...".
SOURCES = {
    FRESH: "this process's own count (no optimizer state was loaded before its first step: the job begins here)",
    OPTIMIZER_STATE: "the step count of the optimizer state loaded before this process's first step",
    HF_TRAINER: "the Hugging Face Trainer's trainer.state.global_step",
    LIGHTNING: "Lightning's trainer.global_step",
    NO_COUNT: (
        "this process's own count: the optimizer state it loaded keeps no step count (SGD's does not), so the "
        "job's numbering is unknown"
    ),
    CALLS: "the calls of the declared function in this process",
}
#: The sources under which the job's numbering is known (``--from-step`` counts the job's steps).
KNOWN = (FRESH, OPTIMIZER_STATE, HF_TRAINER, LIGHTNING, CALLS)


def words(source: str | None) -> str:
    """What a record's ``numbering`` says, in words."""
    return SOURCES.get(source or FRESH, str(source))


def known(source: str | None) -> bool:
    return (source or FRESH) in KNOWN
