"""Signs of integer quasi-polynomials at every positive integer point, proved by residues.

Counts of strided windows are quasi-polynomials: polynomials in the sizes and in
``floor(linear / q)`` terms (a convolution's output rows ``floor((h + 2p - k) / s) + 1``).
Whether one is at most another (which side of a ``min`` a clipped window takes, whether a
guard always holds) often depends on nothing: ``floor((h - 1) / 2) <= floor(h / 2)`` for every
``h``. sympy cannot see it; a case split can. Each size ``n`` is written ``n = P·k + j`` for
every residue ``1 <= j <= P`` (``k >= 0`` an integer; ``P`` the common denominator of the
floors' coefficients of ``n``), which turns every ``floor`` (and ``Mod``, ``Min``, ``Max`` of
comparable terms) into a polynomial in ``k``; a polynomial in non-negative ``k`` whose
non-constant coefficients all have one sign has a known sign. A relation true in every class
is true everywhere (no guard needed); false in every class, false everywhere; anything else
is left undecided (the caller records it as a guard). Nothing is sampled.
"""

from __future__ import annotations

import functools
import itertools
import math

import sympy

MAX_CLASSES = 64  # residue classes tried before giving up
MAX_OPS = 400  # larger expressions are not tried (each class is an expand and a Poly)

_HOLDS = {
    "<": {"-"},
    "<=": {"-", "0"},
    ">": {"+"},
    ">=": {"+", "0"},
    "==": {"0"},
    "!=": {"-", "+"},
}
_ROUNDED = (sympy.floor, sympy.ceiling, sympy.Mod, sympy.Min, sympy.Max)


def always(d: sympy.Expr, op: str) -> bool | None:
    """True when ``d op 0`` holds at every point of positive integer sizes, False when it
    holds at none, None when not proved either way."""
    signs = _signs(d)
    if signs is None:
        return None
    holds = _HOLDS[op]
    if signs <= holds:
        return True
    if not signs & holds:
        return False
    return None


@functools.lru_cache(maxsize=65536)
def _signs(d: sympy.Expr) -> frozenset[str] | None:
    """The signs ``d`` can take at positive integer points (a superset), or None."""
    if d.is_number:
        return frozenset({"-" if d < 0 else "0" if d == 0 else "+"})
    if sympy.count_ops(d) > MAX_OPS or not all(s.is_integer for s in d.free_symbols):
        return None
    syms = sorted(d.free_symbols, key=str)
    ks = {s: sympy.Dummy(f"k_{s}", integer=True, nonnegative=True) for s in syms}
    period = dict.fromkeys(syms, 1)
    while math.prod(period.values()) <= MAX_CLASSES:
        out: set[str] = set()
        for js in itertools.product(*(range(1, period[s] + 1) for s in syms)):
            e = sympy.expand(d.xreplace({s: period[s] * ks[s] + j for s, j in zip(syms, js)}))
            left = [a for a in e.atoms(*_ROUNDED)]
            if left:
                grow = _periods(left, ks, syms)
                if grow is None:
                    return None
                for s, q in grow.items():
                    period[s] *= q
                break
            signs = _poly_signs(e, list(ks.values()))
            if signs is None:
                return None
            out |= signs
        else:
            return frozenset(out)
    return None


def _periods(atoms, ks, syms) -> dict[sympy.Symbol, int] | None:
    """How much each size's period must grow to resolve the rounded terms left (the common
    denominator of each ``k``'s coefficients inside them), or None when they are not linear
    with rational coefficients (or need no growth: nothing more to gain)."""
    grow = dict.fromkeys(syms, 1)
    for a in atoms:
        for arg in a.args:
            for s in syms:
                c = sympy.expand(arg).coeff(ks[s])
                if c.free_symbols or not c.is_Rational:
                    if c != 0:
                        return None
                    continue
                grow[s] = math.lcm(grow[s], int(c.q))
    if all(q == 1 for q in grow.values()):
        return None
    return grow


def _poly_signs(e: sympy.Expr, ks: list[sympy.Symbol]) -> set[str] | None:
    """Signs of a polynomial in non-negative integers ``ks`` (a superset), or None."""
    try:
        poly = sympy.Poly(e, *ks)
    except sympy.PolynomialError:
        return None
    coeffs = dict(zip(poly.monoms(), poly.coeffs(), strict=True))
    c0 = coeffs.pop((0,) * len(ks), sympy.Integer(0))
    if not c0.is_number or not all(c.is_number for c in coeffs.values()):
        return None
    if all(c >= 0 for c in coeffs.values()):
        if c0 > 0:
            return {"+"}
        if c0 == 0:
            return {"0", "+"} if coeffs else {"0"}
    if all(c <= 0 for c in coeffs.values()):
        if c0 < 0:
            return {"-"}
        if c0 == 0:
            return {"-", "0"} if coeffs else {"0"}
    return {"-", "0", "+"}
