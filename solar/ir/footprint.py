"""Footprints: how many distinct storage elements an affine access touches.

An access ``T[e_0, ..., e_k]`` of a statement reads (or writes) storage offset
``F(x) = offset + Σ_d stride_d · e_d(x)`` of ``T``'s storage base (a view's strides and offset,
or the row-major strides of a plain tensor) for every executed instance ``x`` of the loop box
``0 <= x_i < extent_i`` that satisfies all guards ``lo <= g(x) < hi``. Its footprint is the
number of distinct values of ``F`` over those instances. Every number here is an *exact* count or
a *proven lower bound* (``exact=False``), never more: the bounds built on them must stay below
reality.

Method (all integer arithmetic; nothing enumerates a large set):

1. Guards on one loop dim shrink that dim's range; constant guards decide emptiness; a guard
   that always holds on the box is dropped, the others are clipped to their expression's range.
2. Loop dims joined by a common multi-dim guard form a *group*. Groups are independent, so the
   value set of ``F`` is the Minkowski sum ``c + Σ_g S_g`` of one set per group (a loop dim in
   a guard but not in ``F`` is existential: it only decides which values of the others occur).
3. An unguarded dim gives an arithmetic progression (AP) ``{f·i : i < n}``. A guarded group is
   (a) an AP cut by an interval when ``F`` and all the group's guards are multiples of one
   linear form (padding: ``0 <= 2p+r-3 < 224``), or (b) evaluated exactly with every dim but the
   longest enumerated (vectorised, at most ``ENUM_LIMIT`` combinations) and the longest solved
   as an interval per combination (segments of an AP, merged per residue class), or (c) when
   even that is too large, evaluated on a sub-box: a subset, hence a lower bound.
4. The sets are summed smallest scale first. Two APs ``g·[0,L)`` and ``c·[0,n)`` with ``g | c``
   and ``c/g <= L`` merge into the AP ``g·[0, (n-1)c/g + L)``. A set whose minimum gap exceeds
   the diameter of the sum so far adds injectively (counts multiply): this is the usual
   row-major/stride test, and keeps broadcast (stride 0) dims at one element. Anything else is
   materialised (when small) and summed exactly by merging AP segments per residue class;
   failing that, Cauchy–Davenport ``|A+B| >= |A|+|B|-1`` gives a lower bound.
5. A footprint never exceeds the base's numel (accesses are assumed in bounds).

A view that reinterprets its base's bytes as another element type counts base elements too:
an element of a wider type covers ``k`` consecutive base elements, one of a narrower type lies
inside one base element (which is touched whole: a memory transaction moves at least a sector,
never part of an element), see :func:`_access_set`.

:func:`union_footprint` counts distinct elements over several accesses of one base: identical
value sets once; exactly via a digit-space box union when every access is a strided box of a
common mixed radix (slices), via a boolean mask when the base has at most ``MASK_LIMIT``
elements; otherwise the largest part, as a lower bound.

:func:`distinct_tuples` counts distinct tuples of several affine forms over a statement's
executed instances (the number of distinct argument tuples a hoisted scalar subexpression must
be evaluated on); :func:`guarded_count` counts executed instances (or distinct combinations of
some loop dims among them).

Indirect (data-dependent) index entries: the elements such an access touches depend on the
index data, so only the provable minimum is counted, with ``exact=False``: the entry is taken
as one fixed value (all indices equal), i.e. the footprint of the access with the indirect
entries dropped (:func:`_flat_form` gives them stride 0). That is a lower bound whenever the
tensor's layout maps distinct indices to distinct elements (any plain tensor, any
non-overlapping view): then the touched elements determine the affine sub-index, whose
distinct values are what is counted. For an overlapping view the minimum claimed is one
element. In a union, an indirect access's elements may coincide with any others, so it adds
nothing: the union counts the exact union of the affine accesses or the largest indirect
minimum, whichever is larger (``exact=False``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache, reduce

import numpy as np

from solar.ir.affine import Affine
from solar.ir.program import Guard, Program, Statement
from solar.ir.scalar import Indirect

ENUM_LIMIT = 1 << 22  # largest set enumerated explicitly (vectorised)
MASK_LIMIT = 1 << 24  # largest span of values marked in a boolean mask by union_footprint
GRID_LIMIT = 1 << 22  # largest grid of box cells a union of boxes is counted on
# A union of segments larger than this is counted by an O(k log k) sweep over its k segments
# (exact count, opaque structure) instead of materialising and sorting every value.
SEG_MATERIALIZE_LIMIT = 1 << 16
_INF = 1 << 100  # stands in for an unbounded guard side
# memo caches that depend on the limits above (cleared when they change)
LIMIT_DEPENDENT_CACHES: list[Callable[[], None]] = []
_NP_SAFE = 1 << 61  # magnitudes above this are not handed to int64 numpy arithmetic
_PART = "·part"  # the loop dim over the base elements one element of a wider view covers


@contextmanager
def enumeration_limits(
    enum: int | None = None, mask: int | None = None, segments: int | None = None
) -> Iterator[None]:
    """Run with other enumeration limits (:data:`ENUM_LIMIT`, :data:`MASK_LIMIT`,
    :data:`SEG_MATERIALIZE_LIMIT`). Tiny limits make small shapes take the paths that large
    shapes take (no enumeration: progressions, interval solving, sweeps, lower bounds), so the
    counting oracle can check those paths at sizes it can enumerate."""
    global ENUM_LIMIT, MASK_LIMIT, SEG_MATERIALIZE_LIMIT
    old = ENUM_LIMIT, MASK_LIMIT, SEG_MATERIALIZE_LIMIT
    new = (enum, mask, segments)
    ENUM_LIMIT, MASK_LIMIT, SEG_MATERIALIZE_LIMIT = (
        o if n is None else n for o, n in zip(old, new)
    )
    _clear_caches()
    try:
        yield
    finally:
        ENUM_LIMIT, MASK_LIMIT, SEG_MATERIALIZE_LIMIT = old
        _clear_caches()


def _clear_caches() -> None:
    _domain.cache_clear()
    _form_set.cache_clear()
    for clear in LIMIT_DEPENDENT_CACHES:
        clear()


@dataclass(frozen=True)
class Footprint:
    """Distinct elements touched; ``exact=False`` means a proven lower bound."""

    elements: int
    exact: bool


# ----------------------------------------------------------------------------------------------
# integer helpers


def _cdiv(a: int, b: int) -> int:
    return -((-a) // b)


def _solve(a: int, b: int, lo: int, hi: int) -> tuple[int, int]:
    """Half-open range of integers ``x`` with ``lo <= a*x + b < hi`` (``a != 0``)."""
    if a > 0:
        return _cdiv(lo - b, a), (hi - 1 - b) // a + 1
    c = -a
    return _cdiv(b - hi + 1, c), (b - lo) // c + 1


def _solve_np(a: int, b: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    if a > 0:
        return -((b - lo) // a), (hi - 1 - b) // a + 1
    c = -a
    return -((hi - 1 - b) // c), (b - lo) // c + 1


def _bounds(coefs: Mapping[str, int], const: int, ranges: Mapping[str, tuple[int, int]]):
    lo = hi = const
    for d, a in coefs.items():
        rl, rh = ranges[d]
        lo += a * rl if a > 0 else a * (rh - 1)
        hi += a * (rh - 1) if a > 0 else a * rl
    return lo, hi


def _gcd_all(xs: Iterable[int]) -> int:
    return reduce(math.gcd, (abs(int(x)) for x in xs), 0)


def _bound_int(x) -> int:
    if isinstance(x, float):
        if math.isinf(x):
            return _INF if x > 0 else -_INF
        if x != int(x):
            raise ValueError(f"guard bound {x} is not an integer")
    return int(x)


# ----------------------------------------------------------------------------------------------
# the iteration domain: per-dim ranges plus multi-dim guards


@dataclass(frozen=True)
class _Guard:
    coefs: tuple[tuple[str, int], ...]
    const: int
    lo: int
    hi: int


@dataclass(frozen=True)
class _Domain:
    ranges: tuple[tuple[str, int, int], ...]  # (dim, lo, hi) half-open, all non-empty
    guards: tuple[_Guard, ...]  # multi-dim guards, clipped, never trivially true
    empty: bool

    @property
    def rng(self) -> dict[str, tuple[int, int]]:
        return {d: (lo, hi) for d, lo, hi in self.ranges}


def _concrete(extent) -> int:
    try:
        return int(extent)
    except TypeError:
        raise ValueError(f"footprints need concrete loop extents, got {extent!r}") from None


@lru_cache(maxsize=8192)
def _domain(extents: tuple[tuple[str, int], ...], guards: tuple[Guard, ...]) -> _Domain:
    ranges = {d: (0, n) for d, n in extents}
    empty = _Domain((), (), True)
    multi: list[tuple[dict[str, int], int, int, int]] = []
    for g in guards:
        lo, hi = _bound_int(g.lo), _bound_int(g.hi)
        e = g.expr
        unknown = set(e.dims) - ranges.keys()
        if unknown:
            raise ValueError(f"guard {g} uses loop dims {sorted(unknown)} not in the nest")
        if lo >= hi:
            return empty
        if e.is_const:
            if not lo <= e.const < hi:
                return empty
        elif len(e.terms) == 1:
            ((d, a),) = e.terms
            xl, xh = _solve(a, e.const, lo, hi)
            rl, rh = ranges[d]
            ranges[d] = (max(rl, xl), min(rh, xh))
        else:
            multi.append((e.coefs, e.const, lo, hi))
    if any(lo >= hi for lo, hi in ranges.values()):
        return empty
    out = []
    for coefs, const, lo, hi in multi:
        emin, emax = _bounds(coefs, const, ranges)
        lo2, hi2 = max(lo, emin), min(hi, emax + 1)
        if lo2 >= hi2:
            return empty
        if lo2 == emin and hi2 == emax + 1:
            continue
        out.append(_Guard(tuple(sorted(coefs.items())), const, lo2, hi2))
    return _Domain(tuple((d, lo, hi) for d, (lo, hi) in ranges.items()), tuple(out), False)


def _statement_domain(st: Statement) -> _Domain:
    ext = tuple((d.name, _concrete(d.extent)) for d in st.dims)
    return _domain(ext, tuple(st.guards))


def _components(dims: Iterable[str], guards: Sequence[_Guard]) -> list[tuple[list[str], list]]:
    """Connected components of loop dims under shared guards, with their guards."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for d in dims:
        parent.setdefault(d, d)
    for g in guards:
        ds = [d for d, _ in g.coefs]
        for d in ds:
            parent.setdefault(d, d)
        for d in ds[1:]:
            parent[find(d)] = find(ds[0])
    comps: dict[str, tuple[list[str], list]] = {}
    for d in parent:
        comps.setdefault(find(d), ([], []))[0].append(d)
    for g in guards:
        comps[find(g.coefs[0][0])][1].append(g)
    return list(comps.values())


