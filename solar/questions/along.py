"""A symbolic bound evaluated at many values of one size: the rows of a sweep, from formulas.

:func:`along` finds the points inside the trace's count region (outside them the program
itself may differ: a new trace is needed), assigns each to the piece of the analysis that
holds it (a piece met for the first time is analysed then, on the symbolic graph, no new
trace), and evaluates that piece's expressions at all its points at once
(:func:`solar.algebra.numeric.compile_exprs`): counts exactly (Python integers), times in
float64. Each row is what :func:`solar.bound` gives at that size: counts equal, times to
rounding.

Where the analysis specializes the size (uses it as a plain number: a piece then holds at
one point only, e.g. the critical-path walk over a recurrence's steps), a symbolic analysis
per point would cost more than it saves: those points are taken from the trace's graph
evaluated at each and analysed as numbers (:meth:`SymbolicBound.numeric_at`: exact, no new
trace), and :attr:`Along.specialized` says where.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import sympy

from solar.algebra.numeric import compile_exprs
from solar.algebra.size import Real, Size, symbol
from solar.backend.result import Bound
from solar.symbolic.symbolic_bound import QUANTITIES, SymbolicBound

LEVELS = ("unfused", "fused", "cache_aware")
#: the times of a row (float64)
TIMES = LEVELS
#: the counts of a row (exact integers): a quantity of QUANTITIES, or "flops" (all classes)
COUNTS = ("flops", "bytes_fused", "bytes_cache_aware", "peak_memory")


@dataclass(frozen=True)
class Along:
    """Rows of one size's values: ``inside`` marks those the formulas answer; ``columns``
    holds each time and count there (a time NaN and a count None outside), ``bound_by`` each
    level's binding term (None outside); ``pieces``: how many pieces the values met;
    ``numeric``: the points analysed as numbers, because the analysis specializes the size
    (at ``specialized``: the place it does)."""

    size: str
    values: np.ndarray
    inside: np.ndarray
    columns: dict[str, np.ndarray]
    bound_by: dict[str, np.ndarray]
    pieces: int
    numeric: np.ndarray
    specialized: str = ""

    def source(self, i: int) -> str:
        """``"formula"``, ``"graph"`` (analysed as numbers) or ``"outside"``."""
        return "outside" if not self.inside[i] else "graph" if self.numeric[i] else "formula"

    def row(self, i: int) -> dict[str, object]:
        """Row ``i`` as a dict of the quantity names (and ``<level>_bound_by``)."""
        out: dict[str, object] = {q: self.columns[q][i] for q in (*TIMES, *COUNTS)}
        out.update({f"{lv}_bound_by": self.bound_by[lv][i] for lv in LEVELS})
        return out


def along(b: SymbolicBound, size: str, values: Sequence[int], **fixed: int) -> Along:
    """The rows of ``b`` at each of ``values`` of ``size`` (the other sizes at ``fixed`` or
    their traced values); see the module docstring."""
    if size not in b.sizes:
        raise ValueError(f"unknown size {size!r}; this bound's sizes are {', '.join(b.sizes)}")
    xs = np.asarray(list(values), dtype=np.int64)
    if xs.ndim != 1 or (xs < 1).any():
        raise ValueError(f"size {size} must take positive integers, got {list(values)!r}")
    base = {**b.sizes, **fixed}
    symbols = [symbol(k) for k in base]
    arrays = {symbol(k): (xs if k == size else np.full(xs.shape, v)) for k, v in base.items()}
    inside = (
        b.counts_region.holds_many(arrays) if b.counts_region is not None else np.ones(xs.shape)
    ).astype(bool)
    columns = {q: np.full(xs.shape, np.nan) for q in TIMES}
    columns.update({q: np.full(xs.shape, None, dtype=object) for q in COUNTS})
    bound_by = {lv: np.full(xs.shape, None, dtype=object) for lv in LEVELS}
    todo = inside.copy()
    numeric = np.zeros(xs.shape, dtype=bool)
    seen: set[int] = set()

    def take(piece, mine: np.ndarray) -> None:
        """The points of ``mine`` from ``piece``'s formulas."""
        seen.add(id(piece))
        args = [arrays[k][mine] for k in symbols]
        times = compile_exprs(symbols, [_expr(QUANTITIES[q](piece.bound)) for q in TIMES])
        counts = compile_exprs(symbols, [_count(piece.bound, q) for q in COUNTS], exact=True)
        n = int(mine.sum())
        for q, v in zip(TIMES, times(*args), strict=True):
            columns[q][mine] = np.broadcast_to(np.asarray(v, dtype=np.float64), (n,))
        for q, v in zip(COUNTS, counts(*args), strict=True):
            columns[q][mine] = np.broadcast_to(np.asarray(v, dtype=object), (n,))
        for lv in LEVELS:
            bound_by[lv][mine] = getattr(piece.bound, f"{lv}_bound_by")

    pieces = b.pieces
    specialized = next((w for p in pieces if (w := p.region.specializations.get(size))), "")
    if not specialized:  # the pieces met so far at all the points at once, then new ones
        for piece, mine in b.cover(size, xs, todo, **fixed):
            specialized = piece.region.specializations.get(size, "")
            if specialized:  # a piece per point: analyse each point as numbers instead
                break
            take(piece, mine)
    if specialized:
        seen.update(id(p) for p in pieces[:1])
        for i in np.flatnonzero(todo):
            _put(columns, bound_by, i, b.numeric_at(**{**fixed, size: int(xs[i])}))
        numeric, todo = todo.copy(), np.zeros(xs.shape, dtype=bool)
    return Along(size, xs, inside, columns, bound_by, len(seen), numeric, specialized)


def _put(columns: dict, bound_by: dict, i: int, b: Bound) -> None:
    """Row ``i`` from a numeric Bound."""
    for q in TIMES:
        columns[q][i] = b.time(q)
    for q in COUNTS:
        columns[q][i] = count_of(b, q)
    for lv in LEVELS:
        bound_by[lv][i] = b.bound_by(lv)


def count_of(b: Bound, quantity: str) -> int:
    """A count of :data:`COUNTS` read off a numeric Bound."""
    if quantity == "flops":
        return sum(b.flops.values())
    return QUANTITIES[quantity](b)


def _count(bound: Bound, quantity: str) -> sympy.Expr:
    if quantity == "flops":
        return sum((_expr(n) for n in bound.flops.values()), sympy.Integer(0))
    return _expr(QUANTITIES[quantity](bound))


def _expr(x: object) -> sympy.Expr:
    """The expression of a number of a symbolic Bound (a plain number: itself)."""
    if isinstance(x, (Size, Real)):
        return x.expr
    if isinstance(x, int) and not isinstance(x, bool):
        return sympy.Integer(x)
    return sympy.Float(float(x))  # type: ignore[arg-type]


def point_text(sizes: Mapping[str, int]) -> str:
    """``seq=512, batch=8``."""
    return ", ".join(f"{k}={v}" for k, v in sizes.items())
