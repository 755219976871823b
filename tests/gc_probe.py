"""The full garbage collections that start inside a block, with the collector set to start
one after every young collection wherever they are not deferred (tests of
:mod:`solar.collector`'s users)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: thresholds under which a full collection follows every young one, where not deferred
EAGER = (100, 1, 1)


@contextmanager
def full_collections() -> Iterator[list[int]]:
    """A list that gains an entry per full collection started inside the block, with the
    collector's thresholds at :data:`EAGER` (put back after)."""
    full: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    old = gc.get_threshold()
    gc.set_threshold(*EAGER)
    gc.callbacks.append(seen)
    try:
        yield full
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*old)
