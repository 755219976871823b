"""Where a formula holds, for a reader: a :class:`~solar.algebra.region.Region` reduced to
one integer interval per size and the relations left over (:class:`Condition`).

A region is the conjunction of every guard decided while computing: often dozens of
inequalities in one size (``seq <= 8719.04``, ``seq < 442.01``, ``Ne(16*seq - 16, 0)``), most
implied by the others. :func:`condition` folds each guard in one size into that size's
integer interval (sizes are positive integers) and drops a guard that excludes no integer of
it; guards in several sizes, and those sympy cannot solve in closed form (``floor``,
``Mod``), stay as they are. The result says exactly what the region says: every boundary is
checked against the guard's own numeric test (the tolerance :mod:`solar.algebra.region`
applies to guards between times), so a point is inside the condition exactly when it is
inside the region.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy

from solar.algebra.region import Guard, Region, guard_holds, tested_form

__all__ = ["Condition", "condition"]


@dataclass(frozen=True)
class Condition:
    """Per size ``(size, lo, hi)`` (``hi`` None: no upper end), the relations that are not
    one size's interval (``rest``), or ``empty`` (no size satisfies the region)."""

    bounds: tuple[tuple[sympy.Symbol, int, int | None], ...] = ()
    rest: tuple[sympy.Basic, ...] = ()
    empty: bool = False
    #: ``(monomial, lo, hi)``: products of sizes (``B*S**2``) between integer bounds (None: open)
    products: tuple[tuple[sympy.Expr, int | None, int | None], ...] = ()

    def boolean(self) -> sympy.Basic:
        """The condition as one sympy boolean (``True`` where nothing is required)."""
        if self.empty:
            return sympy.false
        parts: list[sympy.Basic] = []
        # relations built unevaluated: sympy would ask its assumptions of each (slow, no gain)
        for x, lo, hi in (*((s, lo if lo > 1 else None, hi) for s, lo, hi in self.bounds),
                          *self.products):  # fmt: skip
            if lo is not None:
                parts.append(sympy.Ge(x, lo, evaluate=False))
            if hi is not None:
                parts.append(sympy.Le(x, hi, evaluate=False))
        if not parts and not self.rest:
            return sympy.true
        if len(parts) + len(self.rest) == 1:
            return (*parts, *self.rest)[0]
        # not evaluated: sympy's And would sort and rewrite every relation (slow, no gain)
        return sympy.And(*parts, *self.rest, evaluate=False)

    def join(self, other: Condition) -> Condition | None:
        """The union of two conditions where it is one condition again (the same relations,
        the same intervals but for one size, whose two intervals touch or overlap), else
        None."""
        if self.empty:
            return other
        if other.empty:
            return self
        if set(self.rest) != set(other.rest) or set(self.products) != set(other.products):
            return None
        mine = {s: (lo, hi) for s, lo, hi in self.bounds}
        theirs = {s: (lo, hi) for s, lo, hi in other.bounds}
        if set(mine) != set(theirs):
            return None
        differ = [s for s in mine if mine[s] != theirs[s]]
        if len(differ) > 1:
            return None
        if not differ:
            return self
        s = differ[0]
        (a_lo, a_hi), (b_lo, b_hi) = sorted((mine[s], theirs[s]), key=lambda t: t[0])
        if a_hi is not None and a_hi + 1 < b_lo:
            return None  # a gap between them
        hi = None if a_hi is None or b_hi is None else max(a_hi, b_hi)
        bounds = tuple((t, a_lo, hi) if t == s else (t, lo, h) for t, lo, h in self.bounds)
        return Condition(bounds, self.rest, products=self.products)


#: the most integers of one size a guard sympy cannot solve is tested at, one by one
_TESTED = 1 << 21


