"""Step clocks: where the hook learns that one step of the job has ended, and what each must provide.

A *step clock* (a step source) turns something the job does anyway into step boundaries and tells
its session about them. Two exist: optimizerclock.OptimizerClock counts training iterations from
``optimizer.step`` (torch's global optimizer hooks and the step wrapper of stepwrapper.py), and
callclock.CallClock counts calls of a function declared with ``--target`` or ``--stage``
(declared.py finds the function and wraps it). They know neither each other nor the hook: hook.py
makes each with the callbacks it needs, and this module writes down what every one of them owes
the rest, like backends/__init__.py does for the profiler backends. It is only read by type
checkers and people: no module imports it at run time, so it costs the job nothing.

**What a step clock owes the rest** (``StepClock`` and ``ClockSession`` below):

* it is made by hook.py with keyword callbacks: ``new_session`` (the session to count into) and
  ``say`` (one ``npuprof:`` line), plus what its kind needs (torch, the safe points, the declared
  function); making it costs next to nothing and changes nothing in the job;
* it opens its session itself, at its first counted step (a process that never steps has none:
  the exit tally reads ``session`` for that), names itself there (``session.clock_name``, which
  the record and the report show, and ``session.target`` for a declared function), and does
  nothing more if the session is off; then, before its first ``step_ended``, it tells the session
  how the job numbers its steps (``number_from``: the optimizer clock asks resumed.py, once, for
  a resumed job's count; a call clock numbers calls as the process makes them);
* it tells the session each step: ``step_ended`` at every boundary (``step_began`` as well where
  the start of a step is seen, so a window can start right there), ``retract`` for a boundary
  taken back. The session treats ``clock_name == "optimizer.step"`` as a clock whose boundaries
  come inside torch's range (a post hook): it acts at the next safe point rather than at once;
* a clock on a hot path may count on its own below ``session.call_at`` (add one to
  ``session.steps``, append ``time.perf_counter()`` to ``session.times``) and call only when the
  count reaches it, as the optimizer clock's lean mode does;
* it never raises into the job: a failure is said once and the clock stops counting;
* in a forked child it starts from nothing (``after_fork``): the parent's session is not its own.

**Adding a kind of step source**: write its module beside these two, with a class that follows
``StepClock``; make and arm it in hook.py (``_on_torch_imported`` for one that needs torch,
``install`` for one watched from process start), the one place that knows every part of the
in-process half; give its session a ``clock_name`` of its own, and if its boundaries come inside a
range of torch's, teach the session (``step_ended``) that name as it knows ``optimizer.step``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from npuprof_launch.common.options import Config


class ClockSession(Protocol):
    """What a clock reads and calls on the session it opened (session.Session)."""

    #: The clock's name in the record and the report; ``optimizer.step`` for the optimizer clock.
    clock_name: str
    #: The declared function's ``--target`` text, for a call clock's session; None otherwise.
    target: str | None
    #: Steps counted so far. A clock counting on its own below ``call_at`` adds to it itself,
    #: and stores the new count in ``marked[0]`` too (common/stepmark.py).
    steps: int
    #: The slot the count is stored in at every step, for a launcher to read while the process is stuck.
    marked: Any
    #: ``time.perf_counter()`` at the end of each step since the last checkpoint (the clock may append).
    times: list[float]
    #: The count at which ``step_ended`` must be called again; below it a boundary is only counted and timed.
    call_at: float
    #: A call clock's one warning that its calls run off the main thread, said once a session.
    warned_thread: bool
    #: The run's options (a call clock reads ``range``: range mode's one-call windows start on any thread).
    config: Config

    @property
    def off(self) -> bool:
        """Whether the session will never profile (bad options, another profiler): the clock stops."""

    def number_from(self, offset: int, source: str) -> None:
        """The job's step N is this process's N - ``offset`` (``source``: a key of common/numbering.SOURCES)."""

    def step_ended(self, *, inside_range: bool, label: object = None) -> None:
        """One step ended; ``inside_range``: inside a range of torch's; ``label``: ``step_began``'s."""

    def step_began(self, *, label: str, may_start: bool) -> object:
        """A step begins; a window due now may start here. Returns the step's open timeline label, or None."""

    def retract(self) -> None:
        """The last boundary was none after all (iterations.py, rule 4): one step fewer."""

    def note_warning(self, message: str) -> None:
        """One warning, said once and kept in the record."""

    def note_outcome(self, kind: str, step: int | None, **fields) -> None:
        """One outcome (common/outcomes.py), kept in the record and said once in its sentence."""


class StepClock(Protocol):
    """What hook.py relies on from every step clock, whatever its kind."""

    @property
    def session(self) -> ClockSession | None:
        """The session opened at the clock's first counted step; None before it (and in a forked
        child until its own first), which the exit tally reads as "made no step here"."""

    def after_fork(self) -> None:
        """In a forked child: start counting from nothing, with no session."""


class DeclaredClock(StepClock, Protocol):
    """What a declared function (declared.Declared) and hook.py rely on from the clock its calls go to
    (callclock.CallClock): declared.py wraps the function and drives a call already in flight, without
    importing the clock's module, which imports it."""

    #: Set when no call is to be counted: every call then runs untouched (hook.py sets it for bad options).
    passive: bool

    @property
    def in_call(self) -> bool:
        """Whether a call of the function is under way on the owner thread (through the wrapper)."""

    def call(self, wrapped: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> Any:
        """The wrapper's: the call itself, counted as a step where it is one."""

    def begin_call(self) -> None:
        """The first line of the function's own code (counted in place, inplace.py): ``call``'s work before it."""

    def end_call(self) -> None:
        """The ``finally`` of the function's own code: ``call``'s work after it."""

    def claims_this_thread(self) -> bool:
        """Whether this thread's calls are the steps (those of the first thread to call the function)."""

    def enter(self) -> None:
        """A call begins on the owner thread."""

    def exit(self) -> None:
        """A call on the owner thread returns (or raises)."""
