"""Value-set factors: the summands of an injective Minkowski sum.

The values of an affine form over a domain are kept as ``const + Σ factors`` where every
factor is a set of integers with minimum 0, of one of three kinds:

- :class:`Progression` ``{step·i : i < n}`` (an unguarded loop dim, merged runs);
- :class:`Listed`: explicit sorted values (a small guarded group);
- :class:`Opaque`: only its count (exact or a lower bound), an upper bound of its diameter
  and a common divisor ``g`` of all differences (so ``g`` is a lower bound of its minimum gap).

A sum is *injective* (its count the product of the factors' counts) when each factor's
minimum gap exceeds the diameter of the sum of those below it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solar.ir.footprint.arith import NP_SAFE
from solar.ir.limits import current_limits


@dataclass(frozen=True, eq=False)
class Factor:
    """A set of integers with minimum 0 (identity equality: :meth:`key` compares values)."""

    n: int  # number of values (a lower bound when not ``exact``)
    diam: int  # largest value (an upper bound for an Opaque set)
    gap: int  # smallest difference of two values (a lower bound for an Opaque set)
    g: int  # a common divisor of all differences
    exact: bool

    def key(self) -> tuple:
        """Equal keys: equal sets."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class Progression(Factor):
    """``{step·i : i < n}``."""

    step: int

    def key(self) -> tuple:
        return ("ap", self.step, self.n)


@dataclass(frozen=True, eq=False)
class Listed(Factor):
    """Explicit sorted values."""

    vals: np.ndarray

    def key(self) -> tuple:
        return ("vals", self.n, self.vals.tobytes())


@dataclass(frozen=True, eq=False)
class Opaque(Factor):
    """Only the count and the bounds of the fields are known: equal to itself alone."""

    def key(self) -> tuple:
        return ("opq", id(self))


def progression(step: int, n: int) -> Progression | None:
    """``{step·i : i < n}``; None for a single value (nothing to add)."""
    if n <= 1:
        return None
    return Progression(n, step * (n - 1), step, step, True, step)


def nothing(exact: bool = True) -> Opaque:
    """The empty set (``exact=False``: nothing proven, a count of at least 0)."""
    return Opaque(0, 0, 1, 1, exact)


def opaque(n: int, exact: bool, diam: int, g: int) -> Opaque | None:
    """A set known by its count alone; None for one value, exactly."""
    if n == 1 and exact:
        return None
    return Opaque(n, max(diam, 0), max(g, 1), max(g, 1), exact)


def listed(v: np.ndarray) -> tuple[int, Factor | None]:
    """``(min, factor)`` of a sorted array of distinct values (a progression when evenly
    spaced)."""
    if v.size == 0:
        return 0, nothing()
    lo = int(v[0])
    if v.size == 1:
        return lo, None
    v = v - lo
    d = np.diff(v)
    g = int(np.gcd.reduce(d))
    if int(d.min()) == int(d.max()):
        return lo, progression(g, int(v.size))
    return lo, Listed(int(v.size), int(v[-1]), int(d.min()), g, True, v)


def values(f: Progression | Listed) -> np.ndarray:
    """The sorted values of an explicit factor."""
    if isinstance(f, Progression):
        return np.arange(int(f.n), dtype=np.int64) * int(f.step)
    return f.vals


def materialize(fs: Sequence[Factor], limit: int | None = None) -> np.ndarray | None:
    """Sorted values of an injective sum (minimum 0), if exact and at most ``limit``
    (default: the ``enum`` limit in force)."""
    limit = current_limits().enum if limit is None else limit
    if any(isinstance(f, Opaque) for f in fs) or math.prod(f.n for f in fs) > limit:
        return None
    if sum(f.diam for f in fs) >= NP_SAFE:
        return None
    v = np.zeros(1, dtype=np.int64)
    for f in fs:
        v = (v[:, None] + values(f)[None, :]).ravel()  # type: ignore[arg-type]
    v.sort()
    return v


def injective(fs: Sequence[Factor]) -> bool:
    """A sum is injective when each set's minimum gap exceeds the diameter of those below."""
    d = 0
    for f in fs:
        if f.gap <= d:
            return False
        d += f.diam
    return True
