"""A bound as formulas of the program's sizes: :class:`SymbolicBound`.

It *is* the :class:`~solar.backend.result.Bound` of the traced point (every view renders it),
whose numbers also carry their expressions in the size symbols. Two regions say where those
expressions are exact:

- the **count region**: the guards decided while tracing, lowering and counting (PyTorch's
  shape guards, footprint case splits, sizes used as plain numbers). Outside it the program
  itself may differ; a new trace is needed.
- the **piece**: the guards decided by the analysis (which term of a roofline is the larger,
  whether latency binds). Inside the count region, a point outside the piece is analysed
  again on the same symbolic graph (no new trace): that records the next piece.

``b.at(batch=8)`` evaluates the piece that holds the point (the numeric bound there: counts
exactly, times to rounding); ``b.sweep``, ``b.crossovers`` and ``b.solve`` walk the pieces
along one size. Nothing here is fitted to sampled points: every expression is the one the
analysis computed with, and every point is checked against the guards it rests on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import sympy

from solar.algebra.region import Region
from solar.algebra.size import Real, Size, expr_of, recording, symbol
from solar.algebra.template import Template
from solar.algebra.walk import evaluate, rehint
from solar.backend.result import Bound
from solar.graph.types import Graph

#: the quantities :meth:`SymbolicBound.formula` names, and how each is read off a Bound
QUANTITIES = {
    "unfused": lambda b: b.unfused,
    "fused": lambda b: b.fused,
    "cache_aware": lambda b: b.cache_aware,
    "bytes_unfused": lambda b: b.bytes_unfused,
    "bytes_fused": lambda b: b.bytes_fused,
    "bytes_cache_aware": lambda b: b.bytes_cache_aware,
    "peak_memory": lambda b: b.memory.peak_bytes if b.memory else 0,
    "launches": lambda b: b.latency.launches if b.latency else len(b.kernels),
    "critical_path": lambda b: b.latency.critical_path_s if b.latency else 0.0,
}
LEVELS = ("unfused", "fused", "cache_aware")


class OutsideRegionError(ValueError):
    """A point where the traced program's counts are not known to hold: trace there."""


@dataclass
class Piece:
    """The analysis on one region of sizes: its Bound (sizes and times symbolic)."""

    region: Region
    bound: Bound


def _expr(x: object) -> sympy.Expr:
    if isinstance(x, Real):
        return x.expr
    if isinstance(x, (Size, int)) and not isinstance(x, bool):
        return expr_of(x)
    return sympy.Float(float(x))  # type: ignore[arg-type]