@functools.lru_cache(maxsize=1 << 12)
def condition(region: Region) -> Condition:
    """``region`` reduced for a reader (see the module docstring)."""
    spans: dict[sympy.Symbol, tuple[int, int | None]] = {s: (1, None) for s in region.symbols}
    rest: list[sympy.Basic] = []
    products: dict[sympy.Expr, list] = {}
    for guard in dict.fromkeys(g.relation for g in region.guards):
        n = _normal(guard)
        r = guard if n is None else n
        if r is sympy.true:
            continue
        if r is sympy.false:
            return Condition(empty=True)
        free = r.free_symbols & set(spans)
        runs = _runs(r, next(iter(free))) if len(free) == 1 and n is not None else None
        if runs is None:
            r = guard  # kept as the trace wrote it
            product = _product_bound(n) if len(free) > 1 and n is not None else None
            if product is None:
                rest.append(r)
                continue
            m, lo, hi = product
            old_lo, old_hi = products.setdefault(m, [None, None])
            products[m] = [_max(lo, old_lo), _min(hi, old_hi)]
            continue
        (s,) = free
        lo, hi = spans[s]
        cut = [(max(a, lo), _min(b, hi)) for a, b in runs]
        cut = [(a, b) for a, b in cut if b is None or a <= b]
        if not cut:
            return Condition(empty=True)
        if len(cut) == 1:
            spans[s] = cut[0]
        else:
            rest.append(r)  # holds on several runs of this size: kept as it is
    kept: list[sympy.Basic] = []
    for r in rest:  # a guard in one size that sympy cannot solve: tested at every integer
        free = r.free_symbols & set(spans)
        s = next(iter(free)) if len(free) == 1 else None
        lo, hi = spans[s] if s is not None else (1, None)
        if s is None or hi is None or hi - lo > _TESTED:
            kept.append(_as_kept(r))
            continue
        xs = np.arange(lo, hi + 1)
        ok = Region((s,), (Guard(r),)).holds_many({s: xs})
        if ok.all():
            continue
        if not ok.any():
            return Condition(empty=True)
        first, last = int(np.argmax(ok)), len(ok) - 1 - int(np.argmax(ok[::-1]))
        if ok[first : last + 1].all():
            spans[s] = (lo + first, lo + last)
        else:
            kept.append(_as_kept(r))
    rest = [r for r in dict.fromkeys(kept) if r is not sympy.true]
    bounds = tuple((s, lo, hi) for s, (lo, hi) in spans.items())
    if any(lo is not None and hi is not None and lo > hi for lo, hi in products.values()):
        return Condition(empty=True)
    prods = tuple((m, lo, hi) for m, (lo, hi) in products.items())
    return Condition(bounds, tuple(rest), products=prods)


def _as_kept(r: sympy.Basic) -> sympy.Basic:
    """A guard left over, as printed: as written where solving it cancels nothing (the two
    agree to rounding), else with the test's rounding written in."""
    return r if _normal(r) is not None else tested_form(r)


@functools.lru_cache(maxsize=1 << 14)
def _normal(r: sympy.Basic) -> sympy.Basic | None:
    """``r`` as ``d (op) 0``: ``d`` its two sides' difference, like terms combined, divided by
    the product of sizes common to all its terms (sizes are positive: the relation is
    unchanged), so that ``2.4e-9*B*S < 3.8e-12*B*S**2`` becomes ``2.4e-9 - 3.8e-12*S < 0``, in
    ``S`` alone. None where that would change what the guard's test (to a relative rounding)
    says: a side that is not a sum of products as written (``c*x*(1 - k/x)``, times that cancel
    when expanded), or like terms that cancel to a millionth of themselves."""
    if not isinstance(r, sympy.core.relational.Relational):
        return None
    if sympy.expand(r.lhs) != r.lhs or sympy.expand(r.rhs) != r.rhs:
        return None
    coeffs: dict[sympy.Expr, list[sympy.Expr]] = {}
    for sign, side in ((1, r.lhs), (-1, r.rhs)):
        for term in sympy.Add.make_args(side):
            c, m = term.as_coeff_Mul()
            coeffs.setdefault(m, []).append(sign * c)
    d = sympy.S.Zero
    for m, cs in coeffs.items():
        total = sum(cs, sympy.S.Zero)
        if len(cs) > 1 and abs(float(total)) < 1e-6 * max(abs(float(c)) for c in cs):
            return None
        d += total * m
    terms = [t for t in sympy.Add.make_args(d) if not t.is_zero]
    common: dict | None = None
    for term in terms:
        powers = {b: e for b, e in term.as_powers_dict().items() if b.is_Symbol}
        common = (
            powers
            if common is None
            else {b: min(e, powers.get(b, sympy.S.Zero)) for b, e in common.items()}
        )
    common = {b: e for b, e in (common or {}).items() if e.is_positive}
    g = sympy.Mul(*(b**e for b, e in common.items()))
    lhs = sympy.expand(d / g)
    if lhs.is_number:
        return sympy.true if bool(type(r)(lhs, 0)) else sympy.false
    return type(r)(lhs, 0, evaluate=False)  # unevaluated: no assumptions asked (slow)


