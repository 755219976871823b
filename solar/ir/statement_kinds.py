"""The statements of the Affine Loop IR: loop dims, accesses, guards, and the three statement
kinds (a plain loop nest :class:`Statement`, a :class:`Scan`, an :class:`Extern` routine over
rows), with the visitor a pass handles each kind through. One statement is one loop nest::

    for m<M, n<N | k<K:   O[m,n] += A[m,k] * B[k,n]

The kernels and programs that hold statements, and the checks of a whole program, are
:mod:`solar.ir.program`'s; the text of a statement is :mod:`solar.ir.printer`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod
from typing import ClassVar, Generic, TypeVar

from solar.ir.affine import Affine
from solar.ir.scalar import Expr, Indirect, Load

R = TypeVar("R")


@dataclass(frozen=True)
class Dim:
    """A loop dimension ``name < extent``; reduction dims are summed (maxed, ...) away."""

    name: str
    extent: int
    reduction: bool = False


#: Dims and dims tuples the builder made, by value (:func:`interned_dims`)
_DIMS: dict[tuple, Dim] = {}
_DIM_TUPLES: dict[tuple, tuple] = {}
_INTERN_MAX = 1 << 16


def interned_dims(dims) -> tuple[Dim, ...]:
    """``dims`` (:class:`Dim` s or ``(name, extent[, reduction])`` tuples) as a tuple of Dims,
    equal ones (plain int extents) one object and equal tuples one tuple: a program's
    statements repeat a few hundred loop nests thousands of times, and fewer long-lived
    objects keep Python's full collections rare (as :data:`solar.ir.affine._INTERNED`)."""
    if len(_DIMS) >= _INTERN_MAX or len(_DIM_TUPLES) >= _INTERN_MAX:
        _DIMS.clear()
        _DIM_TUPLES.clear()
    out, plain = [], True
    for d in dims:
        if not isinstance(d, Dim):
            d = Dim(*d)
        if (
            type(d) is Dim
            and type(d.name) is str
            and type(d.extent) is int
            and type(d.reduction) is bool
        ):
            d = _DIMS.setdefault((d.name, d.extent, d.reduction), d)
        else:
            plain = False
        out.append(d)
    t = tuple(out)
    return _DIM_TUPLES.setdefault(t, t) if plain else t


@dataclass(frozen=True)
class Access:
    """``tensor[index]``: entries are affine, or :class:`~solar.ir.scalar.Indirect` for a
    data-dependent (scatter) write."""

    tensor: str
    index: tuple[Affine | Indirect, ...]

    @property
    def indirect(self) -> bool:
        return any(isinstance(e, Indirect) for e in self.index)

    def __str__(self) -> str:
        return f"{self.tensor}[{','.join(map(str, self.index))}]"


@dataclass(frozen=True)
class Guard:
    """``lo <= expr < hi``: the statement instance executes only where this holds."""

    expr: Affine
    lo: int
    hi: int

    def __str__(self) -> str:
        return f"{self.lo} <= {self.expr} < {self.hi}"


@dataclass(frozen=True)
class Statement:
    """One plain loop nest, and the fields every statement kind shares (:class:`Scan` and
    :class:`Extern` add theirs). Frozen: a pass that changes a statement builds a new one
    (``dataclasses.replace`` keeps the kind).

    Guards: an instance outside a guard does not execute. A reduction that does not
    accumulate still writes every output of its box: the reduction's identity (0 for a sum)
    where none of its instances executes.
    """

    dims: tuple[Dim, ...]
    out: Access
    expr: Expr
    reduce: str | None = None
    accumulate: bool = False
    guards: tuple[Guard, ...] = ()
    precision: str | None = None  # math mode of a contraction: None (native), "tf32", "ieee"
    dtype: str | None = None  # compute dtype of the scalar ops; None: promoted from the loads

    #: the visitor method a pass runs for this kind (:class:`StatementVisitor`)
    kind: ClassVar[str] = "nest"

    def accept(self, visitor: StatementVisitor[R]) -> R:
        return visitor.nest(self)

    @property
    def extents(self) -> dict[str, int]:
        return {d.name: d.extent for d in self.dims}

    @property
    def parallel_dims(self) -> tuple[Dim, ...]:
        return tuple(d for d in self.dims if not d.reduction)

    @property
    def reduction_dims(self) -> tuple[Dim, ...]:
        return tuple(d for d in self.dims if d.reduction)

    @property
    def instances(self) -> int:
        return prod(d.extent for d in self.dims)

    def loads(self) -> list[Load]:
        """Every load, including index-tensor loads inside indirect indices (of the
        expression and of the output)."""
        out = [ld for e in self.out.index if isinstance(e, Indirect) for ld in e.expr.loads()]
        return self.expr.loads() + out

    @property
    def gathers(self) -> bool:
        """Whether the expression reads through a data-dependent index."""
        return any(ld.indirect for ld in self.expr.loads())

    @property
    def scatters(self) -> bool:
        """Whether the output is written through a data-dependent index."""
        return self.out.indirect


