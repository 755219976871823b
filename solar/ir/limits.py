"""Size limits of the exact counting, as one frozen record held in a context variable.

The footprint arithmetic (:mod:`solar.ir.footprint`) and the cache-aware bound
(:mod:`solar.backend.cache_aware`) enumerate a set explicitly only up to a size; beyond it
they take a path that scales (progressions, interval solving, sweeps) or fall back to a proven
lower bound. The limits are a :class:`Limits` record read with :func:`current_limits`, and
changed only inside ``with limits(enum=...):``, for the current thread or task alone (a
:class:`contextvars.ContextVar`): a new thread starts with the defaults, two threads with
different limits do not see each other's. Every memo cache whose answers depend on the limits
keys on the record in force, so nothing is ever invalidated by hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Limits:
    """Largest sizes handled by explicit enumeration (see the module docstring)."""

    enum: int = 1 << 22  # largest set enumerated explicitly (vectorised)
    mask: int = 1 << 24  # largest span of values a union marks in a boolean mask
    grid: int = 1 << 22  # largest grid of box cells a union of boxes is counted on
    # a union of segments with more values than this is counted by an O(k log k) sweep over
    # its k segments (exact count, opaque structure) instead of materialising every value
    segments: int = 1 << 16


DEFAULT = Limits()
_CURRENT: ContextVar[Limits] = ContextVar("solar_limits", default=DEFAULT)


def current_limits() -> Limits:
    """The limits in force in this thread (or task)."""
    return _CURRENT.get()


@contextmanager
def limits(
    enum: int | None = None,
    mask: int | None = None,
    grid: int | None = None,
    segments: int | None = None,
) -> Iterator[Limits]:
    """Run the block with other limits (those not given keep their current value). Tiny
    limits make small shapes take the paths that large shapes take (no enumeration:
    progressions, interval solving, sweeps, lower bounds), so the counting oracle can check
    those paths at sizes it can enumerate."""
    given = {"enum": enum, "mask": mask, "grid": grid, "segments": segments}
    for name, value in given.items():
        if value is not None and (type(value) is not int or value < 1):
            raise ValueError(f"limits: {name} must be a positive int, got {value!r}")
    new = replace(_CURRENT.get(), **{k: v for k, v in given.items() if v is not None})
    token = _CURRENT.set(new)
    try:
        yield new
    finally:
        _CURRENT.reset(token)
