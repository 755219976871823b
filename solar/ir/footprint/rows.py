"""A guarded group of two loop dims in closed form when sizes are symbols: the rows' ends are
piecewise linear in the other dim.

:func:`~solar.ir.footprint.groups._inner_eval` solves the inner dim ``x`` of a group as an
interval ``[xl(y), xh(y))`` per value of the other dim ``y`` (a *row*) and unions the rows'
segments with numpy, which reads symbolic sizes as plain ints. When every guard has a plain
coefficient ``±1`` on ``x`` and a plain coefficient in ``{-1, 0, 1}`` on ``y`` (the causal
triangle ``0 <= l - s``, a band), ``xl`` is the max and ``xh`` the min of a few lines of
slope ``-1``, ``0`` or ``1``. Cut ``y``'s range where two of those lines cross (and where a
row's length reaches zero): on each piece both ends are one line, so the row lengths are an
arithmetic series and a row's first and last value are linear in ``y``. The numeric path's
answer then has a closed form:

- ``x`` not in the form: the live rows' ``y`` values, one progression (live rows are
  consecutive: a row's length is concave in ``y``);
- ``y`` not in the form: one run (the ends move by at most one per row, so consecutive rows'
  intervals overlap or touch);
- both in the form, the form injective on the loop box: one segment per row, disjoint, whose
  union the numeric path gives as one run, as listed values (few values: None here, the
  caller enumerates), or as an opaque count from its sweep: the sum of the rows' lengths
  (``n·(n+1)/2`` for the causal triangle), with the smallest start, the largest end and the
  gcd of the starts' differences.

Every decision (which line bounds a piece, whether a piece executes, which path the numeric
code takes) is a comparison of sizes, recorded as a guard; None wherever none of the above
applies.
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy

from solar.algebra.size import Size, expr_of, gcd, make
from solar.ir.footprint.arith import cdiv, distinct_sorted, unbounded
from solar.ir.footprint.domain import LinearGuard
from solar.ir.footprint.factors import Factor, nothing, opaque, progression
from solar.ir.limits import current_limits

Line = tuple[int, int]  # (u, s): u + s·y, the slope s a plain int in {-1, 0, 1}
Piece = tuple[int, int, Line, Line]  # rows [p, q) with xl = the first line, xh = the second


def row_values(
    rng: Mapping[str, tuple[int, int]],
    guards: list[LinearGuard],
    f: Mapping[str, int],
    inner: str,
    others: list[str],
) -> tuple[int, Factor | None] | None:
    """The numeric ``_inner_eval``'s ``(min, factor)`` for a group of two dims, kept as
    expressions (module docstring), or None."""
    if len(others) != 1:
        return None
    (y,) = others
    lines = _lines(rng[inner], guards, inner, y)
    if lines is None:
        return None
    pieces = _pieces(rng[y], *lines)
    if pieces is None:
        return None
    fi, fo = f.get(inner, 0), f.get(y, 0)
    if not pieces:
        return 0, nothing()
    if fi == 0:
        if fo == 0:
            return 0, None
        ya, yb = pieces[0][0], pieces[-1][1]
        return (fo * ya if fo > 0 else fo * (yb - 1)), progression(abs(fo), yb - ya)
    if fo == 0:
        mn = min(_at(xl, e) for p, q, xl, _ in pieces for e in (p, q - 1))
        mx = max(_at(xh, e) for p, q, _, xh in pieces for e in (p, q - 1))
        return (fi * mn if fi > 0 else fi * (mx - 1)), progression(abs(fi), mx - mn)
    if not _injective(fi, rng[inner], fo, rng[y]):
        return None
    return _segments(pieces, fi, fo)


def _lines(
    box: tuple[int, int], guards: list[LinearGuard], x: str, y: str
) -> tuple[list[Line], list[Line]] | None:
    """The lines whose max is ``xl(y)`` and whose min is ``xh(y)``, or None when a guard's
    coefficients are not plain ``±1`` on ``x`` and in ``{-1, 0, 1}`` on ``y``."""
    lows: list[Line] = [(box[0], 0)]
    highs: list[Line] = [(box[1], 0)]
    for g in guards:
        coefs = dict(g.coefs)
        a, b = coefs.get(x, 0), coefs.get(y, 0)
        if set(coefs) - {x, y} or isinstance(a, Size) or isinstance(b, Size):
            return None
        if a not in (-1, 1) or b not in (-1, 0, 1):
            return None
        if a == 1:  # lo - c - b·y <= x < hi - c - b·y
            lo, hi = (g.lo - g.const, -b), (g.hi - g.const, -b)
        else:  # c + b·y - hi + 1 <= x < c + b·y - lo + 1
            lo, hi = (g.const - g.hi + 1, b), (g.const - g.lo + 1, b)
        if not unbounded(g.lo if a == 1 else g.hi):
            lows.append(lo)
        if not unbounded(g.hi if a == 1 else g.lo):
            highs.append(hi)
    return lows, highs


def _at(line: Line, y: int) -> int:
    return line[0] + line[1] * y


def _crossing(a: Line, b: Line) -> int | None:
    """The first integer ``y`` at or after which ``a(y) - b(y)`` has the sign it keeps
    (``ceil`` of the crossing), or None for parallel lines."""
    d = a[1] - b[1]
    if d == 0:
        return None
    return cdiv(b[0] - a[0], d) if d > 0 else cdiv(a[0] - b[0], -d)


def _pieces(yr: tuple[int, int], lows: list[Line], highs: list[Line]) -> list[Piece] | None:
    """The executed rows as consecutive pieces ``[p, q)`` on which ``xl`` and ``xh`` are one
    line each; None when they are not consecutive."""
    cuts = [*yr]
    for group in (lows, highs):
        for i, a in enumerate(group):
            cuts += [c for b in group[i + 1 :] if (c := _crossing(a, b)) is not None]
    for a in lows:
        for b in highs:
            c = _crossing(a, b)
            if c is not None:
                cuts += [c, c + 1]  # the row at a zero length, and the rows after it
    ys = distinct_sorted([yr[0], yr[1], *(c for c in cuts if yr[0] < c < yr[1])])
    out: list[Piece] = []
    for p, q in zip(ys, ys[1:], strict=False):
        if not p < q:  # two cuts of one value at these sizes: no row between them
            continue
        xl = _bounding(lows, p, q, 1)
        xh = _bounding(highs, p, q, -1)
        if xl is None or xh is None:
            return None
        first, last = _at(xh, p) - _at(xl, p) > 0, _at(xh, q - 1) - _at(xl, q - 1) > 0
        if first != last:
            return None  # not one sign on the piece (cannot happen: the cuts are the zeros)
        if first:
            if out and not _same(out[-1][1], p):
                return None
            out.append((p, q, xl, xh))
    return out


def _bounding(lines: list[Line], p: int, q: int, sign: int) -> Line | None:
    """The line that is the max (``sign`` 1) or the min (-1) of ``lines`` at both ends of
    ``[p, q)``, hence on all of it (no two cross inside)."""
    for a in lines:
        if all(sign * (_at(a, e) - _at(b, e)) >= 0 for b in lines for e in (p, q - 1)):
            return a
    return None


def _same(a: int, b: int) -> bool:
    """Whether two sizes are one expression (no decision recorded)."""
    return sympy.expand(expr_of(a) - expr_of(b)) == 0


def _injective(fi: int, ri: tuple[int, int], fo: int, ro: tuple[int, int]) -> bool:
    """Whether ``fi·x + fo·y`` takes distinct values on the box: the larger coefficient's
    step exceeds the smaller one's diameter (a mixed radix)."""
    (cs, rs), (cb, _) = sorted([(abs(fi), ri), (abs(fo), ro)], key=lambda t: t[0])
    return cb > cs * (rs[1] - rs[0] - 1)


