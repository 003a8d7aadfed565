"""Why a rank the collectives' test picked is no finding (collectives.judge's ``why_not``), in
words: the answer's "no rank stands out" tells each (lockstep.py). Apart from the statistics, so
that each reason's sentence sits beside the others."""

from __future__ import annotations

from typing import Any

from npuprof_launch.launcher import collectives


def text(found: dict[str, Any]) -> str:
    """Why a rank that passed the test is no finding (its ``why_not``), in words."""
    why, wait_ms = found["why_not"], found["wait_per_step_s"] * 1e3
    if why == collectives.ONE_STEP:
        return f"more often than chance in {found['steps_last_often']} of its steps only"
    if why == collectives.ONE_STRETCH:
        (first, of_first), (second, of_second) = found["halves_last_in"]
        return (
            f"in one stretch of it only ({first} of {of_first} rounds in its first half, {second} of {of_second} in "
            "its second): a rank held back for a while, not one whose work is slower"
        )
    if why == collectives.WAITED:
        return (
            f"it waited itself {found['waited_elsewhere_s'] * 1e3:.1f} ms a step in other collectives (most in "
            f"{found['waited_in']}), where the others waited {wait_ms:.1f} ms a step longer for it: late because it "
            "waited for another rank"
        )
    if why == collectives.HELD:
        ran = "" if found["ran_ratio"] is None else f" and ran {found['ran_ratio']:.2f}x their time on one"
        return (
            f"its stepping thread waited for a CPU {found['cpu_excess_per_step_s'] * 1e3:.1f} ms a step past the "
            f"others of its group ({found['cpu_wait_ratio']:.1f}x their wait{ran}), where they waited {wait_ms:.1f} "
            "ms a step for it: the machine held it back, not its work"
        )
    if why == collectives.AS_THEY_WERE:
        (rounds, of_rounds), (steps, of_steps) = found["as_they_were"]
        return (
            f"with no rank's wait for a CPU or another rank taken off, the rounds waited for it in {rounds} of "
            f"{of_rounds} and each step's widest in {steps} of {of_steps}, no more often than chance: the others' "
            "waits made it look late"
        )
    return f"the others waited {wait_ms:.2f} ms a step longer, under 1 ms"