# ----------------------------------------------------------------------------------------------
# value sets: factors of an injective Minkowski sum


@dataclass(frozen=True, eq=False)
class _F:
    """A set of integers with minimum 0 (or a lower bound of it, for ``opq``).

    ``ap``: ``{step·i : i < n}``; ``vals``: explicit sorted values; ``opq``: only its count
    (exact or a lower bound), an upper bound of its diameter and a common divisor ``g`` of all
    differences (so ``g`` is a lower bound of the minimum gap).
    """

    kind: str
    n: int
    diam: int
    gap: int
    g: int
    exact: bool = True
    step: int = 0
    vals: np.ndarray | None = None

    def key(self) -> tuple:
        if self.kind == "ap":
            return ("ap", self.step, self.n)
        if self.kind == "vals":
            return ("vals", self.n, self.vals.tobytes())  # type: ignore[union-attr]
        return ("opq", id(self))


def _ap(step: int, n: int) -> _F | None:
    if n <= 1:
        return None
    return _F("ap", n, step * (n - 1), step, step, True, step)


def _vals(v: np.ndarray) -> tuple[int, _F | None]:
    """``(min, factor)`` of a sorted array of distinct values."""
    if v.size == 0:
        return 0, _F("opq", 0, 0, 1, 1, True)
    lo = int(v[0])
    if v.size == 1:
        return lo, None
    v = v - lo
    d = np.diff(v)
    g = int(np.gcd.reduce(d))
    if int(d.min()) == int(d.max()):
        return lo, _ap(g, int(v.size))
    return lo, _F("vals", int(v.size), int(v[-1]), int(d.min()), g, True, 0, v)


