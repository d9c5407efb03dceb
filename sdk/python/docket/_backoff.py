"""Exponential backoff with full jitter."""

from __future__ import annotations

import random


class Backoff:
    """Delays that double from ``base`` up to ``cap`` seconds, each drawn
    uniformly from its upper half (so retries of many workers spread out,
    and no delay is near zero). ``reset()`` after a success."""

    def __init__(self, base: float, cap: float, *, rng: random.Random | None = None) -> None:
        self.base = base
        self.cap = cap
        self._failures = 0
        self._rng = rng or random.Random()

    def next(self, at_least: float = 0.0) -> float:
        """The delay before the next try; ``at_least`` (a Retry-After) is
        honoured, within the cap."""
        ceiling = min(self.cap, self.base * (2 ** min(self._failures, 30)))
        self._failures += 1
        delay = self._rng.uniform(ceiling / 2, ceiling)
        return min(max(delay, at_least), max(self.cap, at_least))

    def reset(self) -> None:
        self._failures = 0

    @property
    def failures(self) -> int:
        return self._failures


def jitter(low: float, high: float) -> float:
    """A pause drawn uniformly from [low, high] seconds."""
    return random.uniform(low, high)