def _half(n: int) -> int:
    """``n / 2`` of an even ``n``, exactly (no floor in the expression)."""
    if not isinstance(n, Size):
        return n // 2
    assert n.hint % 2 == 0, n
    return make(n.hint // 2, sympy.expand(n.expr / 2))


def _series(c: int, d: int, p: int, q: int) -> int:
    """``Σ_{y=p}^{q-1} (c + d·y)``."""
    k = q - p
    return c * k + d * _half(k * (p + q - 1))


def _gcd(a: int, b: int) -> int:
    """:func:`~solar.algebra.size.gcd`, first reducing ``gcd(a, a + k) = gcd(a, k)`` for a
    constant ``k`` (``gcd(n, n + 1) = 1`` at every size)."""
    for u, v in ((a, b), (b, a)):
        k = sympy.expand(expr_of(v) - expr_of(u))
        if isinstance(u, Size) and k.is_Integer:
            return gcd(u, int(k))
    return gcd(a, b)


def _segments(pieces: list[Piece], fi: int, fo: int) -> tuple[int, Factor | None] | None:
    """The union of the rows' segments of an injective form (disjoint, one per row), as the
    numeric ``segment_union`` gives it."""
    step = abs(fi)
    rows = []  # per piece: (p, q, the start line, the length line)
    for p, q, xl, xh in pieces:
        first = xl if fi > 0 else (xh[0] - 1, xh[1])
        start = (fi * first[0], fo + fi * first[1])
        rows.append((p, q, start, (xh[0] - xl[0], xh[1] - xl[1])))
    total = sum((_series(*n, p, q) for p, q, _, n in rows), 0)
    ends = [(p, q, (s[0] + step * (n[0] - 1), s[1] + step * n[1])) for p, q, s, n in rows]
    nrows = pieces[-1][1] - pieces[0][0]
    lo = min(_at(s, e) for p, q, s, _ in rows for e in (p, q - 1))
    hi = max(_at(t, e) for p, q, t in ends for e in (p, q - 1))
    if max(_at(n, e) for p, q, _, n in rows for e in (p, q - 1)) == 1:
        s = rows[0][2]  # single values: the starts, one line over every piece
        if not all(_same(t[0], s[0]) and _same(t[1], s[1]) for _, _, t, _ in rows):
            return None
        return lo, progression(abs(s[1]), nrows) if s[1] != 0 else None
    if nrows == 1 or step == 1:
        if total * step == hi - lo + step:  # one residue class, the segments chain: one run
            return lo, progression(step, total)
    elif not abs(fo) < step:  # consecutive rows' starts differ by fo modulo step
        return None
    if total <= current_limits().segments:
        return None  # the numeric path lists the values: enumerated by the caller
    g = step
    for p, q, s, _ in rows:
        g = _gcd(g, _at(s, p) - lo)
        if q - p > 1:
            g = _gcd(g, s[1])
    return lo, opaque(total, True, hi - lo, g)