def _opq(n: int, exact: bool, diam: int, g: int) -> _F | None:
    if n == 1 and exact:
        return None
    return _F("opq", n, max(diam, 0), max(g, 1), max(g, 1), exact)


def _values(f: _F) -> np.ndarray:
    if f.kind == "ap":
        return np.arange(f.n, dtype=np.int64) * f.step
    assert f.vals is not None
    return f.vals


def _materialize(fs: Sequence[_F], limit: int | None = None) -> np.ndarray | None:
    """Sorted values of an injective sum (minimum 0), if exact and at most ``limit``
    (default :data:`ENUM_LIMIT`)."""
    limit = ENUM_LIMIT if limit is None else limit
    if any(f.kind == "opq" for f in fs) or math.prod(f.n for f in fs) > limit:
        return None
    if sum(f.diam for f in fs) >= _NP_SAFE:
        return None
    v = np.zeros(1, dtype=np.int64)
    for f in fs:
        v = (v[:, None] + _values(f)[None, :]).ravel()
    v.sort()
    return v


def _injective(fs: Sequence[_F]) -> bool:
    """A sum is injective when each set's minimum gap exceeds the diameter of those below."""
    d = 0
    for f in fs:
        if f.gap <= d:
            return False
        d += f.diam
    return True


def _runs(v: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Maximal runs ``start + step·[0, len)`` of a sorted array."""
    if v.size == 0:
        return v, v
    brk = np.flatnonzero(np.diff(v) != step) + 1
    starts = np.concatenate(([0], brk))
    ends = np.concatenate((brk, [v.size]))
    return v[starts], (ends - starts).astype(np.int64)


def _seg_union(starts: np.ndarray, step: int, lens: np.ndarray) -> tuple[int, _F | None]:
    """``(min, factor)`` of the union of APs ``start + step·[0, len)`` (exact)."""
    keep = lens > 0
    starts, lens = starts[keep], lens[keep]
    if starts.size == 0:
        return 0, _F("opq", 0, 0, 1, 1, True)
    if step == 0 or int(lens.max()) == 1:
        return _vals(np.unique(starts))
    single = _single_run(starts, step, lens)
    if single is not None:
        return single
    total = int(lens.sum())
    if total <= SEG_MATERIALIZE_LIMIT:  # small: keep the values (exact structure for later sums)
        offs = np.repeat(np.cumsum(lens) - lens, lens)
        v = np.repeat(starts, lens) + step * (np.arange(total, dtype=np.int64) - offs)
        return _vals(np.unique(v))
    r, q = starts % step, starts // step
    order = np.lexsort((q, r))
    r, q, e = r[order], q[order], q[order] + lens[order]
    cls = np.concatenate(([0], np.cumsum(r[1:] != r[:-1])))
    qmin = int(q.min())
    span = int(e.max()) - qmin + 1
    if int(cls[-1]) * span < _NP_SAFE:
        qo = q - qmin + cls * span
        eo = e - qmin + cls * span
        pm = np.maximum.accumulate(eo)
        prev = np.concatenate((qo[:1], pm[:-1]))
        count = int(np.maximum(0, eo - np.maximum(qo, prev)).sum())
    else:  # too many residue classes for one offset sweep: one sweep per class
        count = 0
        bounds = np.flatnonzero(np.diff(cls)) + 1
        for qs, es in zip(np.split(q, bounds), np.split(e, bounds), strict=True):
            pm = np.maximum.accumulate(es)
            prev = np.concatenate((qs[:1], pm[:-1]))
            count += int(np.maximum(0, es - np.maximum(qs, prev)).sum())
    lo = int(starts.min())
    hi = int((starts + step * (lens - 1)).max())
    g = math.gcd(step, int(np.gcd.reduce(starts - lo)))
    return lo, _opq(count, True, hi - lo, g)


def _single_run(starts: np.ndarray, step: int, lens: np.ndarray) -> tuple[int, _F | None] | None:
    """The union when the segments share one residue class and chain into one run (the causal
    triangle: ``[0, l]`` for every ``l``): one AP, found in O(k log k) for k segments."""
    r = starts % step
    if (r != r[0]).any():
        return None
    q = starts // step
    order = np.argsort(q, kind="stable")
    q, e = q[order], q[order] + lens[order]
    reach = np.maximum.accumulate(e)
    if (q[1:] > reach[:-1]).any():
        return None
    lo_q, hi_q = int(q[0]), int(reach[-1])
    return lo_q * step + int(r[0]), _ap(step, hi_q - lo_q)


def _sum_lb(fs: Sequence[_F], x: _F) -> _F | None:
    """Cauchy–Davenport: ``|A+B| >= |A| + |B| - 1`` for non-empty integer sets."""
    na = math.prod(f.n for f in fs)
    n = na + x.n - 1 if na > 0 and x.n > 0 else 0
    diam = sum(f.diam for f in fs) + x.diam
    return _opq(n, False, diam, _gcd_all([*(f.g for f in fs), x.g]))


def _add(fs: list[_F], x: _F) -> tuple[int, list[_F]]:
    """Add set ``x`` to the injective sum ``fs``: ``(shift, new factors)``."""
    if not fs:
        return 0, [x]
    top = fs[-1]
    if top.kind == "ap" and x.kind == "ap":
        for a, b in ((top, x), (x, top)):
            if b.step % a.step == 0 and b.step // a.step <= a.n:
                m = _ap(a.step, (b.n - 1) * (b.step // a.step) + a.n)
                cand = [*fs[:-1], m] if m else fs[:-1]
                if _injective(cand):
                    return 0, cand
    for pos in range(len(fs), -1, -1):
        cand = [*fs[:pos], x, *fs[pos:]]
        if _injective(cand):
            return 0, cand
    # not injective: sum exactly through materialised values, else a lower bound
    v = _materialize(fs)
    if v is not None and x.kind != "opq" and sum(f.diam for f in fs) + x.diam < _NP_SAFE:
        if x.kind == "ap":
            lo, f = _seg_union(v, x.step, np.full(v.size, x.n, dtype=np.int64))
            return lo, [f] if f else []
        s = int(np.gcd.reduce(np.diff(v))) if v.size > 1 else x.g
        vs, vl = _runs(v, s)
        xv = _values(x)
        xs, xl = _runs(xv, s) if x.g == s else (xv, np.ones(xv.size, dtype=np.int64))
        if vs.size * xs.size <= ENUM_LIMIT:
            starts = (vs[:, None] + xs[None, :]).ravel()
            lens = (vl[:, None] + xl[None, :] - 1).ravel()
            lo, f = _seg_union(starts, s, lens)
            return lo, [f] if f else []
    f = _sum_lb(fs, x)
    return 0, [f] if f else []


@dataclass(frozen=True, eq=False)
class _Set:
    """``const + Σ factors`` (an injective sum): the value set of one affine form."""

    const: int
    factors: tuple[_F, ...]

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
        return (self.const, tuple(f.key() for f in self.factors))


def _fold(const: int, parts: list[_F]) -> _Set:
    zero = [p for p in parts if p.n == 0]
    if zero:
        return _Set(0, tuple(zero))
    parts = sorted(parts, key=lambda f: (f.gap, f.diam))
    fs: list[_F] = []
    for p in parts:
        shift, fs = _add(fs, p)
        const += shift
    return _Set(const, tuple(fs))


def _ap_part(f: int, lo: int, hi: int) -> tuple[int, _F | None]:
    """``{f·x : lo <= x < hi}`` as ``(min, factor)``."""
    return (f * lo if f > 0 else f * (hi - 1)), _ap(abs(f), hi - lo)


# ----------------------------------------------------------------------------------------------
# guarded groups


def _group(
    dims: list[str], rng: dict[str, tuple[int, int]], guards: list[_Guard], f: dict[str, int]
) -> tuple[int, _F | None]:
    """Values of ``Σ f_d·x_d`` over a group of loop dims joined by guards: ``(min, factor)``."""
    prop = _proportional(dims, rng, guards, f)
    if prop is not None:
        return prop
    inner = max(dims, key=lambda d: (rng[d][1] - rng[d][0], f.get(d, 0) != 0))
    others = [d for d in dims if d != inner]
    size = math.prod(rng[d][1] - rng[d][0] for d in others)
    mags = [abs(g.const) + abs(g.lo) + abs(g.hi) for g in guards]
    mags += [abs(c) * max(map(abs, rng[d])) for g in guards for d, c in g.coefs]
    mags += [abs(f.get(d, 0)) * max(map(abs, rng[d])) for d in dims]
    if max(mags) * (len(dims) + 2) >= _NP_SAFE:  # beyond int64 enumeration: nothing proven
        return 0, _F("opq", 0, 0, 1, 1, False)
    if size <= ENUM_LIMIT:
        return _inner_eval(rng, guards, f, inner, others)
    # Too many combinations: evaluate a sub-box (a subset of the instances, so a lower bound).
    sub = dict(rng)
    while math.prod(sub[d][1] - sub[d][0] for d in others) > ENUM_LIMIT:
        d = max(others, key=lambda d: sub[d][1] - sub[d][0])
        lo, hi = sub[d]
        sub[d] = (lo, lo + max(1, (hi - lo) // 2))
    lo, fac = _inner_eval(sub, guards, f, inner, others)
    n = fac.n if fac else 1
    if not any(f.get(d) for d in dims) and n == 1:
        return 0, None  # existential only, and a witness instance was found: exactly {0}
    diam = _bounds({d: c for d, c in f.items() if d in dims}, 0, rng)
    g = _gcd_all(f.get(d, 0) for d in dims)
    return diam[0], _opq(n, False, diam[1] - diam[0], g) or _F("opq", 1, 0, 1, 1, False)


def _proportional(dims, rng, guards, f) -> tuple[int, _F | None] | None:
    """When ``F`` and every guard are multiples of one linear form ``L``: an AP cut by an
    interval (the padding case), exact; None when not applicable."""
    fl = {d: f[d] for d in dims if f.get(d)}
    if set(fl) != set(dims):
        return None
    ds = sorted(fl)
    gf = _gcd_all(fl.values())
    k = gf if fl[ds[0]] > 0 else -gf
    lin = {d: fl[d] // k for d in ds}
    llo, lhi = -_INF, _INF
    for g in guards:
        gc = dict(g.coefs)
        if set(gc) != set(ds) or gc[ds[0]] % lin[ds[0]]:
            return None
        m = gc[ds[0]] // lin[ds[0]]
        if any(gc[d] != m * lin[d] for d in ds):
            return None
        a, b = _solve(m, g.const, g.lo, g.hi)
        llo, lhi = max(llo, a), min(lhi, b)
    c0 = 0
    parts = []
    for d in ds:
        lo, p = _ap_part(lin[d], *rng[d])
        c0 += lo
        if p:
            parts.append(p)
    s = _fold(c0, parts)
    if not s.factors or (len(s.factors) == 1 and s.factors[0].kind == "ap"):
        step = s.factors[0].step if s.factors else 1
        n = s.factors[0].n if s.factors else 1
        i0 = max(0, _cdiv(llo - s.const, step))
        i1 = min(n, (lhi - 1 - s.const) // step + 1)
        if i1 <= i0:
            return 0, _F("opq", 0, 0, 1, 1, True)
        start = s.const + step * i0
        cnt = i1 - i0
        lo = k * start if k > 0 else k * (start + step * (cnt - 1))
        return lo, _ap(abs(k) * step, cnt)
    v = _materialize(s.factors)
    if v is None or abs(s.const) + int(v[-1]) >= _NP_SAFE // max(1, gf):
        return None
    v = v + s.const
    v = v[(v >= llo) & (v < lhi)] * k
    return _vals(np.sort(v))


def _inner_eval(rng, guards, f, inner, others) -> tuple[int, _F | None]:
    """Exact values with ``others`` enumerated and ``inner`` solved as an interval."""
    shape = tuple(rng[d][1] - rng[d][0] for d in others)
    size = math.prod(shape)
    axes = {
        d: np.arange(*rng[d], dtype=np.int64).reshape(
            [-1 if i == j else 1 for j in range(len(others))]
        )
        for i, d in enumerate(others)
    }

    def lin(coefs: Mapping[str, int], const: int) -> np.ndarray:
        acc = np.full(shape, const, dtype=np.int64)
        for d, c in coefs.items():
            if d in axes and c:
                acc = acc + c * axes[d]
        return acc.reshape(size)

    rl, rh = rng[inner]
    xl = np.full(size, rl, dtype=np.int64)
    xh = np.full(size, rh, dtype=np.int64)
    ok = np.ones(size, dtype=bool)
    for g in guards:
        gc = dict(g.coefs)
        base = lin(gc, g.const)
        a = gc.get(inner, 0)
        if a == 0:
            ok &= (base >= g.lo) & (base < g.hi)
        else:
            lo, hi = _solve_np(a, base, g.lo, g.hi)
            np.maximum(xl, lo, out=xl)
            np.minimum(xh, hi, out=xh)
    ok &= xl < xh
    fi = f.get(inner, 0)
    if fi == 0 and ok.all():  # every combination of the others occurs: their plain image
        c0, parts = 0, []
        for d in others:
            lo, p = _ap_part(f.get(d, 0), *rng[d]) if f.get(d, 0) else (0, None)
            c0 += lo
            if p:
                parts.append(p)
        folded = _fold(c0, parts)
        if len(folded.factors) <= 1:
            return folded.const, (folded.factors[0] if folded.factors else None)
    v = lin(f, 0)[ok]
    if fi == 0:
        return _vals(np.unique(v))
    xl, xh = xl[ok], xh[ok]
    starts = v + fi * (xl if fi > 0 else xh - 1)
    return _seg_union(starts, abs(fi), xh - xl)


# ----------------------------------------------------------------------------------------------
# value sets of affine forms over a domain


@lru_cache(maxsize=16384)
def _form_set(dom: _Domain, terms: tuple[tuple[str, int], ...], const: int) -> _Set:
    if dom.empty:
        return _Set(0, (_F("opq", 0, 0, 1, 1, True),))
    rng = dom.rng
    f = dict(terms)
    parts: list[_F] = []
    for dims, guards in _components(f, dom.guards):
        if not guards:
            (d,) = dims
            lo, p = _ap_part(f[d], *rng[d])
        else:
            lo, p = _group(dims, rng, guards, f)
        const += lo
        if p:
            parts.append(p)
    return _fold(const, parts)


def has_indirect(index: Sequence[object]) -> bool:
    return any(isinstance(e, Indirect) for e in index)


def injective_layout(program: Program, tensor: str) -> bool:
    """Whether distinct indices of ``tensor`` address distinct storage elements (a plain
    tensor, or a view whose strides do not overlap)."""
    decl = program.tensors[tensor]
    if decl.view is None:
        return True
    span = 0  # largest offset reachable with the smaller strides
    strides = zip(decl.shape, decl.view.strides, strict=True)
    for stride, n in sorted((abs(st), n) for n, st in strides if n > 1):
        if stride <= span:
            return False
        span += stride * (n - 1)
    return True


def _flat_form(program: Program, tensor: str, index: Sequence[Affine | Indirect]) -> Affine:
    """Storage offset of ``tensor[index]`` as an affine form; indirect entries contribute
    nothing (stride 0: the provable-minimum convention of the module docstring)."""
    decl = program.tensors[tensor]
    if len(index) != len(decl.shape):
        raise ValueError(f"{tensor} has {len(decl.shape)} dims, indexed by {len(index)}")
    if decl.view is not None:
        strides, flat = decl.view.strides, Affine((), decl.view.offset)
    else:
        strides, acc = [], 1
        for n in reversed(decl.shape):
            strides.append(acc)
            acc *= n
        strides, flat = tuple(reversed(strides)), Affine()
    for s, e in zip(strides, index, strict=True):
        if s and not isinstance(e, Indirect):
            flat = flat + Affine.of(e) * int(s)
    return flat


def _access_set(program: Program, st: Statement, tensor: str, index) -> _Set:
    """Value set of the base elements ``tensor[index]`` touches. A view that reinterprets its
    base as a wider type (``view_as_complex``) covers ``k`` base elements per element: the
    form ``k·F + j`` with a part dim ``j < k``; a narrower one (``view_as_real``, ``view(uint8)``)
    touches the base element ``floor(F / k)``, an affine form when the terms not divisible by
    ``k`` stay inside one element (a trailing part index), else counted as a lower bound."""
    flat = _flat_form(program, tensor, index)
    dom = _statement_domain(st)
    size = program.tensors[tensor].itemsize
    base = program.tensors[program.base(tensor)].itemsize
    if size > base:
        k = size // base
        ext = tuple((d.name, _concrete(d.extent)) for d in st.dims) + ((_PART, k),)
        wide = flat * k + Affine.of(_PART)
        return _form_set(_domain(ext, tuple(st.guards)), wide.terms, wide.const)
    if size < base and not dom.empty:
        k = base // size
        rest = {d: a for d, a in flat.terms if a % k}
        lo, hi = _bounds(rest, flat.const % k, dom.rng)
        if lo >= 0 and hi < k:
            terms = tuple((d, a // k) for d, a in flat.terms if d not in rest)
            return _form_set(dom, terms, flat.const // k)
        return _floor_set(_form_set(dom, flat.terms, flat.const), k)
    return _form_set(dom, flat.terms, flat.const)


def _floor_set(s: _Set, k: int) -> _Set:
    """``{floor(v / k) : v in s}``: exact for an interval or a set small enough to enumerate,
    else a lower bound (each of its values holds at most ``k`` values of ``s``)."""
    diam = sum(f.diam for f in s.factors)
    if s.exact and all(f.kind == "ap" and f.step == 1 for f in s.factors) and len(s.factors) < 2:
        n = (s.const + diam) // k - s.const // k + 1
        return _Set(s.const // k, tuple(f for f in [_ap(1, n)] if f))
    v = _materialize(s.factors) if s.exact else None
    if v is not None:
        lo, f = _vals(np.unique((v + s.const) // k))
        return _Set(lo, (f,) if f else ())
    return _Set(s.const // k, (_opq(_cdiv(s.count, k), False, diam // k + 1, 1),))


def _indirect_min(program: Program, st: Statement, tensor: str, index) -> int:
    """Provable minimum of the elements an access with indirect entries touches."""
    n = _access_set(program, st, tensor, index).count  # exact, or itself a lower bound
    if not injective_layout(program, tensor):
        n = min(n, 1)
    return min(n, program.tensors[program.base(tensor)].numel)


def access_footprint(
    program: Program, st: Statement, tensor: str, index: tuple[Affine | Indirect, ...]
) -> Footprint:
    """Distinct storage elements of ``tensor``'s base that ``tensor[index]`` touches over the
    executed instances of ``st`` (with indirect entries: the provable minimum, inexact)."""
    numel = program.tensors[program.base(tensor)].numel
    if has_indirect(index):
        return Footprint(_indirect_min(program, st, tensor, index), False)
    s = _access_set(program, st, tensor, index)
    return Footprint(min(s.count, numel), s.exact)


# ----------------------------------------------------------------------------------------------
# unions


def union_footprint(
    program: Program, accesses: Sequence[tuple[Statement, str, tuple[Affine, ...]]]
) -> Footprint:
    """Distinct elements of one storage base touched by any of ``accesses``."""
    if not accesses:
        return Footprint(0, True)
    bases = {program.base(t) for _, t, _ in accesses}
    if len(bases) != 1:
        raise ValueError(f"union_footprint needs accesses of one storage base, got {bases}")
    numel = program.tensors[bases.pop()].numel
    indirect = [a for a in accesses if has_indirect(a[2])]
    if indirect:
        direct = union_footprint(program, [a for a in accesses if not has_indirect(a[2])])
        if direct.exact and direct.elements >= numel:  # everything: nothing more to add
            return Footprint(numel, True)
        lb = max(_indirect_min(program, *a) for a in indirect)
        return Footprint(max(direct.elements, lb), False)
    uniq: dict[tuple, _Set] = {}
    for st, t, idx in _merge_complementary(program, accesses):
        s = _access_set(program, st, t, idx)
        uniq.setdefault(s.key(), s)
    sets = [s for s in uniq.values() if s.count > 0 or not s.exact]
    if not sets:
        return Footprint(0, True)
    if any(s.exact and s.count >= numel for s in sets):
        return Footprint(numel, True)
    fp = _union_sets(sets)
    return Footprint(min(fp.elements, numel), fp.exact)


def _merge_complementary(program: Program, accesses: Sequence[tuple]) -> list[tuple]:
    """Accesses of one affine form over one loop box whose guards differ only in one guard
    on a common expression, with intervals covering that expression's range (a triangle and
    its complement: ``tril``), merged into one access without that guard."""
    groups: dict[tuple, list[tuple]] = {}
    for st, t, idx in accesses:
        form, size = _flat_form(program, t, idx), program.tensors[t].itemsize
        key = (form, size, tuple((d.name, int(d.extent)) for d in st.dims))
        groups.setdefault(key, []).append((st, t, idx))
    out = []
    for group in groups.values():
        merged = _merged(group) if len(group) > 1 else None
        out.extend([merged] if merged is not None else group)
    return out


def _merged(group: list[tuple]):
    """The access of ``group`` (see :func:`_merge_complementary`) without its split guard,
    or None."""
    first = group[0][0]
    for g in first.guards:
        rest = [h for h in first.guards if h != g]
        intervals = []
        for st, _, _ in group:
            split = [h for h in st.guards if h.expr == g.expr]
            if len(split) != 1 or set(st.guards) - {split[0]} != set(rest):
                break
            intervals.append((_bound_int(split[0].lo), _bound_int(split[0].hi)))
        else:
            lo, hi = g.expr.bounds({d.name: int(d.extent) for d in first.dims})
            reach = lo
            for a, b in sorted(intervals):
                if a > reach:
                    break
                reach = max(reach, b)
            if reach > hi:
                st, t, idx = group[0]
                return replace(st, guards=tuple(rest)), t, idx
    return None


def _union_sets(sets: Sequence[_Set]) -> Footprint:
    """Distinct values in a union of value sets (exact, or a lower bound)."""
    if len(sets) == 1:
        return Footprint(sets[0].count, sets[0].exact)
    n = _grid_union(sets)
    if n is not None:
        return Footprint(n, True)
    split = _common_outer(sets)
    if split is not None:
        outer, inner = split
        fp = _union_sets(inner)
        return Footprint(outer * fp.elements, fp.exact)
    lb = max(s.count for s in sets)
    lo = min(s.const for s in sets)
    hi = max(s.const + sum(f.diam for f in s.factors) for s in sets)
    if hi - lo + 1 <= MASK_LIMIT:
        mask = np.zeros(hi - lo + 1, dtype=bool)
        exact = True
        for s in sets:
            v = _materialize(s.factors, MASK_LIMIT) if s.exact else None
            if v is None:
                exact = False
                continue
            mask[v + (s.const - lo)] = True
        return Footprint(max(int(mask.sum()), lb), exact)
    return Footprint(lb, False)


def _common_outer(sets: Sequence[_Set]) -> tuple[int, list[_Set]] | None:
    """Factor a union through the progressions every set shares at its outside: with ``B``
    dividing their steps and every set's remaining part (its offset from the smallest start
    included) shorter than ``B``, ``|∪ (c_i + I_i + O)| = |O| · |∪ (c_i - c + I_i)|`` (each
    element splits uniquely into a multiple of ``B`` and a rest below ``B``). Returns
    ``(|O|, the inner sets)`` or None."""
    common = set.intersection(*({f.key() for f in s.factors if f.kind == "ap"} for s in sets))
    c0 = min(s.const for s in sets)
    for block in sorted({k[1] for k in common}):
        outer = {k for k in common if k[1] >= block}
        if any(k[1] % block for k in outer):
            continue
        inner = []
        for s in sets:
            keep = tuple(f for f in s.factors if f.key() not in outer)
            if s.const - c0 + sum(f.diam for f in keep) >= block:
                break
            inner.append(_Set(s.const - c0, keep))
        else:
            return math.prod(k[2] for k in outer), inner
    return None


def _grid_union(sets: Sequence[_Set]) -> int | None:
    """Exact size of a union of strided boxes sharing one mixed radix (slices of a tensor)."""
    if not all(s.exact and all(f.kind == "ap" for f in s.factors) for s in sets):
        return None
    steps = sorted({1, *(f.step for s in sets for f in s.factors)})
    if any(b % a for a, b in zip(steps, steps[1:], strict=False)):
        return None
    radix = [b // a for a, b in zip(steps, steps[1:], strict=False)] + [None]
    boxes = []
    for s in sets:
        box = _digit_box(s, steps, radix)
        if box is None:
            return None
        boxes.append(box)
    cuts = [np.unique([b[t][i] for b in boxes for i in (0, 1)]) for t in range(len(steps))]
    if math.prod(c.size - 1 for c in cuts) > GRID_LIMIT:
        return None
    grid = np.zeros([c.size - 1 for c in cuts], dtype=bool)
    for b in boxes:
        grid[
            tuple(
                slice(int(np.searchsorted(c, lo)), int(np.searchsorted(c, hi)))
                for c, (lo, hi) in zip(cuts, b, strict=True)
            )
        ] = True
    vol = grid.astype(np.int64)
    for c in cuts:
        vol = np.tensordot(np.diff(c).astype(np.int64), vol, axes=([0], [0]))
    return int(vol)


def _digit_box(s: _Set, steps: list[int], radix: list[int | None]) -> list | None:
    """``s`` as a box of digit ranges in the mixed radix; a progression longer than its digit
    (merged rows: ``{0..k·r}`` at step ``t``) spills whole rows into the next digit. None when
    ``s`` is not such a box."""
    if s.const < 0:
        return None
    rest, digits = s.const, []
    for r in radix:
        d, rest = (rest % r, rest // r) if r else (rest, 0)
        digits.append(d)
    span = [1] * len(steps)
    for f in s.factors:
        i, n = steps.index(f.step), f.n
        while radix[i] is not None and digits[i] + n > radix[i]:
            r = radix[i]
            if digits[i] or n % r or span[i] != 1:
                return None
            span[i], n, i = r, n // r, i + 1
        if span[i] != 1:
            return None
        span[i] = n
    return [(d, d + n) for d, n in zip(digits, span, strict=True)]


# ----------------------------------------------------------------------------------------------
# instance counts and distinct tuples (used by the op counts)


def _project_count(dom: _Domain, dims: Iterable[str]) -> Footprint:
    """Distinct combinations of ``dims`` among the domain's points."""
    if dom.empty:
        return Footprint(0, True)
    rng = dom.rng
    want = set(dims)
    total, exact = 1, True
    for comp, guards in _components(want, dom.guards):
        used = [d for d in comp if d in want]
        if not guards:
            total *= math.prod(rng[d][1] - rng[d][0] for d in used)
            continue
        f, acc = {}, 1
        for d in sorted(used, key=lambda d: rng[d][1] - rng[d][0]):
            f[d] = acc
            acc *= rng[d][1] - rng[d][0]
        _, p = _group(comp, rng, guards, f)
        n = p.n if p else 1
        if p and not p.exact:
            exact = False
        if n == 0:
            return Footprint(0, p.exact if p else True)
        total *= n
    return Footprint(total, exact)


