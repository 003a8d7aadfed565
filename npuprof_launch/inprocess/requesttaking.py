"""--on-demand: turning a request for this process into the window it asks for.

A request (written by ``npuprof-run --trigger``, read by ondemand.RequestWatcher) names how many
steps to wait, warm up and record, and where the window should start: at a given step (so that
every rank records the same steps), at the next multiple of a number (``align``), or at the next
step. The session polls at its checkpoints, spaced by the measured step time, and adds the window
this part makes to its schedule. A request folder that cannot be read is said once and the job
goes on: nothing here may break it.
"""

from __future__ import annotations

from npuprof_launch.common.schedule import Window, aligned_start, on_demand_window


def poll(watcher, note_warning) -> dict | None:
    """The next request for this process from ``watcher``, or None (a broken folder is said, not raised)."""
    try:
        return watcher.poll()
    except Exception as exc:  # noqa: BLE001 - a broken request folder must not break the job
        note_warning(f"on-demand requests could not be read: {exc!r}")
        return None


def window_for(request: dict, first: int, note_warning) -> Window:
    """The window ``request`` asks for, starting at step ``first`` (the next one) or later. A start
    step that had passed when the request came is said: the window starts at ``first`` instead."""
    if request.get("start_step"):
        if request["start_step"] < first:
            note_warning(
                f"on-demand request {request['id']}: its step {request['start_step']} had passed when it came; "
                f"the window starts at step {first} here, and the other ranks' windows may cover other steps"
            )
        first = max(first, request["start_step"])
    elif request.get("align"):
        first = aligned_start(first, request["align"])
    return on_demand_window(first, wait=request["wait"], warmup=request["warmup"], active=request["active"])


class Requests:
    """The requests one session takes: the folder's watcher, the ids taken, and why each window a
    request opened was asked for (``reason``: --on-slowdown's slowdown), kept by window."""

    def __init__(self, output_dir: str, rank: int | None, since_ns: int, note_warning) -> None:
        from npuprof_launch.common import ondemand

        self.watcher = ondemand.RequestWatcher(output_dir, rank, since_ns, note_warning)
        self.since_ns = since_ns
        self.interval_s = self.watcher.interval_s
        self.ids: list[str] = []
        self._note_warning = note_warning
        self._reasons: dict[int, str] = {}
        self._taken: set[int] = set()  # the ids of the windows requests opened
        self._windows: list[Window] = []  # kept alive, so that no id is reused while it is held

    def take(self, first: int) -> Window | None:
        """The window of the next request for this process, from step ``first`` on, or None."""
        request = poll(self.watcher, self._note_warning)
        if request is None:
            return None
        self.ids.append(request["id"])
        window = window_for(request, first, self._note_warning)
        if request.get("reason"):
            self._reasons[id(window)] = request["reason"]
        self._taken.add(id(window))
        self._windows.append(window)
        return window

    def moved(self, window: Window, to: Window) -> None:
        """A window that started late is ``to`` now: its reason goes with it."""
        if id(window) in self._reasons:
            self._reasons[id(to)] = self._reasons.pop(id(window))
        if id(window) in self._taken:
            self._taken.add(id(to))
            self._windows.append(to)

    def reason_of(self, window: Window) -> str | None:
        return self._reasons.get(id(window))

    def not_reached(self, pending: list[Window], offset: int) -> list[dict]:
        """The fields of an outcomes.NOT_REACHED for each of ``pending`` (the session's windows to
        come, at its end) that a request opened: the job ended before it began. In the job's
        numbering (``offset``: the record's step_offset)."""
        found = []
        for window in pending:
            if id(window) in self._taken:
                fields: dict = {"first": window.first + offset, "last": window.last + offset}
                if self._reasons.get(id(window)):
                    fields["reason"] = self._reasons[id(window)]
                found.append(fields)
        return found
