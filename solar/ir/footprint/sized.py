"""A guarded group's values when sizes are symbols: the short dims enumerated as plain ints,
the longest solved as an interval whose ends keep their expressions.

:func:`solar.ir.footprint.groups.group_values` enumerates every dim of a guarded group but the
longest with numpy, which needs plain integers. A window's group (a convolution's output
position ``p`` and tap ``r`` joined by ``0 <= 2p + r - 1 < H``) enumerates only the taps, a
handful of plain ints; it is the longest dim's range and the guard bounds that hold the
symbols. Here the few combinations of the short dims are walked in Python, and per combination
the longest dim's interval is solved with sizes (its ends are ``max``/``min`` of expressions,
decided at the traced sizes and recorded as guards). The answers are the numeric paths'
answers, computed with expressions:

- :func:`inner_eval`: the value set where it is a union the numeric path would give as one
  progression, a plain image or plain listed values; None otherwise (the caller enumerates
  numerically, specializing the sizes with a recorded guard);
- :func:`lattice_count`: the number of executed instances of the group (every dim counted),
  where the numeric path counts them exactly.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

import numpy as np

from solar.ir.footprint.arith import at_least, at_most, fits_int64, sized, solve
from solar.ir.footprint.domain import LinearGuard
from solar.ir.footprint.factors import Factor, listed, nothing, progression
from solar.ir.footprint.sums import fold, scaled_range
from solar.ir.limits import current_limits

Ranges = Mapping[str, tuple[int, int]]

#: most combinations of the short dims walked with symbolic sizes (each a few sympy operations)
SIZED_COMBINATIONS = 1024

Row = tuple[dict[str, int], int, int, bool]  # (the short dims' values, lo, hi, executed)


def enumerable(rng: Ranges, guards: list[LinearGuard], f: Mapping[str, int], others) -> bool:
    """Whether the short dims ``others`` are plain (ranges, coefficients in the form and the
    guards) and few enough to walk: then nothing needs specializing."""
    if sized(v for d in others for v in rng[d]) or sized(f.get(d, 0) for d in others):
        return False
    if sized(c for g in guards for d, c in g.coefs if d in others):
        return False
    return math.prod(rng[d][1] - rng[d][0] for d in others) <= SIZED_COMBINATIONS


def _rows(rng: Ranges, guards: list[LinearGuard], inner: str, others: list[str]) -> list[Row]:
    """Per combination of the short dims (in numpy's C order): the longest dim's interval
    ``[lo, hi)`` and whether any instance executes (as the numeric path decides it)."""
    rows = []
    rl, rh = rng[inner]
    for combo in itertools.product(*(range(*rng[d]) for d in others)):
        x = dict(zip(others, combo, strict=True))
        xl, xh, ok = rl, rh, True
        for g in guards:
            gc = dict(g.coefs)
            base = g.const + sum(c * x[d] for d, c in gc.items() if d != inner)
            a = gc.get(inner, 0)
            if a == 0:
                ok = (g.lo <= base < g.hi) and ok
            else:
                lo, hi = solve(a, base, g.lo, g.hi)
                xl, xh = at_least(xl, lo), at_most(xh, hi)
        rows.append((x, xl, xh, (xl < xh) and ok))
    return rows


def plain_image(f: Mapping[str, int], rng: Ranges, others: list[str]) -> tuple[int, list]:
    """``(min, progressions)`` of ``Σ f_d·x_d`` over the full ranges of ``others``."""
    c0, parts = 0, []
    for d in others:
        lo, p = scaled_range(f.get(d, 0), *rng[d]) if f.get(d, 0) else (0, None)
        c0 += lo
        if p:
            parts.append(p)
    return c0, parts


def inner_eval(
    rng: Ranges, guards: list[LinearGuard], f: Mapping[str, int], inner: str, others: list[str]
) -> tuple[int, Factor | None] | None:
    """:func:`~solar.ir.footprint.groups._inner_eval`'s answer with sizes kept, or None where
    it is not one this module can give (module docstring)."""
    rows = _rows(rng, guards, inner, others)
    fi = f.get(inner, 0)
    if fi == 0 and all(ok for *_, ok in rows):
        folded = fold(*plain_image(f, rng, others))
        if len(folded.factors) <= 1:
            return folded.const, (folded.factors[0] if folded.factors else None)
    live = [r for r in rows if r[3]]
    v = [sum(f.get(d, 0) * x[d] for d in others) for x, *_ in live]
    if fi == 0:
        return listed(np.unique(np.asarray(v, dtype=np.int64)))
    starts = [a + fi * (xl if fi > 0 else xh - 1) for a, (_, xl, xh, _) in zip(v, live)]
    return _single_run(starts, abs(fi), [xh - xl for _, xl, xh, _ in live])


def sized_values(
    dims: list[str], rng: Ranges, guards: list[LinearGuard], f: Mapping[str, int]
) -> tuple[int, Factor | None] | None:
    """:func:`~solar.ir.footprint.groups.group_values` of a group where one dim's range holds
    the sizes and the others are plain and few, solving that dim without deciding whether it
    is the longest (the numeric path solves the longest): where it is, both walk the same
    combinations; where it is not, every set the numeric path can build is at most
    ``Π others · max(others)`` values, listed, which is how :func:`inner_eval` gives it too
    (a value set has one listed form). None elsewhere."""
    inner = [d for d in dims if sized(rng[d])]
    if len(inner) != 1:
        return None
    others = [d for d in dims if d != inner[0]]
    if not enumerable(rng, guards, f, others):
        return None
    spans = [rng[d][1] - rng[d][0] for d in others]
    limits = current_limits()
    if math.prod(spans) * max(spans, default=1) > min(limits.segments, limits.enum):
        return None
    return inner_eval(rng, guards, f, inner[0], others)


def _single_run(starts: list[int], step: int, lens: list[int]) -> tuple[int, Factor | None] | None:
    """:func:`~solar.ir.footprint.segments.segment_union` where its answer is nothing, plain
    listed starts or one progression (the segments share a residue and chain); else None."""
    keep = [(s, n) for s, n in zip(starts, lens, strict=True) if n > 0]
    if not keep:
        return 0, nothing()
    if step == 0 or max(n for _, n in keep) == 1:
        if sized(s for s, _ in keep):
            return None
        return listed(np.unique(np.asarray([s for s, _ in keep], dtype=np.int64)))
    r = [s % step for s, _ in keep]
    if any(x != r[0] for x in r[1:]):
        return None
    segs = sorted(((s // step, s // step + n) for s, n in keep), key=lambda qe: qe[0])
    reach = segs[0][1]
    for q, e in segs[1:]:
        if q > reach:
            return None
        reach = max(reach, e)
    return segs[0][0] * step + r[0], progression(step, reach - segs[0][0])


def lattice_count(dims: list[str], rng: Ranges, guards: list[LinearGuard]) -> int | None:
    """The executed instances of a guarded group (every dim counted) where one dim's range
    holds the sizes: the other dims walked, that one solved per combination. The numeric path
    (a mixed-radix form over the group, :func:`~solar.ir.footprint.groups.group_values`)
    counts them exactly here too, whichever dim it solves: it walks at most these
    combinations, and every magnitude is checked below its int64 limit (decisions recorded as
    guards, no dim ordered). None elsewhere (the caller takes that path)."""
    inner = [d for d in dims if sized(rng[d])]
    if len(inner) != 1:
        return None
    others = [d for d in dims if d != inner[0]]
    if not enumerable(rng, guards, {}, others):
        return None
    if math.prod(rng[d][1] - rng[d][0] for d in others) > current_limits().enum:
        return None
    total = math.prod(rng[d][1] - rng[d][0] for d in dims)
    mags = [abs(g.const) + abs(g.lo) + abs(g.hi) for g in guards]
    mags += [abs(c) * (abs(rng[d][0]) + abs(rng[d][1])) for g in guards for d, c in g.coefs]
    mags += [total * (abs(rng[d][0]) + abs(rng[d][1])) for d in dims]
    if not fits_int64(mags, len(dims) + 2):
        return None
    return sum((xh - xl for _, xl, xh, ok in _rows(rng, guards, inner[0], others) if ok), 0)
