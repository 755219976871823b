"""Values of an affine form over a group of loop dims joined by guards.

A guarded group is (a) a progression cut by an interval when the form and all the group's
guards are multiples of one linear form (padding: ``0 <= 2p+r-3 < 224``), or (b) evaluated
exactly with every dim but the longest enumerated (vectorised, at most the ``enum`` limit of
combinations) and the longest solved as an interval per combination (segments of a
progression, merged per residue class), or (c) when even that is too large, evaluated on a
sub-box: a subset, hence a lower bound. A loop dim in a guard but not in the form is
existential: it only decides which values of the others occur.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from solar.algebra.size import maximum, minimum
from solar.ir.footprint.arith import (
    INF,
    NP_SAFE,
    at_least,
    at_most,
    cdiv,
    fits_int64,
    form_range,
    gcd_all,
    sized,
    solve,
    solve_np,
    unbounded,
)
from solar.ir.footprint.domain import LinearGuard
from solar.ir.footprint.factors import (
    Factor,
    Opaque,
    Progression,
    listed,
    materialize,
    nothing,
    opaque,
    progression,
)
from solar.ir.footprint.rows import row_values
from solar.ir.footprint.segments import segment_union
from solar.ir.footprint.sized import enumerable, inner_eval, plain_image, sized_values
from solar.ir.footprint.sums import fold, scaled_range
from solar.ir.limits import current_limits

Ranges = dict[str, tuple[int, int]]


def group_values(
    dims: list[str], rng: Ranges, guards: list[LinearGuard], f: dict[str, int]
) -> tuple[int, Factor | None]:
    """Values of ``Σ f_d·x_d`` over a group of loop dims joined by guards: ``(min, factor)``."""
    prop = _proportional(dims, rng, guards, f)
    if prop is not None:
        return prop
    if not fits_int64(magnitudes(dims, rng, guards, f), len(dims) + 2):
        return 0, nothing(exact=False)  # beyond int64 enumeration: nothing proven
    walked = sized_values(dims, rng, guards, f)
    if walked is not None:
        return walked
    inner = max(dims, key=lambda d: (rng[d][1] - rng[d][0], f.get(d, 0) != 0))
    others = [d for d in dims if d != inner]
    size = math.prod(rng[d][1] - rng[d][0] for d in others)
    limit = current_limits().enum
    if size <= limit:
        return _inner_eval(rng, guards, f, inner, others)
    # Too many combinations: evaluate a sub-box (a subset of the instances, so a lower bound).
    sub = dict(rng)
    while math.prod(sub[d][1] - sub[d][0] for d in others) > limit:
        d = max(others, key=lambda d: sub[d][1] - sub[d][0])
        lo, hi = sub[d]
        sub[d] = (lo, lo + max(1, (hi - lo) // 2))
    lo, fac = _inner_eval(sub, guards, f, inner, others)
    n = fac.n if fac else 1
    if not any(f.get(d) for d in dims) and n == 1:
        return 0, None  # existential only, and a witness instance was found: exactly {0}
    diam = form_range({d: c for d, c in f.items() if d in dims}, 0, rng)
    g = gcd_all(f.get(d, 0) for d in dims)
    return diam[0], opaque(n, False, diam[1] - diam[0], g) or Opaque(1, 0, 1, 1, False)


def magnitudes(dims, rng: Ranges, guards: list[LinearGuard], f: dict[str, int]) -> list[int]:
    """The magnitudes enumerating the group handles (guard sides, coefficients times ranges)."""
    mags = [abs(g.const) + abs(g.lo) + abs(g.hi) for g in guards]
    mags += [abs(c) * max(map(abs, rng[d])) for g in guards for d, c in g.coefs]
    return mags + [abs(f.get(d, 0)) * max(map(abs, rng[d])) for d in dims]


def _proportional(dims, rng, guards, f) -> tuple[int, Factor | None] | None:
    """When ``F`` and every guard are multiples of one linear form ``L``: an AP cut by an
    interval (the padding case), exact; None when not applicable."""
    fl = {d: f[d] for d in dims if f.get(d)}
    if set(fl) != set(dims):
        return None
    ds = sorted(fl)
    gf = gcd_all(fl.values())
    k = gf if fl[ds[0]] > 0 else -gf
    lin = {d: fl[d] // k for d in ds}
    llo, lhi = -INF, INF
    for g in guards:
        gc = dict(g.coefs)
        if set(gc) != set(ds) or gc[ds[0]] % lin[ds[0]]:
            return None
        m = gc[ds[0]] // lin[ds[0]]
        if any(gc[d] != m * lin[d] for d in ds):
            return None
        a, b = solve(m, g.const, g.lo, g.hi)
        llo, lhi = at_least(llo, a), at_most(lhi, b)
    c0 = 0
    parts: list[Factor] = []
    for d in ds:
        lo, p = scaled_range(lin[d], *rng[d])
        c0 += lo
        if p:
            parts.append(p)
    s = fold(c0, parts)
    if not s.factors or (len(s.factors) == 1 and isinstance(s.factors[0], Progression)):
        step = s.factors[0].step if s.factors else 1  # type: ignore[attr-defined]
        n = s.factors[0].n if s.factors else 1
        i0 = 0 if unbounded(llo) else maximum(0, cdiv(llo - s.const, step))
        i1 = n if unbounded(lhi) else minimum(n, (lhi - 1 - s.const) // step + 1)
        if i1 <= i0:
            return 0, nothing()
        start = s.const + step * i0
        cnt = i1 - i0
        lo = k * start if k > 0 else k * (start + step * (cnt - 1))
        return lo, progression(abs(k) * step, cnt)
    v = materialize(s.factors)
    if v is None or abs(s.const) + int(v[-1]) >= NP_SAFE // max(1, gf):
        return None
    v = v + int(s.const)
    v = v[(v >= int(llo)) & (v < int(lhi))] * int(k)
    return listed(np.sort(v))


def _inner_eval(rng, guards, f, inner, others) -> tuple[int, Factor | None]:
    """Exact values with ``others`` enumerated and ``inner`` solved as an interval."""
    group = {inner, *others}  # the dims outside the group (sized or not) play no part here
    rng = {d: r for d, r in rng.items() if d in group}
    f = {d: c for d, c in f.items() if d in group}
    symbolic = sized(v for r in rng.values() for v in r) or sized(f.values())
    symbolic = symbolic or sized(v for g in guards for v in (g.const, g.lo, g.hi))
    if symbolic:
        out = (
            inner_eval(rng, guards, f, inner, others)
            if enumerable(rng, guards, f, others)
            else None
        )
        out = row_values(rng, guards, f, inner, others) if out is None else out
        if out is not None:
            return out
    # numpy enumeration: a symbolic size used here is specialized (int() records the guard)
    rng = {d: (int(a), int(b)) for d, (a, b) in rng.items()}
    f = {d: int(c) for d, c in f.items()}
    shape = tuple(rng[d][1] - rng[d][0] for d in others)
    size = math.prod(shape)
    axes = {
        d: np.arange(*rng[d], dtype=np.int64).reshape(
            [-1 if i == j else 1 for j in range(len(others))]
        )
        for i, d in enumerate(others)
    }

    def lin(coefs: Mapping[str, int], const: int) -> np.ndarray:
        acc = np.full(shape, int(const), dtype=np.int64)
        for d, c in coefs.items():
            if d in axes and c:
                acc = acc + int(c) * axes[d]
        return acc.reshape(size)

    rl, rh = rng[inner]
    xl = np.full(size, rl, dtype=np.int64)
    xh = np.full(size, rh, dtype=np.int64)
    ok = np.ones(size, dtype=bool)
    for g in guards:
        gc = dict(g.coefs)
        base = lin(gc, g.const)
        a, glo, ghi = int(gc.get(inner, 0)), int(g.lo), int(g.hi)
        if a == 0:
            ok &= (base >= glo) & (base < ghi)
        else:
            lo, hi = solve_np(a, base, glo, ghi)
            np.maximum(xl, lo, out=xl)
            np.minimum(xh, hi, out=xh)
    ok &= xl < xh
    fi = f.get(inner, 0)
    if fi == 0 and ok.all():  # every combination of the others occurs: their plain image
        folded = fold(*plain_image(f, rng, others))
        if len(folded.factors) <= 1:
            return folded.const, (folded.factors[0] if folded.factors else None)
    v = lin(f, 0)[ok]
    if fi == 0:
        return listed(np.unique(v))
    xl, xh = xl[ok], xh[ok]
    starts = v + fi * (xl if fi > 0 else xh - 1)
    return segment_union(starts, abs(fi), xh - xl)
