"""The iteration rules, driven in-process: each pattern a job really runs, as a stream of optimizer steps."""

from __future__ import annotations

import pytest

from npuprof_launch.inprocess.iterations import Iterations


def count(steps: str, forget: dict[int, str] | None = None) -> tuple[int, list[int]]:
    """Feed optimizer names, one letter a step; returns the count and the count after each step."""
    it = Iterations()
    after = []
    for index, key in enumerate(steps.replace(" ", "")):
        if forget and index in forget:
            it.forget(forget[index])
        it.step(key)
        after.append(it.count)
    return it.count, after


@pytest.mark.parametrize(
    ("steps", "iterations"),
    [
        ("AAAAAA", 6),
        ("DG DG DG DG", 4),  # a GAN: both optimizers once an iteration
        ("GD GD GD", 3),
        ("DG G G G DG G G G", 8),  # a discriminator every 4th iteration
        ("abcd abcd abcd", 3),  # one optimizer per parameter, stepped from backward
        ("AAAAA BBBBB", 10),  # two phases, the first optimizer kept alive
        ("AAA AB AB AB", 6),  # a second optimizer joins at iteration 4
    ],
    ids=["one", "gan", "gan-other-order", "every-4th", "per-parameter", "phases", "late-join"],
)
def test_one_iteration_is_one_step(steps, iterations):
    assert count(steps)[0] == iterations


def test_boundaries_fall_where_the_iteration_ends():
    # After the first iteration, the boundary comes with the last optimizer of the iteration.
    _, after = count("DG DG DG")
    assert after == [1, 1, 1, 2, 2, 3]
    _, after = count("abc abc")
    assert after == [1, 1, 1, 1, 1, 2]


def test_a_new_phase_counts_from_its_first_step():
    _, after = count("AAA BBB")
    assert after == [1, 2, 3, 4, 5, 6]


def test_a_joining_optimizer_is_taken_back_at_once():
    _, after = count("AA AB AB")
    assert after == [1, 2, 3, 4, 3, 4]


def test_a_freed_optimizer_makes_room_for_a_new_one_each_epoch():
    # Epochs of 2 iterations, a new optimizer each epoch and the old one freed.
    assert count("AA BB CC", forget={2: "A", 4: "B"})[0] == 6
    # A new optimizer each iteration, the old one freed first.
    assert count("ABCD", forget={1: "A", 2: "B", 3: "C"})[0] == 4


def test_a_repeat_before_the_closer_ends_the_iteration_late():
    # G stepped first in iteration 1 and D joined it; from iteration 2 on only G steps: the
    # boundary that D would have closed is found when G repeats.
    _, after = count("GD G G G")
    assert after[-1] == 4


def test_the_sole_optimizer_is_known_after_two_steps():
    it = Iterations()
    it.step("A")
    assert it.sole() is None
    it.step("A")
    assert it.sole() == "A"
    gan = Iterations()
    for key in "DGDG":
        gan.step(key)
    assert gan.sole() is None
