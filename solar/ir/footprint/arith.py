"""Integer helpers of the footprint arithmetic: ceiling division, solving ``lo <= a·x + b < hi``
for ``x``, the range of an affine form over a box, guard bounds as integers."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import reduce

import numpy as np

from solar.algebra.size import Size, expr_of, gcd, integer, maximum, minimum

INF = 1 << 100  # stands in for an unbounded guard side
NP_SAFE = 1 << 61  # magnitudes above this are not handed to int64 numpy arithmetic


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for ``b > 0``."""
    return -((-a) // b)


def solve(a: int, b: int, lo: int, hi: int) -> tuple[int, int]:
    """Half-open range of integers ``x`` with ``lo <= a*x + b < hi`` (``a != 0``); an
    unbounded side (``±INF``) stays unbounded."""
    if a > 0:
        xl = -INF if unbounded(lo) else cdiv(lo - b, a)
        return xl, INF if unbounded(hi) else (hi - 1 - b) // a + 1
    c = -a
    xl = -INF if unbounded(hi) else cdiv(b - hi + 1, c)
    return xl, INF if unbounded(lo) else (b - lo) // c + 1


def fits_int64(mags: Iterable[int], k: int) -> bool:
    """Whether ``k`` times every magnitude stays below :data:`NP_SAFE` (int64 enumeration is
    safe); one decision per magnitude, never which is the largest."""
    return not any(m * k >= NP_SAFE for m in mags)


def unbounded(x: int) -> bool:
    """Whether ``x`` is the sentinel of an unbounded side (a plain ``±INF`` or beyond)."""
    return not isinstance(x, Size) and abs(x) >= INF


def at_least(x: int, bound: int) -> int:
    """``max(x, bound)``, expressions kept (:func:`~solar.algebra.size.maximum`); an
    unbounded ``bound`` leaves ``x``."""
    return x if unbounded(bound) else bound if unbounded(x) else maximum(x, bound)


def at_most(x: int, bound: int) -> int:
    """``min(x, bound)``, expressions kept; an unbounded ``bound`` leaves ``x``."""
    return x if unbounded(bound) else bound if unbounded(x) else minimum(x, bound)


def solve_np(a: int, b: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`solve` for an array of offsets ``b``."""
    if a > 0:
        return -((b - lo) // a), (hi - 1 - b) // a + 1
    c = -a
    return -((hi - 1 - b) // c), (b - lo) // c + 1


def form_range(
    coefs: Mapping[str, int], const: int, ranges: Mapping[str, tuple[int, int]]
) -> tuple[int, int]:
    """Smallest and largest value of ``const + Σ coefs[d]·x_d`` over the box ``ranges``."""
    lo = hi = const
    for d, a in coefs.items():
        rl, rh = ranges[d]
        lo += a * rl if a > 0 else a * (rh - 1)
        hi += a * (rh - 1) if a > 0 else a * rl
    return lo, hi


def gcd_all(xs: Iterable[int]) -> int:
    """Greatest common divisor of ``|x|`` over ``xs`` (0 when empty)."""
    return reduce(gcd, (abs(x) for x in xs), 0)


def bound_int(x) -> int:
    """A guard bound as an integer (infinities as ``±INF``)."""
    if isinstance(x, float):
        if math.isinf(x):
            return INF if x > 0 else -INF
        if x != int(x):
            raise ValueError(f"guard bound {x} is not an integer")
    return integer(x)


def concrete(extent) -> int:
    """A loop extent as an integer (footprints are counted at concrete sizes)."""
    try:
        return integer(extent)
    except TypeError:
        raise ValueError(f"footprints need concrete loop extents, got {extent!r}") from None


def sized(xs: Iterable[object]) -> bool:
    """Whether any of ``xs`` is a symbolic size."""
    return any(isinstance(x, Size) for x in xs)


def distinct_sorted(xs: Iterable[int]) -> list[int]:
    """The distinct values of ``xs``, ascending (``np.unique`` for sizes: two sizes are one
    value when their expressions are the same; the order decided is recorded as guards)."""
    seen: dict[object, int] = {}
    for x in xs:
        seen.setdefault(expr_of(x), x)
    return sorted(seen.values())
