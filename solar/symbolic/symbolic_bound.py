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

A SymbolicBound is frozen data; what grows as points are asked (the pieces, the walks along a
size) and the links it analyses with (graph, spec, ``retrace``) are its
:attr:`~SymbolicBound.analysis` (:mod:`solar.symbolic.analysis`). ``to_json`` writes the Bound
of the traced point with a ``symbolic`` section: the formulas as text for readers, and, read
back by ``SymbolicBound.from_json``, every expression of the Bound (``exprs``: path in the
dict, ``size`` or ``real``, sympy ``srepr``), both regions' guards, and the pieces met so far.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import sympy

from solar.algebra.condition import Condition, condition
from solar.algebra.region import Guard, Region
from solar.algebra.size import IntGcd, Real, Size, expr_of, symbol
from solar.algebra.walk import evaluate
from solar.backend.result import Bound
from solar.graph.types import Graph
from solar.symbolic.analysis import OutsideRegionError, Piece, SymbolicAnalysis, analyse

__all__ = ["LEVELS", "QUANTITIES", "OutsideRegionError", "Piece", "SymbolicBound"]

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


def _quantity(name: str) -> Callable[[Bound], object]:
    if name not in QUANTITIES:
        raise ValueError(f"unknown quantity {name!r}; one of {', '.join(QUANTITIES)}")
    return QUANTITIES[name]


def _expr(x: object) -> sympy.Expr:
    if isinstance(x, Real):
        return x.expr
    if isinstance(x, (Size, int)) and not isinstance(x, bool):
        return expr_of(x)
    return sympy.Float(float(x))  # type: ignore[arg-type]


