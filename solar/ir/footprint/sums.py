"""Minkowski sums of value sets: :class:`ValueSet` ``const + Σ factors`` (injective), built by
adding factors smallest scale first.

Two progressions ``g·[0,L)`` and ``c·[0,n)`` with ``g | c`` and ``c/g <= L`` merge into the
progression ``g·[0, (n-1)c/g + L)``. A set whose minimum gap exceeds the diameter of the sum
so far adds injectively (counts multiply): the usual row-major/stride test, which keeps
broadcast (stride 0) dims at one element. Anything else is materialised (when small) and
summed exactly by merging segments per residue class; failing that, Cauchy–Davenport
``|A+B| >= |A|+|B|-1`` gives a lower bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solar.ir.footprint.arith import NP_SAFE, gcd_all
from solar.ir.footprint.factors import (
    Factor,
    Opaque,
    Progression,
    injective,
    materialize,
    opaque,
    progression,
    values,
)
from solar.ir.footprint.segments import runs, segment_union
from solar.ir.limits import current_limits


@dataclass(frozen=True, eq=False)
class ValueSet:
    """``const + Σ factors`` (an injective sum): the value set of one affine form."""

    const: int
    factors: tuple[Factor, ...]

    @property
    def count(self) -> int:
        return math.prod(f.n for f in self.factors)

    @property
    def exact(self) -> bool:
        zero = [f for f in self.factors if f.n == 0]
        if zero:
            return any(f.exact for f in zero)
        return all(f.exact for f in self.factors)

    def key(self) -> tuple:
        """Equal keys: equal sets."""
        return (self.const, tuple(f.key() for f in self.factors))


def scaled_range(f: int, lo: int, hi: int) -> tuple[int, Progression | None]:
    """``{f·x : lo <= x < hi}`` as ``(min, factor)``."""
    return (f * lo if f > 0 else f * (hi - 1)), progression(abs(f), hi - lo)


def fold(const: int, parts: list[Factor]) -> ValueSet:
    """``const + Σ parts`` as an injective sum (exact where the parts allow)."""
    zero = [p for p in parts if p.n == 0]
    if zero:
        return ValueSet(0, tuple(zero))
    parts = sorted(parts, key=lambda f: (f.gap, f.diam))
    fs: list[Factor] = []
    for p in parts:
        shift, fs = _add(fs, p)
        const += shift
    return ValueSet(const, tuple(fs))


def _sum_lower_bound(fs: Sequence[Factor], x: Factor) -> Factor | None:
    """Cauchy–Davenport: ``|A+B| >= |A| + |B| - 1`` for non-empty integer sets."""
    na = math.prod(f.n for f in fs)
    n = na + x.n - 1 if na > 0 and x.n > 0 else 0
    diam = sum(f.diam for f in fs) + x.diam
    return opaque(n, False, diam, gcd_all([*(f.g for f in fs), x.g]))


def _add(fs: list[Factor], x: Factor) -> tuple[int, list[Factor]]:
    """Add set ``x`` to the injective sum ``fs``: ``(shift, new factors)``."""
    if not fs:
        return 0, [x]
    top = fs[-1]
    if isinstance(top, Progression) and isinstance(x, Progression):
        for a, b in ((top, x), (x, top)):
            if b.step % a.step == 0 and b.step // a.step <= a.n:
                m = progression(a.step, (b.n - 1) * (b.step // a.step) + a.n)
                cand = [*fs[:-1], m] if m else fs[:-1]
                if injective(cand):
                    return 0, cand
    for pos in range(len(fs), -1, -1):
        cand = [*fs[:pos], x, *fs[pos:]]
        if injective(cand):
            return 0, cand
    # not injective: sum exactly through materialised values, else a lower bound (numpy:
    # symbolic sizes used here are specialized, int() records the guard)
    v = materialize(fs)
    if v is not None and not isinstance(x, Opaque) and sum(f.diam for f in fs) + x.diam < NP_SAFE:
        if isinstance(x, Progression):
            lo, f = segment_union(v, int(x.step), np.full(v.size, int(x.n), dtype=np.int64))
            return lo, [f] if f else []
        s = int(np.gcd.reduce(np.diff(v))) if v.size > 1 else int(x.g)
        vs, vl = runs(v, s)
        xv = values(x)  # type: ignore[arg-type]
        xs, xl = runs(xv, s) if int(x.g) == s else (xv, np.ones(xv.size, dtype=np.int64))
        if vs.size * xs.size <= current_limits().enum:
            starts = (vs[:, None] + xs[None, :]).ravel()
            lens = (vl[:, None] + xl[None, :] - 1).ravel()
            lo, f = segment_union(starts, s, lens)
            return lo, [f] if f else []
    f = _sum_lower_bound(fs, x)
    return 0, [f] if f else []
