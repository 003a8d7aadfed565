"""On-demand requests turned into windows (requesttaking.py): where each kind of request starts
its window, and a request folder that cannot be read."""

from __future__ import annotations

from npuprof_launch.common.schedule import on_demand_window
from npuprof_launch.inprocess import requesttaking


def request(**fields) -> dict:
    return {"id": "r1", "wait": 1, "warmup": 1, "active": 2, "start_step": None, "align": None, **fields}


def test_a_request_without_a_start_opens_its_window_after_its_wait():
    warnings: list[str] = []
    window = requesttaking.window_for(request(), 11, warnings.append)
    assert window == on_demand_window(11, wait=1, warmup=1, active=2)
    assert (window.first, window.first_recorded, window.last) == (12, 13, 14) and not warnings


def test_a_start_step_to_come_is_kept_and_one_that_passed_is_said():
    warnings: list[str] = []
    assert requesttaking.window_for(request(start_step=40), 11, warnings.append).first == 41
    assert not warnings
    late = requesttaking.window_for(request(start_step=5), 11, warnings.append)
    assert late.first == 12
    assert warnings == [
        "on-demand request r1: its step 5 had passed when it came; the window starts at step 11 here, "
        "and the other ranks' windows may cover other steps"
    ]


def test_an_aligned_request_starts_at_the_next_multiple_plus_one():
    assert requesttaking.window_for(request(align=10, wait=0), 11, print).first == 11
    assert requesttaking.window_for(request(align=10, wait=0), 12, print).first == 21
    assert requesttaking.window_for(request(align=10, wait=0, start_step=15), 12, print).first == 15, "step wins"


class Watcher:
    def __init__(self, found=None, error=None) -> None:
        self.found, self.error = found, error

    def poll(self):
        if self.error is not None:
            raise self.error
        return self.found


def test_a_poll_gives_the_request_or_none_and_never_raises():
    warnings: list[str] = []
    assert requesttaking.poll(Watcher(found=request()), warnings.append) == request()
    assert requesttaking.poll(Watcher(), warnings.append) is None and not warnings
    assert requesttaking.poll(Watcher(error=PermissionError("denied")), warnings.append) is None
    assert warnings == ["on-demand requests could not be read: PermissionError('denied')"]