@dataclass(frozen=True)
class Scan(Statement):
    """An inclusive prefix reduction along the parallel dim ``along``:
    ``out[.., i] = reduce_{i' <= i} expr[.., i']`` (in increasing order of the dim; reverse and
    exclusive scans are index arithmetic on the output and the loads). Needs ``reduce``, no
    reduction dims, no ``accumulate``, no scatter."""

    along: str = field(kw_only=True)
    kind: ClassVar[str] = "scan"

    def accept(self, visitor: StatementVisitor[R]) -> R:
        return visitor.scan(self)


@dataclass(frozen=True)
class Extern(Statement):
    """An opaque row routine ``routine`` of :data:`solar.ir.extern.EXTERN_OPS`. Its dims are
    ``(*batch, pos | *row)``: parallel batch dims, then the output position dim ``pos`` (the
    *last* parallel dim; extent 1 when the routine returns one element per row), and the
    reduction dims, which span the row (flattened row-major in nest order). ``expr`` is
    evaluated per element of the rows (over the batch and row dims; it must not use ``pos``),
    the routine maps each row to ``extent(pos)`` outputs, written to ``out`` (indexed by the
    parallel dims). No ``reduce``, ``accumulate`` or guards. ``attrs`` are the routine's static
    arguments (sorted ``(name, value)`` pairs)."""

    routine: str = field(kw_only=True)
    attrs: tuple[tuple[str, object], ...] = field(default=(), kw_only=True)
    kind: ClassVar[str] = "extern"

    def accept(self, visitor: StatementVisitor[R]) -> R:
        return visitor.extern(self)


class StatementVisitor(Generic[R]):
    """One pass over statements, one method per kind: ``visit(st)`` runs the method of
    ``st``'s kind. A pass overrides the kinds it handles; the others fail naming the pass."""

    def visit(self, st: Statement) -> R:
        return st.accept(self)

    def nest(self, st: Statement) -> R:
        raise NotImplementedError(f"{type(self).__name__} does not handle plain loop nests")

    def scan(self, st: Scan) -> R:
        raise NotImplementedError(f"{type(self).__name__} does not handle scan statements")

    def extern(self, st: Extern) -> R:
        raise NotImplementedError(f"{type(self).__name__} does not handle extern statements")


def new_statement(
    dims: tuple[Dim, ...],
    out: Access,
    expr: Expr,
    *,
    reduce: str | None = None,
    accumulate: bool = False,
    guards=(),
    precision: str | None = None,
    dtype: str | None = None,
    scan: str | None = None,
    extern: str | None = None,
    extern_attrs=(),
) -> Statement:
    """The statement of the kind the keywords ask for: a :class:`Scan` along ``scan``, an
    :class:`Extern` running ``extern`` with ``extern_attrs`` (a dict or pairs), else a plain
    nest. Not checked (see :func:`check_statement`)."""
    common = dict(
        reduce=reduce,
        accumulate=accumulate,
        guards=tuple(guards),
        precision=precision,
        dtype=dtype,
    )
    if scan is not None and extern is not None:
        raise ValueError(f"statement writing {out}: a scan cannot be an extern routine")
    if scan is not None:
        return Scan(dims, out, expr, **common, along=scan)
    if extern is not None:
        attrs = extern_attrs.items() if isinstance(extern_attrs, dict) else extern_attrs
        pairs = tuple(sorted((str(k), v) for k, v in attrs))
        return Extern(dims, out, expr, **common, routine=extern, attrs=pairs)
    if extern_attrs:
        raise ValueError(f"statement writing {out}: extern_attrs given without an extern routine")
    return Statement(dims, out, expr, **common)


def with_loops(st: Statement, loops: tuple[Dim, ...]) -> Statement:
    """``st`` with the sequential loop dims of its kernel prepended as parallel dims: the
    iteration domain its accesses range over in the whole kernel (for footprints and op
    counts). ``st`` itself when there are no loops."""
    if not loops:
        return st
    return replace(st, dims=tuple(Dim(d.name, d.extent) for d in loops) + tuple(st.dims))
