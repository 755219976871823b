"""What the garbage collector looks like while a block runs: the collections that start in
it and the thresholds in force at each start, with the collector set to start a full
collection after every young one wherever nothing changes it (tests of :mod:`solar.collector`
and of the library calls that must leave the collector alone)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

#: thresholds under which a full collection follows every young one, where not deferred
EAGER = (100, 1, 1)


@dataclass
class Seen:
    """The collections started inside a block: ``(generation, thresholds)`` at each start."""

    starts: list[tuple[int, tuple[int, int, int]]] = field(default_factory=list)

    @property
    def thresholds(self) -> set[tuple[int, int, int]]:
        return {t for _, t in self.starts}

    def full_under(self, thresholds: tuple[int, int, int]) -> int:
        """Full collections started while ``thresholds`` were in force (CPython still skips
        one while few objects are new since the last)."""
        return sum(g == 2 and t == thresholds for g, t in self.starts)


@contextmanager
def collections() -> Iterator[Seen]:
    """A :class:`Seen` filled as collections start inside the block, with the collector's
    thresholds at :data:`EAGER` (put back after)."""
    seen = Seen()

    def started(phase: str, info: dict) -> None:
        if phase == "start":
            seen.starts.append((info["generation"], gc.get_threshold()))

    old = gc.get_threshold()
    gc.set_threshold(*EAGER)
    gc.callbacks.append(started)
    try:
        yield seen
    finally:
        gc.callbacks.remove(started)
        gc.set_threshold(*old)
