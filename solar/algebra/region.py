"""Regions: the sizes where a symbolic result is exact (the conjunction of its guards).

A guard is a sympy relation in the size symbols decided while computing (``tokens > 1``,
``256*tokens/B >= 2*flops/P``): the formula read off the result equals the numeric
analysis wherever every guard holds. Guards are checked numerically at a point (vectorised
over many points for sweeps); a guard ``Eq(size, value)`` *specializes* the formula (the
size was used as a plain number, e.g. a Python loop over it) and is reported as such.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import sympy

from solar.algebra.numeric import compile_exprs
from solar.algebra.size import IntGcd

_TOL = 1e-9  # relative: guards between times are compared to rounding


@dataclass(frozen=True)
class Guard:
    relation: sympy.Basic
    where: str = ""

    def __str__(self) -> str:
        return str(self.relation)


def _holds(part: tuple[str, sympy.Expr, sympy.Expr, bool], value: tuple) -> object:
    """Whether one guard (its :func:`_part`) holds at its evaluated ``(difference, scale)``:
    a bool, or an array of them for vectors."""
    op, _, _, floats = part
    d, sc = value
    tol = _TOL * sc if floats else 0
    if op == "bool":
        return d
    if op in ("<", "<="):
        return d <= tol if floats or op == "<=" else d < 0
    if op in (">", ">="):
        return d >= -tol if floats or op == ">=" else d > 0
    if op == "==":
        return abs(d) <= tol
    return abs(d) > tol if not floats else True


@functools.lru_cache(maxsize=1 << 14)
def _part(r: sympy.Basic) -> tuple[str, sympy.Expr, sympy.Expr, bool]:
    """A guard's operator, difference, rounding scale and whether it holds floats."""
    floats = any(isinstance(a, sympy.Float) for a in sympy.preorder_traversal(r))
    if isinstance(r, sympy.core.relational.Relational):
        scale = sum(
            (abs(t) for side in (r.lhs, r.rhs) for t in sympy.Add.make_args(side)),
            sympy.Integer(0),
        )
        return (r.rel_op, r.lhs - r.rhs, scale, floats)
    return ("bool", r, sympy.Integer(0), False)


@functools.lru_cache(maxsize=1 << 14)
def _compiled(symbols: tuple[sympy.Symbol, ...], d: sympy.Basic, sc: sympy.Basic, exact: bool):
    return compile_exprs(symbols, [d, sc], exact=exact)


def guard_holds(relation: sympy.Basic, symbol: sympy.Symbol, value: int) -> bool:
    """Whether a guard in the one size ``symbol`` holds at ``value``, by the test a region
    applies (guards between times to rounding)."""
    part = _part(relation)
    _, d, sc, _ = part
    return bool(_holds(part, tuple(_compiled((symbol,), d, sc, True)(value))))


def tested_form(relation: sympy.Basic) -> sympy.Basic:
    """The relation as a region tests it: one holding floats (a comparison of times) with
    its rounding tolerance written in (``d <= 1e-9 * scale``), so that sympy evaluates it as
    :meth:`Region.holds` does; an exact one as it is."""
    op, d, sc, floats = _part(relation)
    if not floats or op == "bool":
        return relation
    tol = sympy.Float(_TOL) * sc
    if op in ("<", "<="):
        return d <= tol
    if op in (">", ">="):
        return d >= -tol
    if op == "==":
        return sympy.Abs(d) <= tol
    return sympy.true  # "!=" between times holds to rounding everywhere


