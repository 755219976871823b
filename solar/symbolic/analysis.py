"""The live half of a symbolic bound: :class:`SymbolicAnalysis` and its :class:`Piece` s.

A :class:`~solar.symbolic.symbolic_bound.SymbolicBound` is frozen data (the Bound at the traced
sizes
with its formulas, its regions, the pieces known so far). What grows as it is asked lives
here: the symbolic graph and spec it re-analyses on, the pieces recorded so far, the memo of
walks along a size, and the ``retrace`` link to the program (its model and inputs) used
outside the count region. A bound read back from JSON has an analysis without a graph: it
answers from the pieces it was written with and says so at any other point.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import sympy

from solar.algebra.region import Region
from solar.algebra.size import recording, symbol
from solar.algebra.template import Template
from solar.algebra.walk import evaluate, rehint
from solar.backend.result import Bound
from solar.graph.types import Graph

Point = dict[sympy.Symbol, int]


class OutsideRegionError(ValueError):
    """A point where the traced program's counts are not known to hold: trace there."""


@dataclass(frozen=True)
class Piece:
    """The analysis on one region of sizes: its Bound (sizes and times symbolic)."""

    region: Region
    bound: Bound


def analyse(graph: Graph, spec, symbols, notes) -> Piece:
    """One piece: ``graph`` analysed on ``spec`` with the analysis' guards recorded."""
    from solar.backend.analyze import analyze

    with recording() as rec:
        b = analyze(
            graph,
            spec,
            notes=notes if notes is not None else list(graph.info.trace_notes) or None,
        )
    return Piece(Region.of(symbols, rec.guards), b)


class SymbolicAnalysis:
    """The symbolic ``graph`` on ``spec``, its count region, and the pieces analysed so far
    (the traced one first); ``graph`` None: only ``pieces`` (a bound read from JSON)."""

    def __init__(
        self,
        graph: Graph | None,
        spec,
        counts_region: Region | None,
        sizes: Mapping[str, int],
        pieces: Sequence[Piece],
        retrace: Callable[[dict[str, int]], Bound] | None = None,
    ) -> None:
        self.graph = graph
        self.spec = spec
        self.counts_region = counts_region
        self.sizes = dict(sizes)
        #: a numeric bound at other sizes from a new trace (None: not available); used where a
        #: point lies outside the count region
        self.retrace = retrace
        self._pieces = list(pieces)
        self._template: Template | None = None
        self._walks: dict = {}

    def __getstate__(self) -> dict:
        """What pickles: the graph and the pieces. The caches stay behind (rebuilt on use), and
        so does :attr:`retrace`, a live link to the program (its model and inputs): unpickled,
        a point outside the count region raises ``OutsideRegionError``."""
        return {**self.__dict__, "retrace": None, "_template": None, "_walks": {}}

    @property
    def pieces(self) -> tuple[Piece, ...]:
        return tuple(self._pieces)

    # -- points --------------------------------------------------------------------------

    def point(self, sizes: Mapping[str, int]) -> Point:
        """The full point of ``sizes`` (the others at their traced values), checked."""
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

    def check_inside(self, point: Mapping[sympy.Symbol, int]) -> None:
        """Raise :class:`OutsideRegionError` naming the first count guard false at ``point``."""
        failed = self.counts_region.failing(point) if self.counts_region else None
        if failed is not None:
            where = f" ({failed.where})" if failed.where else ""
            raise OutsideRegionError(
                f"{point_text(point)} is outside the sizes this trace counts exactly: "
                f"{failed.relation} does not hold{where}; bound the program at that size"
            )

    def inside(self, point: Mapping[sympy.Symbol, int]) -> bool:
        return self.counts_region is None or self.counts_region.holds(point)

    # -- pieces --------------------------------------------------------------------------

    def piece_at(self, point: Point) -> Piece:
        """The piece holding ``point`` (analysed now if no piece recorded so far does)."""
        self.check_inside(point)
        memo: dict = {}  # guard results at this point, shared by the pieces' regions
        for p in self._pieces:
            if p.region.holds(point, memo):
                return p
        return self.new_piece(point)

    def new_piece(self, point: Point) -> Piece:
        """The analysis at ``point``, recorded as a new piece, without looking for a piece met
        so far that holds there (sweeps check those at all their points at once)."""
        graph = rehint(self._graph(point), point, self._graph_template())
        piece = analyse(graph, self.spec, self.counts_region.symbols, None)
        self._pieces.append(piece)
        return piece

    def _graph(self, point: Point) -> Graph:
        if self.graph is None:
            raise OutsideRegionError(
                f"{point_text(point)} lies in none of the pieces this bound was saved with "
                "(a bound read from JSON keeps no graph to analyse): bound the program again"
            )
        return self.graph

    def _graph_template(self) -> Template:
        """The graph's :class:`Template`, made at the first rebuild (after the traced point's
        analysis, the last to change the graph itself)."""
        if self._template is None:
            self._template = Template(self.graph)
        return self._template

    def numeric_at(self, point: Point) -> Bound:
        """The graph evaluated at ``point`` and analysed as numbers (no piece recorded); a
        bound without a graph: its piece's formula there."""
        from solar.backend.analyze import analyze

        self.check_inside(point)
        if self.graph is None:
            out = evaluate(self.piece_at(point).bound, point)
            assert isinstance(out, Bound)
            return out
        g = evaluate(self.graph, point, self._graph_template())
        return analyze(g, self.spec, notes=list(g.info.trace_notes) or None)

    def cover(
        self, size: str, xs: np.ndarray, todo: np.ndarray, fixed: Mapping[str, int]
    ) -> Iterator[tuple[Piece, np.ndarray]]:
        """See :meth:`~solar.symbolic.symbolic_bound.SymbolicBound.cover`."""
        base = self.point(fixed)
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
            piece = self.new_piece(self.point({**fixed, size: int(xs[first])}))
            mine = todo & piece.region.holds_many(pts)
            mine[first] = True
            yield piece, mine
            todo &= ~mine

    def walk(
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
                point = self.point({**fixed, size: x})
                piece = self.piece_at(point)
                _, top = piece.region.interval(symbol(size), point, hi=hi)
                walk.append((x, top, piece))
                x = top + 1
            self._walks[key] = walk
        return self._walks[key]

    def span(self, size: str, lo: int, hi: int, fixed: Mapping[str, int]) -> tuple[int, int]:
        """``[lo, hi]`` cut to the count region along ``size`` (through the traced value)."""
        if self.counts_region is None:
            return lo, hi
        a, b = self.counts_region.interval(symbol(size), self.point(fixed), hi=hi)
        return max(lo, a), min(hi, b)


def point_text(point: Mapping[sympy.Symbol, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())
