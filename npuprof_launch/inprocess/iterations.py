"""From optimizer steps to the job's iterations, with no knowledge of which optimizer is "the" one.

The clock feeds every outermost optimizer step here (an ``optimizer.step``, a ``GradScaler.step``
even when it skipped the optimizer for inf/NaN gradients, a wrapper's ``step``), keyed by the
optimizer. The rules, in the order they apply:

1. An optimizer steps at most once in an iteration: one that steps again has begun the next one.
2. An iteration ends with the step of its *closer*, the optimizer that stepped last in the last
   whole iteration; that is where the boundary goes, so a GAN's iteration ends after both its
   optimizers, and one optimizer per parameter stepped from backward ends after the last one.
3. Until an iteration has been seen whole, every new optimizer joins the first iteration: several
   optimizers from the start (a GAN, a discriminator stepped every 4th iteration) share it,
   whatever their order.
4. Later, a new optimizer that steps right after an iteration ended begins an iteration of its own
   (a new phase of training, an optimizer created anew each epoch), even while the old one is
   still referenced. Should an earlier optimizer step before the new one steps again, the new one
   had joined them instead (a second optimizer added mid-run): that one step is taken back.

Pure logic, no torch: the tests drive it in-process.
"""

from __future__ import annotations


class Iterations:
    """Counts iterations from a stream of optimizer steps."""

    __slots__ = ("count", "_current", "_members", "_closer", "_last", "_seen", "_learned", "_newcomer", "_before")

    def __init__(self) -> None:
        #: Iterations ended so far (boundaries passed).
        self.count = 0
        #: Optimizers that stepped since the last boundary.
        self._current: set = set()
        #: Optimizers of the last iteration that ended.
        self._members: set = set()
        self._closer = None
        self._last = None
        self._seen: set = set()
        #: An optimizer has stepped a second time: the shape of an iteration is known.
        self._learned = False
        #: Rule 4: a new optimizer counted as an iteration of its own, and the optimizers before it.
        self._newcomer = None
        self._before: frozenset = frozenset()

    def step(self, key) -> int:
        """One outermost step of optimizer ``key``. Returns how many boundaries it passes: 0, 1, 2
        (one missed, found late, and this one), or -1 when it takes back a boundary (rule 4)."""
        delta = 0
        if self._newcomer is not None:
            newcomer, self._newcomer = self._newcomer, None
            if key != newcomer and key in self._before:
                # The newcomer joined the earlier optimizers: its first step was not an iteration.
                self.count -= 1
                self._members = set(self._before) | {newcomer}
                self._closer = newcomer
                self._current = {key}
                self._last = key
                return -1
        if key in self._current:  # rule 1: the iteration ended before this step, its closer unknown
            self._end(closer=self._last)
            self._learned = True
            delta += 1
        self._last = key
        if key not in self._seen:
            self._seen.add(key)
            if self.count == 0 and not self._current:
                self._closer = key  # the very first step: presumed to end the first iteration
            elif not self._current and not self._learned and self._members:
                self._members.add(key)  # rule 3: it joins the first iteration (if that one lives on)
                self._closer = key
                return delta
            elif not self._current:
                self._newcomer, self._before = key, frozenset(self._members)  # rule 4
                self._closer = key
        elif key in self._members and not self._current:
            self._learned = True
        self._current.add(key)
        if key == self._closer:
            self._end(closer=key)
            delta += 1
        return delta

    def forget(self, key) -> None:
        """An optimizer was freed: its id may be reused by a new one, which must count as new."""
        self._seen.discard(key)
        self._current.discard(key)
        self._members.discard(key)
        if self._newcomer == key:
            self._newcomer = None
        self._before = self._before - {key}

    def sole(self):
        """The one optimizer whose every step is an iteration, once that is known; else None."""
        if self._learned and self._newcomer is None and self._members == {self._closer} and not self._current:
            return self._closer
        return None

    def _end(self, closer) -> None:
        self.count += 1
        self._members = self._current
        self._current = set()
        self._closer = closer