@dataclass(repr=False)
class SymbolicBound(Bound):
    """The Bound at the traced sizes, with its formulas (see the module docstring)."""

    sizes: dict[str, int] = field(default_factory=dict)  # size name -> traced value
    counts_region: Region | None = None
    piece_region: Region | None = None
    #: a numeric bound at other sizes from a new trace (None: not available); used where a
    #: point lies outside the count region
    retrace: Callable[[dict[str, int]], Bound] | None = field(
        default=None, repr=False, compare=False
    )
    _graph: Graph | None = field(default=None, repr=False, compare=False)
    _spec: object = field(default=None, repr=False, compare=False)
    _pieces: list[Piece] = field(default_factory=list, repr=False, compare=False)
    _template: Template | None = field(default=None, repr=False, compare=False)
    _walks: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self) -> dict:
        """What pickles: the result, its graph and pieces. The caches stay behind (rebuilt on
        use), and so does :attr:`retrace`, a live link to the program (its model and inputs):
        unpickled, a point outside the count region raises ``OutsideRegionError``."""
        return {**self.__dict__, "retrace": None, "_template": None, "_walks": {}}

    @staticmethod
    def of(
        graph: Graph, spec, counts_region: Region, sizes: Mapping[str, int], notes=None
    ) -> SymbolicBound:
        """Analyse the symbolic ``graph`` on ``spec`` at its traced sizes."""
        piece = _analyse(graph, spec, counts_region.symbols, notes)
        fields = {f.name: getattr(piece.bound, f.name) for f in dataclasses.fields(Bound)}
        return SymbolicBound(
            **fields,
            sizes=dict(sizes),
            counts_region=counts_region,
            piece_region=piece.region,
            _graph=graph,
            _spec=spec,
            _pieces=[piece],
        )

    # -- formulas ------------------------------------------------------------------------

    @property
    def symbols(self) -> dict[str, sympy.Symbol]:
        return {name: symbol(name) for name in self.sizes}

    def formula(self, quantity: str = "fused") -> sympy.Expr:
        """The expression of a quantity of :data:`QUANTITIES` (a level's seconds, bytes,
        peak memory, launches, critical path) in the size symbols, on this piece."""
        if quantity not in QUANTITIES:
            raise ValueError(f"unknown quantity {quantity!r}; one of {', '.join(QUANTITIES)}")
        return _expr(QUANTITIES[quantity](self))

    def flops_formula(self) -> dict[str, sympy.Expr]:
        """Operations per op class, as expressions."""
        return {cls: _expr(n) for cls, n in self.flops.items()}

    @property
    def specializations(self) -> dict[str, str]:
        """Sizes the formulas are specialized at (used as plain numbers), and where."""
        out = dict(self.counts_region.specializations) if self.counts_region else {}
        if self.piece_region:
            for k, v in self.piece_region.specializations.items():
                out.setdefault(k, v)
        return out

    # -- evaluation ----------------------------------------------------------------------

    def _point(self, sizes: Mapping[str, int]) -> dict[sympy.Symbol, int]:
        unknown = set(sizes) - set(self.sizes)
        if unknown:
            raise ValueError(
                f"unknown size {sorted(unknown)[0]!r}; this bound's sizes are "
                f"{', '.join(self.sizes)}"
            )
        merged = {**self.sizes, **sizes}
        for k, v in merged.items():
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"size {k} must be a positive integer, got {v!r}")
        return {symbol(k): int(v) for k, v in merged.items()}

    def _inside(self, point: Mapping[sympy.Symbol, int]) -> None:
        """Raise :class:`OutsideRegionError` naming the first count guard false at ``point``."""
        failed = self.counts_region.failing(point) if self.counts_region else None
        if failed is not None:
            where = f" ({failed.where})" if failed.where else ""
            raise OutsideRegionError(
                f"{_point_text(point)} is outside the sizes this trace counts exactly: "
                f"{failed.relation} does not hold{where}; bound the program at that size"
            )

    def piece_at(self, **sizes: int) -> Piece:
        """The piece holding the point (analysed now if no piece recorded so far does)."""
        point = self._point(sizes)
        self._inside(point)
        memo: dict = {}  # guard results at this point, shared by the pieces' regions
        for p in self._pieces:
            if p.region.holds(point, memo):
                return p
        return self.new_piece(**sizes)

    @property
    def pieces(self) -> tuple[Piece, ...]:
        """The pieces analysed so far (the traced one first)."""
        return tuple(self._pieces)

    def new_piece(self, **sizes: int) -> Piece:
        """The analysis at these sizes, recorded as a new piece, without looking for a piece
        met so far that holds there (sweeps check those at all their points at once)."""
        point = self._point(sizes)
        graph = rehint(self._graph, point, self._graph_template())
        piece = _analyse(graph, self._spec, self.counts_region.symbols, None)
        self._pieces.append(piece)
        return piece

    def _graph_template(self) -> Template:
        """The graph's :class:`Template`, made at the first rebuild (after the traced
        point's analysis, the last to change the graph itself)."""
        if self._template is None:
            self._template = Template(self._graph)
        return self._template

    def inside(self, **sizes: int) -> bool:
        """Whether the traced program's counts hold at these sizes (the count region)."""
        point = self._point(sizes)
        return self.counts_region is None or self.counts_region.holds(point)

    def at(self, **sizes: int) -> Bound:
        """The numeric Bound at these sizes (the others at their traced values): the formula's
        piece there; outside the count region a new numeric trace (:attr:`retrace`), or
        :class:`OutsideRegionError` when there is none."""
        point = self._point(sizes)
        if self.retrace is not None and not self.inside(**sizes):
            return self.retrace({str(k): v for k, v in point.items()})
        piece = self.piece_at(**sizes)
        out = evaluate(piece.bound, point)
        assert isinstance(out, Bound)
        return out

    def numeric_at(self, **sizes: int) -> Bound:
        """The numeric Bound at these sizes from the graph evaluated there and analysed as
        numbers (equal to :meth:`at`; no piece is recorded: for one point away from the
        pieces met so far, a numeric analysis is much cheaper than a symbolic one)."""
        from solar.backend.analyze import analyze

        point = self._point(sizes)
        self._inside(point)
        g = evaluate(self._graph, point, self._graph_template())
        return analyze(g, self._spec, notes=list(g.info.trace_notes) or None)

    def quick_at(self, **sizes: int) -> Bound:
        """The numeric Bound at these sizes the cheapest way (equal to :meth:`at` inside the
        count region): a recorded piece's formula where one holds there, else
        :meth:`numeric_at` (a few milliseconds instead of a new piece's symbolic analysis)."""
        point = self._point(sizes)
        if any(p.region.holds(point) for p in self._pieces):
            return self.at(**sizes)
        return self.numeric_at(**sizes)

    def cover(
        self, size: str, xs: np.ndarray, todo: np.ndarray, **fixed: int
    ) -> Iterator[tuple[Piece, np.ndarray]]:
        """The pieces holding the points ``xs`` of ``size`` marked in ``todo`` (the other sizes
        at ``fixed`` or their traced values; every marked point inside the count region),
        each yielded once with the mask of the marked points it takes: the pieces met so far
        first, each checked at all the points at once, then, while a point is left, a new
        piece analysed at the first one (its mask holds that point). ``todo`` is updated in
        place when the caller asks for the next piece: a caller that stops early leaves the
        last piece's points marked."""
        base = self._point(fixed)
        s = symbol(size)
        if s not in base:
            raise ValueError(
                f"unknown size {size!r}; this bound's sizes are {', '.join(self.sizes)}"
            )
        pts = {k: (xs if k == s else np.full(xs.shape, v)) for k, v in base.items()}
        for piece in self.pieces:  # the pieces met so far, each checked once
            if not todo.any():
                return
            mine = todo & piece.region.holds_many(pts)
            if mine.any():
                yield piece, mine
                todo &= ~mine
        while todo.any():  # the first point left lies in no piece met so far: a new one
            first = int(np.flatnonzero(todo)[0])
            piece = self.new_piece(**{**fixed, size: int(xs[first])})
            mine = todo & piece.region.holds_many(pts)
            mine[first] = True
            yield piece, mine
            todo &= ~mine

    def values(self, quantity: str, size: str, values: Sequence[int], **fixed: int) -> np.ndarray:
        """``quantity`` at each value of ``size`` (the other sizes at ``fixed`` or their traced
        values): pieces are found once each (:meth:`cover`), then their formulas are
        evaluated at all the points they hold at once."""
        xs = np.asarray(values, dtype=np.int64)
        out = np.full(xs.shape, np.nan)
        todo = np.ones(xs.shape, dtype=bool)
        base = self._point(fixed)
        s = symbol(size)
        if s not in base:
            raise ValueError(
                f"unknown size {size!r}; this bound's sizes are {', '.join(self.sizes)}"
            )
        if self.counts_region is not None:
            pts = {k: (xs if k == s else np.full(xs.shape, v)) for k, v in base.items()}
            for i in np.flatnonzero(~self.counts_region.holds_many(pts)):
                numeric = self.at(**{**fixed, size: int(xs[i])})  # a new trace, or raises
                out[i] = float(QUANTITIES[quantity](numeric))
                todo[i] = False
        rest = {k: sympy.Integer(v) for k, v in base.items() if k != s}
        for piece, mine in self.cover(size, xs, todo, **fixed):
            expr = _expr(QUANTITIES[quantity](piece.bound)).xreplace(rest)
            f = sympy.lambdify([s], expr, modules=[{"floor": np.floor, "Mod": np.mod}, "numpy"])
            out[mine] = np.broadcast_to(
                np.asarray(f(xs[mine].astype(float)), dtype=float), (int(mine.sum()),)
            )
        return out

    def terms(self, level: str = "fused") -> dict[str, sympy.Expr]:
        """The terms whose max is ``level``'s bound on this piece (fused, cache_aware): each
        unit's compute time, DRAM bytes over bandwidth, the latency floor."""
        if level not in ("fused", "cache_aware"):
            raise ValueError("terms() are those of the fused or cache_aware level")
        nbytes = self.bytes_fused if level == "fused" else self.bytes_cache_aware
        out = {unit: _expr(t) for unit, t in self.compute_s.items()}
        out["dram"] = _expr(nbytes) / sympy.Float(self.gpu["dram_bandwidth"])
        if self.latency is not None:
            out["latency"] = _expr(self.latency.bounds.get(level, 0.0))
        return out

    def piecewise(
        self, quantity: str, size: str, lo: int = 1, hi: int = 1 << 20, **fixed: int
    ) -> sympy.Piecewise:
        """``quantity`` along ``size`` over ``[lo, hi]`` (the count region's part of it), as
        one sympy Piecewise of the pieces met (others at ``fixed`` or their traced values)."""
        x_sym = symbol(size)
        walk = self._walk(size, *self._span(size, lo, hi, fixed), fixed)
        rest = {k: sympy.Integer(v) for k, v in self._point(fixed).items() if k != x_sym}
        parts: list[tuple[sympy.Expr, sympy.Basic]] = []
        for _, top, piece in walk:
            expr = _expr(QUANTITIES[quantity](piece.bound)).xreplace(rest)
            if parts and parts[-1][0] == expr:
                parts[-1] = (expr, x_sym <= top)
            else:
                parts.append((expr, x_sym <= top))
        return sympy.Piecewise(*parts)

    def crossovers(
        self, size: str, level: str = "fused", lo: int = 1, hi: int = 1 << 20, **fixed: int
    ) -> list[tuple[int, str, str]]:
        """Where ``level``'s bound-by changes along ``size`` in ``[lo, hi]``: ``(first size
        of the new term, term below, term from there)``; exact integers (bisection on the
        pieces' guards)."""
        walk = self._walk(size, *self._span(size, lo, hi, fixed), fixed)
        out: list[tuple[int, str, str]] = []
        for (_, _, piece), (x, _, nxt) in zip(walk, walk[1:]):
            by = getattr(piece.bound, f"{level}_bound_by")
            by_next = getattr(nxt.bound, f"{level}_bound_by")
            if by_next != by:
                out.append((x, by, by_next))
        return out

    def _walk(
        self, size: str, lo: int, hi: int, fixed: Mapping[str, int]
    ) -> list[tuple[int, int, Piece]]:
        """The pieces along ``size`` from ``lo`` to ``hi``: ``(first size, last size, piece)``
        per run, the last as the piece's region gives it (capped at ``hi``); the same for every
        level and quantity (pieces are shared; made once per span and kept)."""
        key = (size, lo, hi, tuple(sorted(fixed.items())))
        if key not in self._walks:
            walk: list[tuple[int, int, Piece]] = []
            x = lo
            while x <= hi:
                piece = self.piece_at(**{**fixed, size: x})
                point = self._point({**fixed, size: x})
                _, top = piece.region.interval(symbol(size), point, hi=hi)
                walk.append((x, top, piece))
                x = top + 1
            self._walks[key] = walk
        return self._walks[key]

    def _span(self, size: str, lo: int, hi: int, fixed: Mapping[str, int]) -> tuple[int, int]:
        """``[lo, hi]`` cut to the count region along ``size`` (through the traced value)."""
        if self.counts_region is None:
            return lo, hi
        point = self._point(fixed)
        a, b = self.counts_region.interval(symbol(size), point, hi=hi)
        return max(lo, a), min(hi, b)

    def solve(
        self, level: str, target_s: float, size: str, hi: int = 1 << 40, **fixed: int
    ) -> int | None:
        """The largest ``size`` whose ``level`` bound is at most ``target_s`` seconds (bounds
        grow with sizes: bisection on exact evaluations), or None when even 1 is slower."""

        def ok(x: int) -> bool:
            return self.numeric_at(**{**fixed, size: x}).time(level) <= target_s

        first, hi = self._span(size, 1, hi, fixed)
        if not ok(first):
            return None
        good, bad = first, 2 * first
        while bad <= hi and ok(bad):
            good, bad = bad, bad * 2
        if bad > hi:
            return good
        while bad - good > 1:
            mid = (good + bad) // 2
            if ok(mid):
                good = mid
            else:
                bad = mid
        return good

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["symbolic"] = {
            "sizes": dict(self.sizes),
            "formulas": {q: str(self.formula(q)) for q in QUANTITIES},
            "flops": {k: str(v) for k, v in self.flops_formula().items()},
            "counts_region": self.counts_region.text() if self.counts_region else [],
            "piece": self.piece_region.text() if self.piece_region else [],
            "specialized": self.specializations,
        }
        return d


def _analyse(graph: Graph, spec, symbols, notes) -> Piece:
    from solar.backend.analyze import analyze

    with recording() as rec:
        b = analyze(
            graph,
            spec,
            notes=notes if notes is not None else list(graph.info.trace_notes) or None,
        )
    return Piece(Region.of(symbols, rec.guards), b)


def _point_text(point: Mapping[sympy.Symbol, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())