@dataclass(frozen=True, repr=False)
class SymbolicBound(Bound):
    """The Bound at the traced sizes, with its formulas (see the module docstring): frozen
    data, whose :attr:`analysis` records the pieces met as points are asked."""

    sizes: Mapping[str, int] = field(default_factory=dict)  # size name -> traced value
    counts_region: Region | None = None
    piece_region: Region | None = None
    #: the graph, spec and pieces analysed so far (None only while being built)
    _analysis: SymbolicAnalysis | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self._analysis is None:  # data alone: its own piece is all it knows
            piece = Piece(self.piece_region or Region(()), _plain(self))
            analysis = SymbolicAnalysis(None, None, self.counts_region, self.sizes, [piece])
            object.__setattr__(self, "_analysis", analysis)

    @staticmethod
    def of(
        graph: Graph,
        spec,
        counts_region: Region,
        sizes: Mapping[str, int],
        notes=None,
        retrace: Callable[[dict[str, int]], Bound] | None = None,
    ) -> SymbolicBound:
        """Analyse the symbolic ``graph`` on ``spec`` at its traced sizes (``retrace``: a
        numeric bound at sizes outside ``counts_region``, from a new trace)."""
        piece = analyse(graph, spec, counts_region.symbols, notes)
        analysis = SymbolicAnalysis(graph, spec, counts_region, sizes, [piece], retrace)
        return SymbolicBound(
            **_fields(piece.bound),
            sizes=dict(sizes),
            counts_region=counts_region,
            piece_region=piece.region,
            _analysis=analysis,
        )

    @property
    def analysis(self) -> SymbolicAnalysis:
        """The live half: graph, spec, pieces so far, retrace (:mod:`solar.symbolic.analysis`)."""
        assert self._analysis is not None
        return self._analysis

    @property
    def retrace(self) -> Callable[[dict[str, int]], Bound] | None:
        """A numeric bound at other sizes from a new trace (None: not available): used where a
        point lies outside the count region."""
        return self.analysis.retrace

    # -- formulas ------------------------------------------------------------------------

    @property
    def symbols(self) -> dict[str, sympy.Symbol]:
        return {name: symbol(name) for name in self.sizes}

    def formula(self, quantity: str = "fused") -> sympy.Expr:
        """A quantity of :data:`QUANTITIES` (a level's seconds, bytes, peak memory, launches,
        critical path) as one expression in the size symbols that holds wherever it says: a
        sympy ``Piecewise`` of the pieces met so far, each with the sizes it holds for (the
        count region's guards and its piece's, :func:`~solar.algebra.condition.condition`);
        ``nan`` at sizes in none of them (:meth:`at` bounds any size). A bound whose only
        piece holds on the whole count region gives the bare expression. The walks along a
        size (:meth:`piecewise`, :meth:`crossovers`, ``solar bound --symbolic``) meet the
        pieces along it; :meth:`expression` is the traced piece's expression alone."""
        pick = _quantity(quantity)
        parts: list[tuple[sympy.Expr, Condition]] = []
        for p in self.pieces:
            region = self.counts_region & p.region if self.counts_region else p.region
            expr, cond = _expr(pick(p.bound)), condition(region)
            while not cond.empty:  # joined with a part of the same expression, as long as one is
                i = next((i for i, (e, c) in enumerate(parts) if e == expr and c.join(cond)), None)
                if i is None:
                    parts.append((expr, cond))
                    break
                cond = parts.pop(i)[1].join(cond)  # type: ignore[assignment]
        if len(parts) == 1 and parts[0][1].boolean() is sympy.true:
            return parts[0][0]
        # not evaluated: sympy would join equal expressions by an Or and rewrite it
        return sympy.Piecewise(*((e, c.boolean()) for e, c in parts), evaluate=False)

    def expression(self, quantity: str = "fused") -> sympy.Expr:
        """The expression of a quantity on the traced piece alone: it holds where
        :attr:`piece_region` and :attr:`counts_region` hold (:meth:`formula` says where)."""
        return _expr(_quantity(quantity)(self))

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
        return self.analysis.point(sizes)

    def piece_at(self, **sizes: int) -> Piece:
        """The piece holding the point (analysed now if no piece recorded so far does)."""
        return self.analysis.piece_at(self._point(sizes))

    @property
    def pieces(self) -> tuple[Piece, ...]:
        """The pieces analysed so far (the traced one first)."""
        return self.analysis.pieces

    def new_piece(self, **sizes: int) -> Piece:
        """The analysis at these sizes, recorded as a new piece, without looking for a piece
        met so far that holds there (sweeps check those at all their points at once)."""
        return self.analysis.new_piece(self._point(sizes))

    def inside(self, **sizes: int) -> bool:
        """Whether the traced program's counts hold at these sizes (the count region)."""
        return self.analysis.inside(self._point(sizes))

    def at(self, **sizes: int) -> Bound:
        """The numeric Bound at these sizes (the others at their traced values): the formula's
        piece there; outside the count region a new numeric trace (:attr:`retrace`), or
        :class:`OutsideRegionError` when there is none."""
        point = self._point(sizes)
        if self.retrace is not None and not self.analysis.inside(point):
            return self.retrace({str(k): v for k, v in point.items()})
        out = evaluate(self.analysis.piece_at(point).bound, point)
        assert isinstance(out, Bound)
        return out

    def numeric_at(self, **sizes: int) -> Bound:
        """The numeric Bound at these sizes from the graph evaluated there and analysed as
        numbers (equal to :meth:`at`; no piece is recorded: for one point away from the
        pieces met so far, a numeric analysis is much cheaper than a symbolic one)."""
        return self.analysis.numeric_at(self._point(sizes))

    def quick_at(self, **sizes: int) -> Bound:
        """The numeric Bound at these sizes the cheapest way (equal to :meth:`at` inside the
        count region): a recorded piece's formula where one holds there, else
        :meth:`numeric_at` (a few milliseconds instead of a new piece's symbolic analysis)."""
        point = self._point(sizes)
        if any(p.region.holds(point) for p in self.pieces):
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
        return self.analysis.cover(size, xs, todo, fixed)

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
        walk = self.analysis.walk(size, *self.analysis.span(size, lo, hi, fixed), fixed)
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
        walk = self.analysis.walk(size, *self.analysis.span(size, lo, hi, fixed), fixed)
        out: list[tuple[int, str, str]] = []
        for (_, _, piece), (x, _, nxt) in zip(walk, walk[1:]):
            by = getattr(piece.bound, f"{level}_bound_by")
            by_next = getattr(nxt.bound, f"{level}_bound_by")
            if by_next != by:
                out.append((x, by, by_next))
        return out

    def solve(
        self, level: str, target_s: float, size: str, hi: int = 1 << 40, **fixed: int
    ) -> int | None:
        """The largest ``size`` whose ``level`` bound is at most ``target_s`` seconds (bounds
        grow with sizes: bisection on exact evaluations), or None when even 1 is slower."""

        def ok(x: int) -> bool:
            return self.numeric_at(**{**fixed, size: x}).time(level) <= target_s

        first, hi = self.analysis.span(size, 1, hi, fixed)
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
            # per quantity its pieces, [expression, where it holds] (text sympy parses): a
            # reader evaluates the piece whose condition holds, not one Piecewise to re-solve
            "formulas": {q: _pieces_text(self.formula(q)) for q in QUANTITIES},
            "flops": {k: str(v) for k, v in self.flops_formula().items()},
            "counts_region": self.counts_region.text() if self.counts_region else [],
            "piece": self.piece_region.text() if self.piece_region else [],
            "specialized": self.specializations,
            # what from_dict reads back (exact: sympy's srepr), the traced piece first
            "exprs": _exprs(d),
            "regions": {
                "counts": _region_data(self.counts_region),
                "piece": _region_data(self.piece_region),
            },
            "pieces": [_piece_data(p) for p in self.pieces[1:]],
        }
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SymbolicBound:
        """The SymbolicBound of :meth:`to_dict`, with its formulas, regions and the pieces known
        when it was written (no graph: a point in none of them raises
        :class:`OutsideRegionError`; no retrace)."""
        sym = d.get("symbolic")
        if not sym or "exprs" not in sym:
            raise ValueError("not a symbolic bound's JSON (no symbolic.exprs)")
        base = Bound.from_dict(_with_exprs(d, sym["exprs"]))
        counts = _region_of(sym["regions"]["counts"])
        piece = _region_of(sym["regions"]["piece"])
        pieces = [Piece(piece or Region(()), base)]
        for p in sym["pieces"]:
            bound = Bound.from_dict(_with_exprs(p["bound"], p["exprs"]))
            pieces.append(Piece(_region_of(p["region"]) or Region(()), bound))
        sizes = dict(sym["sizes"])
        return cls(
            **_fields(base),
            sizes=sizes,
            counts_region=counts,
            piece_region=piece,
            _analysis=SymbolicAnalysis(None, None, counts, sizes, pieces),
        )