def guarded_count(
    extents: Mapping[str, int], guards: Sequence[Guard], dims: Iterable[str] | None = None
) -> Footprint:
    """Executed instances of the loop box under ``guards`` (all ``lo <= expr < hi``), or, with
    ``dims``, the distinct combinations of those loop dims among the executed instances."""
    dom = _domain(tuple((d, _concrete(n)) for d, n in extents.items()), tuple(guards))
    return _project_count(dom, extents if dims is None else dims)


def statement_instances(st: Statement) -> Footprint:
    """Executed instances of a statement (guards applied)."""
    return _project_count(_statement_domain(st), st.extents)


def _injective_form(terms: Mapping[str, int], rng: Mapping[str, tuple[int, int]]) -> bool:
    parts = [p for d, c in terms.items() if (p := _ap_part(c, *rng[d])[1])]
    s = _fold(0, parts)
    return s.exact and s.count == math.prod(rng[d][1] - rng[d][0] for d in terms)


def _widths(
    dims: Iterable[str], fixed: set[str], rng: Mapping[str, tuple[int, int]], guards
) -> dict[str, tuple[int, int]]:
    """Per dim of ``dims``, a range ``[0, w)`` whose width bounds the values the dim takes
    among the executed instances once the ``fixed`` dims are given: its loop range, narrowed by
    every guard over that dim and fixed dims only (``lo <= a·x + b < hi`` leaves at most
    ``ceil((hi - lo) / |a|)`` values of ``x``)."""
    out = {}
    for d in dims:
        w = rng[d][1] - rng[d][0]
        for g in guards:
            coefs = dict(g.coefs)
            if d in coefs and set(coefs) <= fixed | {d}:
                w = min(w, _cdiv(g.hi - g.lo, abs(coefs[d])))
        out[d] = (0, w)
    return out