@dataclass(frozen=True)
class Region:
    """Where a formula holds: every guard true (sizes are positive integers)."""

    symbols: tuple[sympy.Symbol, ...]
    guards: tuple[Guard, ...] = ()

    @staticmethod
    def of(symbols: Sequence[sympy.Symbol], guards: Mapping[sympy.Basic, str]) -> Region:
        return Region(tuple(symbols), tuple(Guard(r, w) for r, w in guards.items()))

    def __and__(self, other: Region) -> Region:
        seen = {g.relation for g in self.guards}
        return Region(
            self.symbols, self.guards + tuple(g for g in other.guards if g.relation not in seen)
        )

    @cached_property
    def _parts(self) -> list[tuple[str, sympy.Expr, sympy.Expr, bool]]:
        """Per guard: its operator, ``lhs - rhs``, ``|lhs| + |rhs|`` (the scale of its
        rounding) and whether it holds floats (times: compared to a relative tolerance,
        since a guard decided at its boundary may round either way; both sides agree
        there)."""
        return [_part(g.relation) for g in self.guards]

    def _values(self, args: list, vector: bool) -> list[tuple[object, object]]:
        """Per guard, the values of its difference and scale at ``args``. Each guard is
        compiled once for all the regions that hold it (the pieces of one analysis share
        most of their guards)."""
        return [
            tuple(_compiled(self.symbols, d, sc, not vector)(*args))  # type: ignore[misc]
            for _, d, sc, _ in self._parts
        ]

    def _ok(self, values: list[tuple[object, object]]) -> list[object]:
        return [_holds(part, v) for part, v in zip(self._parts, values, strict=True)]

    def failing(self, point: Mapping[sympy.Symbol, int], memo: dict | None = None) -> Guard | None:
        """The first guard false at ``point``, or None when the point is inside (the guards
        after it are not evaluated: a point of another piece usually fails an early one).
        ``memo``: guard results at this point, shared by the regions checked there (the
        pieces of one analysis hold most of their guards in common)."""
        if not self.guards:
            return None
        args = [int(point[s]) for s in self.symbols]
        memo = {} if memo is None else memo
        for g, part in zip(self.guards, self._parts, strict=True):
            ok = memo.get(part)
            if ok is None:
                _, d, sc, _ = part
                value = tuple(_compiled(self.symbols, d, sc, True)(*args))
                ok = memo[part] = bool(_holds(part, value))
            if not ok:
                return g
        return None

    def holds(self, point: Mapping[sympy.Symbol, int], memo: dict | None = None) -> bool:
        return self.failing(point, memo) is None

    def holds_many(self, points: Mapping[sympy.Symbol, np.ndarray]) -> np.ndarray:
        """Per point of the arrays (one per symbol, broadcast together), whether it is inside."""
        n = np.broadcast(*points.values()).shape
        ok = np.ones(n, dtype=bool)
        if not self.guards:
            return ok
        args = [np.asarray(points[s], dtype=np.float64) for s in self.symbols]
        for v in self._ok(self._values(args, True)):
            ok &= np.broadcast_to(np.asarray(v, dtype=bool), n)
        return ok

    @cached_property
    def specializations(self) -> dict[str, str]:
        """Sizes the formula is specialized at: ``{size: where}`` (guards ``size == value``
        where the size was used as a plain number)."""
        out: dict[str, str] = {}
        for g in self.guards:
            r = g.relation
            if isinstance(r, sympy.Eq) and r.rhs.is_number and not r.lhs.is_number:
                if any(isinstance(a, IntGcd) for a in sympy.preorder_traversal(r.lhs)):
                    continue
                for s in sorted(r.lhs.free_symbols, key=str):
                    out.setdefault(str(s), g.where or "(unknown place)")
        return out

    def interval(
        self, symbol: sympy.Symbol, point: Mapping[sympy.Symbol, int], hi: int = 1 << 40
    ) -> tuple[int, int]:
        """The integer interval ``[lo, hi]`` of ``symbol`` around ``point[symbol]`` (others held
        at ``point``) inside the region: found by doubling and bisection on the guards."""
        x0 = int(point[symbol])

        def inside(x: int) -> bool:
            return self.holds({**point, symbol: x})

        if not inside(x0):
            raise ValueError(f"{symbol}={x0} is outside the region")
        up = _edge(inside, x0, hi, +1)
        down = _edge(inside, x0, 1, -1)
        return down, up

    def text(self) -> list[str]:
        """The guards for a reader, each simplified where sympy can (one size: an interval)."""
        out = []
        for g in self.guards:
            r = g.relation
            free = sorted(r.free_symbols, key=str)
            solvable = not r.has(sympy.floor, sympy.Min, sympy.Max, sympy.Mod)  # else slow
            if len(free) == 1 and solvable and not isinstance(r, (sympy.Eq, sympy.Ne)):
                with contextlib.suppress(NotImplementedError, TypeError, ValueError):
                    r = sympy.solve_univariate_inequality(r, free[0], relational=True)
            out.append(str(r))
        return list(dict.fromkeys(out))


def _edge(inside, x0: int, limit: int, step: int) -> int:
    """The farthest integer from ``x0`` towards ``limit`` (direction ``step``) such that every
    integer between is inside; assumes the inside set is an interval around ``x0``."""
    good, span = x0, 1
    while True:
        x = x0 + step * span
        if (step > 0 and x > limit) or (step < 0 and x < limit):
            x = limit
        if not inside(x):
            bad = x
            break
        good = x
        if x == limit:
            return good
        span *= 2
    while abs(bad - good) > 1:
        mid = (good + bad) // 2
        if inside(mid):
            good = mid
        else:
            bad = mid
    return good