# ---------------------------------------------------------------------------------------------
# JSON: where a Bound's dict holds a formula, and regions as guards


def _pieces_text(e: sympy.Expr) -> list[list[str]]:
    """``[[expression, condition], ...]`` of a formula (one ``[e, "True"]`` for a bare one)."""
    if isinstance(e, sympy.Piecewise):
        return [[str(a.expr), str(a.cond)] for a in e.args]
    return [[str(e), "True"]]


def _fields(b: Bound) -> dict:
    """The fields of ``b`` a :class:`Bound` has."""
    return {f.name: getattr(b, f.name) for f in dataclasses.fields(Bound)}


def _plain(b: Bound) -> Bound:
    return Bound(**_fields(b))


def _exprs(d: object, path: tuple = ()) -> list:
    """``[path, "size" | "real", srepr]`` of every Size and Real in a Bound's ``to_dict``."""
    if isinstance(d, (Size, Real)):
        return [[list(path), "size" if isinstance(d, Size) else "real", sympy.srepr(d.expr)]]
    out: list = []
    if isinstance(d, dict):
        for k, v in d.items():
            if k != "symbolic":
                out += _exprs(v, (*path, k))
    elif isinstance(d, (list, tuple)):
        for i, v in enumerate(d):
            out += _exprs(v, (*path, i))
    return out


def _with_exprs(d: dict, exprs: list) -> dict:
    """A copy of ``d`` (JSON data) with the numbers at the paths of ``exprs`` made Sizes and
    Reals again (their values the numbers written)."""
    d = copy.deepcopy(d)
    for path, kind, text in exprs:
        *up, last = path
        where = d
        for k in up:
            where = where[k]
        make = Size if kind == "size" else Real
        where[last] = make(where[last], _parse(text))
    return d


def _parse(text: str) -> sympy.Basic:
    return sympy.parse_expr(text, local_dict={"IntGcd": IntGcd}, transformations=())


def _region_data(r: Region | None) -> dict | None:
    if r is None:
        return None
    return {
        "symbols": [str(s) for s in r.symbols],
        "guards": [[*_relation_data(g.relation), g.where] for g in r.guards],
    }


def _relation_data(r: sympy.Basic) -> list[str]:
    """A guard's relation as ``[its class, lhs, rhs]`` (srepr), rebuilt unevaluated: a guard
    such as ``c*batch >= 0`` is kept as recorded, not simplified to True by the reader."""
    if isinstance(r, sympy.core.relational.Relational):
        return [type(r).__name__, sympy.srepr(r.lhs), sympy.srepr(r.rhs)]
    return ["", sympy.srepr(r), ""]


def _relation_of(kind: str, lhs: str, rhs: str) -> sympy.Basic:
    if not kind:
        return _parse(lhs)
    return getattr(sympy, kind)(_parse(lhs), _parse(rhs), evaluate=False)


def _region_of(d: dict | None) -> Region | None:
    if d is None:
        return None
    guards = tuple(Guard(_relation_of(*g[:3]), g[3]) for g in d["guards"])
    return Region(tuple(symbol(s) for s in d["symbols"]), guards)


def _piece_data(p: Piece) -> dict:
    d = p.bound.to_dict()
    return {"region": _region_data(p.region), "bound": d, "exprs": _exprs(d)}
