"""The schedule arithmetic, checked against torch.profiler.schedule itself."""

from __future__ import annotations

import itertools

import pytest

from npuprof_launch.common.schedule import Schedule, Window, aligned_start


def test_the_readme_example():
    assert Schedule(skip_first=2, active=2).windows() == (Window(3, 0, 2),)
    assert Schedule(skip_first=2, active=2).windows()[0].last == 4


def test_formula_and_length():
    schedule = Schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=3)
    assert schedule.length() == 1 + (1 + 1 + 2) * 3
    assert schedule.formula().endswith("= 1 + (1 + 1 + 2) x 3 = 13")


@pytest.mark.filterwarnings("ignore:Profiler won't be using warmup")
@pytest.mark.parametrize(
    ("skip_first", "wait", "warmup", "active", "repeat"),
    list(itertools.product([0, 1, 3], [0, 2], [0, 1], [1, 3], [1, 2])),
)
def test_windows_agree_with_torch_profiler_schedule(skip_first, wait, warmup, active, repeat):
    """Step n of the job is torch's step n - 1: the same steps are warmup and recorded."""
    torch_profiler = pytest.importorskip("torch.profiler")
    action = torch_profiler.ProfilerAction
    theirs = torch_profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first)
    ours = Schedule(skip_first=skip_first, wait=wait, warmup=warmup, active=active, repeat=repeat)
    length = ours.length()
    recorded = {n for n in range(1, length + 5) if theirs(n - 1) in (action.RECORD, action.RECORD_AND_SAVE)}
    warm = {n for n in range(1, length + 5) if theirs(n - 1) == action.WARMUP}
    windows = ours.windows()
    assert recorded == {n for w in windows for n in range(w.first_recorded, w.last + 1)}
    assert warm == {n for w in windows for n in range(w.first, w.first_recorded)}
    assert {n for n in range(1, length + 5) if theirs(n - 1) == action.RECORD_AND_SAVE} == {w.last for w in windows}
    assert max(w.last for w in windows) == length


def test_range_mode_records_each_chosen_call_alone():
    windows = Schedule(skip_first=1, wait=1, active=2, repeat=2, range_mode=True).windows()
    assert [w.first for w in windows] == [3, 4, 6, 7]
    assert all(w.active == 1 and w.warmup == 0 for w in windows)


def test_steps_due_counts_each_boundary_inside_the_window():
    window = Window(first=3, warmup=1, active=2)  # traces 3, records 4 and 5
    assert [window.steps_due(n) for n in range(0, 8)] == [0, 0, 0, 1, 2, 3, 3, 3]
    assert not window.saved_by(4) and window.saved_by(5)


@pytest.mark.parametrize(
    ("next_step", "align", "start"), [(1, 10, 1), (2, 10, 11), (11, 10, 11), (12, 5, 16), (7, 1, 7)]
)
def test_aligned_start_rounds_up_to_the_same_step_everywhere(next_step, align, start):
    assert aligned_start(next_step, align) == start


def test_a_records_schedule_takes_the_options_tables_defaults_for_what_it_lacks():
    from npuprof_launch.common import options

    assert options.schedule_of({}).length() == sum(
        options.BY_NAME[key].default for key in ("skip-first", "wait", "warmup", "active")
    )
    assert options.schedule_of({"skip-first": 4, "active": 2, "repeat": 3}).formula().endswith("= 10")


def test_every_list_of_schedule_keys_is_the_one_in_names():
    from npuprof_launch.common import names, ondemand, options, stages
    from npuprof_launch.launcher import arguments, nextruns

    assert stages.KEYS[: len(names.SCHEDULE_KEYS)] == names.SCHEDULE_KEYS
    assert nextruns.SUGGESTION_SETS[: len(names.SCHEDULE_KEYS)] == names.SCHEDULE_KEYS
    assert tuple(ondemand.REQUEST_FIELDS) == names.REQUEST_KEYS
    assert ondemand.REQUEST_FIELDS == {key: options.BY_NAME[key].minimum for key in names.REQUEST_KEYS}
    assert arguments.MODE_OPTIONS["--trigger"][:-1] == names.REQUEST_KEYS
    assert all(key in options.BY_NAME for key in names.SCHEDULE_KEYS)
