"""Integer helpers of the footprint arithmetic: ceiling division, solving ``lo <= a·x + b < hi``
for ``x``, the range of an affine form over a box, guard bounds as integers."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import reduce

import numpy as np

from solar.symbolic.size import gcd, integer

INF = 1 << 100  # stands in for an unbounded guard side
NP_SAFE = 1 << 61  # magnitudes above this are not handed to int64 numpy arithmetic


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for ``b > 0``."""
    return -((-a) // b)


def solve(a: int, b: int, lo: int, hi: int) -> tuple[int, int]:
    """Half-open range of integers ``x`` with ``lo <= a*x + b < hi`` (``a != 0``)."""
    if a > 0:
        return cdiv(lo - b, a), (hi - 1 - b) // a + 1
    c = -a
    return cdiv(b - hi + 1, c), (b - lo) // c + 1


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