def _product_bound(r: sympy.Basic) -> tuple[sympy.Expr, int | None, int | None] | None:
    """``c * m + k (op) 0`` for a product of sizes ``m``: ``(M, lo, hi)`` with ``M`` ``m``'s
    power of coprime integer exponents (``sqrt(B)*S`` gives ``B*S**2``) between integer
    bounds; None for any other relation."""
    if not isinstance(r, (sympy.Le, sympy.Lt, sympy.Ge, sympy.Gt)):
        return None
    d = sympy.expand(r.lhs - r.rhs)
    k = d.as_independent(*d.free_symbols)[0]
    c, m = (d - k).as_coeff_Mul()
    powers = m.as_powers_dict()
    if not all(b.is_Symbol and e.is_Rational and e > 0 for b, e in powers.items()) or not c:
        return None
    v = float(-k / c)  # c * m op -k  <=>  m op' v  (op' flipped when c < 0)
    below = isinstance(r, (sympy.Le, sympy.Lt)) == (c > 0)  # m <= v (or <)
    strict = isinstance(r, (sympy.Lt, sympy.Gt))
    exps = [Fraction(int(e.p), int(e.q)) for e in powers.values()]
    den = math.lcm(*(e.denominator for e in exps))
    scale = Fraction(den, math.gcd(*(int(e * den) for e in exps)))  # m**scale: coprime ints
    M = sympy.Mul(*(b ** int(Fraction(int(e.p), int(e.q)) * scale) for b, e in powers.items()))
    scale = float(scale)
    if v <= 0:
        return (M, 1, None) if not below else (M, None, 0)  # always / never true for m > 0
    w = v**scale
    if below:
        hi = math.ceil(w) - 1 if strict and w == math.ceil(w) else math.floor(w)
        return M, None, hi
    lo = math.floor(w) + 1 if strict and w == math.floor(w) else math.ceil(w)
    return M, lo, None


def _max(a: int | None, b: int | None) -> int | None:
    """The larger of two lower ends (None: none)."""
    return b if a is None else a if b is None else max(a, b)


@functools.lru_cache(maxsize=1 << 14)
def _runs(r: sympy.Basic, s: sympy.Symbol) -> tuple[tuple[int, int | None], ...] | None:
    """The runs of positive integers where the guard ``r`` in the one size ``s`` holds, as
    ``(first, last)`` (``last`` None: every integer from ``first`` on), by the guard's own
    test; None where ``r`` is not a rational function of ``s`` (``floor``, ``Mod``, ...). The
    truth of ``r`` can change only at a real root of the numerator or denominator of
    ``lhs - rhs``: each is tested at the integers beside it."""
    if not isinstance(r, sympy.core.relational.Relational) or r.has(
        sympy.floor, sympy.ceiling, sympy.Mod, sympy.Min, sympy.Max, sympy.Abs
    ):
        return None
    try:
        num, den = sympy.together(r.lhs - r.rhs).as_numer_denom()
        roots = [*_real_roots(num, s), *_real_roots(den, s)]
    except (sympy.PolynomialError, TypeError, ValueError):
        return None
    edges = sorted({1, *(x for root in roots for x in (math.floor(root), math.floor(root) + 1))})
    edges = [x for x in edges if x >= 1]
    runs: list[list] = []
    for i, x in enumerate(edges):
        ok = guard_holds(r, s, x)
        nxt = edges[i + 1] if i + 1 < len(edges) else None
        # between x and the next edge no root lies: the truth at x + 1 holds up to it
        between = nxt is None or nxt > x + 1
        ok_after = guard_holds(r, s, x + 1) if between else ok
        for a, b, holds in ((x, x, ok), (x + 1, None if nxt is None else nxt - 1, ok_after)):
            if (b is not None and a > b) or (a == x + 1 and not between):
                continue
            if not holds:
                continue
            if runs and runs[-1][1] is not None and runs[-1][1] + 1 >= a:
                runs[-1][1] = b
            else:
                runs.append([a, b])
    return tuple((a, b) for a, b in runs)


def _real_roots(p: sympy.Expr, s: sympy.Symbol) -> list[float]:
    """The real roots of the polynomial ``p`` in ``s`` (numerically; none for a constant)."""
    coeffs = [float(c) for c in sympy.Poly(p, s).all_coeffs()]
    if len(coeffs) < 2:
        return []
    return [float(z.real) for z in np.roots(coeffs) if abs(z.imag) <= 1e-9 * max(1, abs(z))]


def _min(a: int | None, b: int | None) -> int | None:
    """The smaller of two upper ends (None: none)."""
    return b if a is None else a if b is None else min(a, b)