def distinct_tuples(st: Statement, forms: Sequence[Affine]) -> Footprint:
    """Distinct values of the tuple ``(form_1(x), ..., form_k(x))`` over the executed
    instances ``x`` of ``st``: how often a function of those values must be evaluated."""
    dom = _statement_domain(st)
    forms = list(dict.fromkeys(f for f in forms if not f.is_const))
    if dom.empty:
        return Footprint(0, True)
    dims = {d for f in forms for d in f.dims}
    rng = dom.rng
    det: set[str] = set()
    changed = True
    while changed:
        changed = False
        for f in forms:
            rest = {d: c for d, c in f.terms if d not in det}
            if rest and _injective_form(rest, _widths(rest, det, rng, dom.guards)):
                det |= rest.keys()
                changed = True
    if dims <= det:
        return _project_count(dom, dims)
    if len(forms) == 1:
        s = _form_set(dom, forms[0].terms, forms[0].const)
        return Footprint(s.count, s.exact)
    flat, radix = Affine(), 1
    for f in forms:
        lo, hi = _bounds(f.coefs, 0, rng)
        flat = flat + (Affine(f.terms) - lo) * radix
        radix *= hi - lo + 1
    if radix < _NP_SAFE >> 8:
        s = _form_set(dom, flat.terms, 0)
        return Footprint(s.count, s.exact)
    lbs = [_project_count(dom, det).elements]
    for f in forms:
        lbs.append(_form_set(dom, f.terms, f.const).count)
    return Footprint(max(lbs), False)
