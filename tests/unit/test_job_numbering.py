"""A resumed job's numbering, in-process: where the offset comes from (resumed.py), how --from-step
places windows by it (schedule.placed, the session), and what the record and the summary say. The
real jobs run in tests/test_resumed.py."""

from __future__ import annotations

import sys

import pytest
from test_session import Points, session, steps

from npuprof_launch.common import numbering, options, outcomes, stepstats
from npuprof_launch.common.schedule import Schedule, Window, placed
from npuprof_launch.inprocess import resumed
from npuprof_launch.launcher import summary


class Labels(Points):
    """Safe everywhere; keeps the names of the labels the session opens."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def open_label(self, name: str):
        self.opened.append(name)
        return name


@pytest.fixture
def loads(monkeypatch):
    """A process that has loaded nothing yet."""
    fresh = resumed._Loads()
    monkeypatch.setattr(resumed, "_loads", fresh)
    return fresh


# -- where the offset comes from ------------------------------------------------------------------


class Step:
    """A step count as torch keeps it: a one-element tensor."""

    def __init__(self, value: float) -> None:
        self.value = value

    def item(self) -> float:
        return self.value


def test_an_adam_state_gives_its_largest_step_count_and_sgds_none():
    adam = {"state": {0: {"step": Step(5.0), "exp_avg": None}, 1: {"step": 4}}, "param_groups": []}
    assert resumed.step_count(adam) == 5
    assert resumed.step_count({"state": {0: {"momentum_buffer": None}}, "param_groups": []}) is None
    assert resumed.step_count({"state": {}, "param_groups": []}) is None


def test_the_sources_in_order_framework_then_loaded_count_then_unknown_then_fresh(loads):
    assert resumed.job_numbering() == (0, numbering.FRESH)
    resumed.note_loaded(None)
    assert resumed.job_numbering() == (0, numbering.NO_COUNT)
    resumed.note_loaded(5)
    resumed.note_loaded(3)  # a second optimizer (a GAN's), stepped less often
    assert resumed.job_numbering() == (5, numbering.OPTIMIZER_STATE)

    Trainer = type("Trainer", (), {"__module__": "transformers.trainer"})
    trainer = Trainer()
    trainer.state = type("State", (), {"global_step": 4})()

    def inner_training_loop(self):
        return resumed.job_numbering()

    assert inner_training_loop(trainer) == (4, numbering.HF_TRAINER)


def test_a_lightning_trainer_subclass_is_found_by_its_base_and_another_trainer_is_not():
    Base = type("Trainer", (), {"__module__": "lightning.pytorch.trainer.trainer", "global_step": 7})
    Mine = type("MyTrainer", (Base,), {"__module__": "__main__"})
    Other = type("Trainer", (), {"__module__": "mylib.trainer", "global_step": 9})

    def fit(self):
        return resumed.framework_count(sys._getframe())

    assert fit(Mine()) == (7, numbering.LIGHTNING)
    assert fit(Other()) is None


# -- where --from-step puts the windows -------------------------------------------------------------


def test_placed_moves_the_windows_together_and_tells_those_already_passed():
    windows = Schedule(wait=3, active=2, repeat=2).windows()  # records 4-5 and 9-10 from step 1
    kept, passed = placed(windows, 4)
    assert (kept, passed) == (list(windows), [])
    kept, passed = placed(windows, -1)  # the job's step 4 when this process began at the job's step 6
    assert [(w.first_recorded, w.last) for w in passed] == [(-1, 0)]
    assert [(w.first_recorded, w.last) for w in kept] == [(4, 5)]


def test_a_warmup_that_would_begin_before_step_one_is_shortened():
    kept, passed = placed(Schedule(warmup=3, active=1).windows(), 2)
    assert kept == [Window(1, 1, 1)] and passed == []


# -- the session: labels, record, outcomes ----------------------------------------------------------


def test_a_resumed_session_numbers_its_window_as_the_job_and_skips_as_the_process(tmp_path):
    points = Labels()
    made, backend = session(tmp_path, points=points, **{"skip-first": 1, "active": 2})
    made.number_from(5, numbering.OPTIMIZER_STATE)
    steps(made, 3)
    assert backend.calls[0] == ("build", 7, 0, 2), "ProfilerStep# counts from the job's step 7"
    assert points.opened == ["iteration#7", "iteration#8"]
    assert (made.results[0]["first_step"], made.results[0]["last_step"]) == (7, 8)
    record = made.to_record()
    assert record["steps"] == 3 and record["step_offset"] == 5 and record["numbered_by"] == "optimizer_state"
    assert record["window_steps"] == [7, 8]


def test_a_window_cut_short_in_a_resumed_job_keeps_the_jobs_steps(tmp_path):
    made, _ = session(tmp_path, **{"skip-first": 1, "active": 5})
    made.number_from(10, numbering.HF_TRAINER)
    steps(made, 3)
    made.flush("SIGTERM")
    assert (made.results[0]["first_step"], made.results[0]["last_step"]) == (12, 13)
    (cut,) = outcomes.of_kind(made.outcomes, outcomes.CUT_SHORT)
    assert cut["step"] == 13 and cut["kept"] == [12, 13]


def test_from_step_places_the_window_at_the_jobs_step(tmp_path):
    made, backend = session(tmp_path, **{"from-step": 9, "active": 2})
    made.number_from(5, numbering.OPTIMIZER_STATE)
    steps(made, 5)
    assert backend.calls[0] == ("build", 9, 0, 2)
    assert (made.results[0]["first_step"], made.results[0]["last_step"], made.results[0]["complete"]) == (9, 10, True)


def test_from_step_already_passed_is_told_and_records_nothing(tmp_path):
    made, backend = session(tmp_path, **{"from-step": 3, "active": 2})
    made.number_from(5, numbering.OPTIMIZER_STATE)
    steps(made, 5)
    assert backend.calls == [] and made.results == []
    (passed,) = outcomes.of_kind(made.outcomes, outcomes.FROM_STEP_PASSED)
    assert (passed["first"], passed["last"], passed["began"]) == (3, 4, 6)
    assert "a --from-step of 7 or later" in outcomes.sentence(passed)


def test_from_step_counts_the_process_where_the_numbering_is_unknown_and_says_so(tmp_path):
    made, backend = session(tmp_path, **{"from-step": 3, "active": 1})
    made.number_from(0, numbering.NO_COUNT)
    steps(made, 3)
    assert backend.calls[0] == ("build", 3, 0, 1)
    (unknown,) = outcomes.of_kind(made.outcomes, outcomes.NUMBERING_UNKNOWN)
    assert "SGD" in outcomes.sentence(unknown)


def test_from_step_and_skip_first_are_one_or_the_other():
    _, problems = options.resolve({"from-step": "5", "skip-first": "3"}, {})
    assert problems and "give one of the two" in problems[0]
    _, problems = options.resolve({"from-step": "5", "on-demand": "1"}, {})
    assert problems and "--on-demand" in problems[0]
    config, problems = options.resolve({}, {"NPU_PROF_FROM_STEP": "5"})
    assert problems == [] and config.from_step == 5


# -- the launcher's side --------------------------------------------------------------------------


def test_the_tools_own_steps_are_found_in_the_process_steps_of_a_resumed_record():
    tool = stepstats.ToolSteps([{"first_step": 7, "last_step": 8}], steps=5, warmup=0, offset=5)
    assert tool.spans() == [[1, 4]]


def test_the_summary_says_how_a_resumed_job_is_numbered():
    process = {"step_offset": 5, "numbered_by": "optimizer_state", "windows": [{"first_step": 7, "last_step": 8}]}
    (line,) = summary.numbering_lines([process])
    assert "began at the job's step 6" in line and "windows: steps 7-8" in line
    assert summary.numbering_lines([{"step_offset": 0, "numbered_by": "fresh", "windows": []}]) == []


def test_a_counter_that_cannot_be_read_leaves_the_loaded_count(loads):
    Broken = type("Trainer", (), {"__module__": "transformers.trainer", "state": property(lambda self: 1 / 0)})
    resumed.note_loaded(8)

    def train(self):
        return resumed.job_numbering()

    assert train(Broken()) == (8, numbering.OPTIMIZER_STATE)


def test_a_from_step_run_that_ran_short_is_told_in_the_jobs_steps():
    from npuprof_launch.launcher import wording

    record = {"options": {"from-step": 12, "active": 2, "wait": 0, "warmup": 0, "repeat": 1}, "step_offset": 5}
    text = wording.ran_short(record, "0 of 1", 5)
    assert "this process ran 5 steps, the job's steps 6-10" in text and "up to 13" in text
    assert "skip_first" in wording.ran_short({"options": {}}, "0 of 1", 2), "without --from-step: the formula"


def test_a_fresh_optimizer_s_own_state_loaded_back_resumes_nothing(loads):
    """Accelerate's prepare loads each optimizer's own state back, moved to the device: a fresh
    AdamW job was told its numbering was unknown. SGD without momentum keeps no state at all, so its
    empty state still proves nothing."""
    import torch

    params = [torch.nn.Parameter(torch.ones(2))]
    for fresh in (torch.optim.AdamW(params), torch.optim.SGD(params, lr=0.1, momentum=0.9)):
        resumed.note_load(fresh, fresh.state_dict())
    assert resumed.job_numbering() == (0, numbering.FRESH)
    plain = torch.optim.SGD(params, lr=0.1)
    resumed.note_load(plain, plain.state_dict())
    assert resumed.job_numbering() == (0, numbering.NO_COUNT)
    stepped = torch.optim.AdamW(params)
    params[0].grad = torch.ones(2)
    stepped.step()
    resumed.note_load(stepped, stepped.state_dict())
    assert resumed.job_numbering() == (1, numbering.OPTIMIZER_STATE)
