"""Scalar expressions: the right-hand side of a statement, evaluated per loop instance.

Index entries of loads and outputs are affine (:class:`~solar.ir.affine.Affine`) or
:class:`Indirect`: a data-dependent index, the integer value of a scalar expression (typically a
load of an index tensor), as in ``table[ids[i], j]``. The expressions inside an indirect index
are *index arithmetic*: they are executed, and their loads are read (and cost DRAM traffic), but
their operators cost nothing. :meth:`Expr.walk` visits them; :meth:`Expr.walk_values` does not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from solar.ir.affine import Affine, AffineLike, DataDependentEntry


class Expr:
    """Base of scalar expression nodes."""

    def children(self) -> tuple[Expr, ...]:
        return ()

    def walk(self) -> Iterator[Expr]:
        """Every node, including those inside indirect indices."""
        yield self
        for c in self.children():
            yield from c.walk()

    def walk_values(self) -> Iterator[Expr]:
        """The nodes that compute the value, not descending into indirect indices (index
        arithmetic, which costs nothing)."""
        yield self
        if not isinstance(self, Load):
            for c in self.children():
                yield from c.walk_values()

    def loads(self) -> list[Load]:
        """Every load, including the index-tensor loads inside indirect indices."""
        return [e for e in self.walk() if isinstance(e, Load)]

    def value_loads(self) -> list[Load]:
        """The loads whose values the expression computes with (not index loads)."""
        return [e for e in self.walk_values() if isinstance(e, Load)]


@dataclass(frozen=True)
class Load(Expr):
    """Read ``tensor[index]``; each index entry is affine in the statement's loop dims, or
    :class:`Indirect` (data-dependent)."""

    tensor: str
    index: tuple[Affine | Indirect, ...]

    def children(self) -> tuple[Expr, ...]:
        return tuple(e.expr for e in self.index if isinstance(e, Indirect))

    @property
    def indirect(self) -> bool:
        """Whether some index entry is data-dependent (a gather)."""
        return any(isinstance(e, Indirect) for e in self.index)

    def __str__(self) -> str:
        return f"{self.tensor}[{','.join(map(str, self.index))}]"


@dataclass(frozen=True)
class Const(Expr):
    value: float | int | bool

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True)
class Index(Expr):
    """The value of an affine function of the loop dims (iota, triangle masks)."""

    expr: Affine

    def __str__(self) -> str:
        return f"({self.expr})"


@dataclass(frozen=True)
class Call(Expr):
    """Apply a scalar operator of :mod:`solar.ir.ops` to arguments, with static attributes."""

    op: str
    args: tuple[Expr, ...]
    attrs: tuple[tuple[str, object], ...] = field(default=())

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def attr(self, key: str, default: object = None) -> object:
        return dict(self.attrs).get(key, default)

    def __str__(self) -> str:
        from solar.ir.ops import SCALAR_OPS

        spec = SCALAR_OPS[self.op]
        if spec.infix and len(self.args) == 2:
            return f"({self.args[0]} {spec.infix} {self.args[1]})"
        extra = [f"{k}={v}" for k, v in self.attrs]
        return f"{self.op}({', '.join([*map(str, self.args), *extra])})"


def call(op: str, *args: Expr, **attrs: object) -> Call:
    return Call(op, tuple(args), tuple(sorted(attrs.items())))


@dataclass(frozen=True)
class Indirect(DataDependentEntry):
    """A data-dependent index entry: the integer value of ``expr`` at each loop instance.

    ``expr`` is a scalar expression over the statement's loop dims, usually a load of an
    integer index tensor (``Load("ids", (i,))``), possibly with index arithmetic around it
    (``where(t < 0, t + n, t)``). Every value must lie in ``[0, extent)`` of the indexed tensor
    dim where the instance executes (the executor checks; no negative wrap-around, no padding).
    Costs: the index arithmetic is free, the index loads are ordinary reads, and the elements
    the entry selects are data-dependent, so footprints count the provable minimum (one value
    per indirect entry) and say ``exact=False``.
    """

    expr: Expr

    @property
    def dims(self) -> tuple[str, ...]:
        """The loop dims the index value may depend on."""
        return tuple(sorted({d for n in self.expr.walk() for d in _node_dims(n)}))

    @property
    def single_dim(self) -> None:
        return None

    @property
    def is_const(self) -> bool:
        return False

    def rename(self, mapping: Mapping[str, str]) -> Indirect:
        return Indirect(rename_expr(self.expr, mapping))

    def substitute(self, mapping: Mapping[str, AffineLike]) -> Indirect:
        return Indirect(substitute_expr(self.expr, mapping))

    def __str__(self) -> str:
        return "{" + str(self.expr) + "}"

    __repr__ = __str__


IndexEntry = Affine | Indirect


def _node_dims(e: Expr) -> tuple[str, ...]:
    if isinstance(e, Load):
        return tuple(d for x in e.index if isinstance(x, Affine) for d in x.dims)
    if isinstance(e, Index):
        return e.expr.dims
    return ()


def _map_entry(x: Affine | Indirect, fn) -> Affine | Indirect:
    return Indirect(_map_expr(x.expr, fn)) if isinstance(x, Indirect) else fn(x)


def _map_expr(e: Expr, fn) -> Expr:
    """``e`` with every affine form ``a`` (in loads, Index nodes and indirect indices) replaced
    by ``fn(a)``."""
    if isinstance(e, Load):
        return Load(e.tensor, tuple(_map_entry(x, fn) for x in e.index))
    if isinstance(e, Index):
        return Index(fn(e.expr))
    if isinstance(e, Call):
        return Call(e.op, tuple(_map_expr(a, fn) for a in e.args), e.attrs)
    return e


def rename_expr(e: Expr, mapping: Mapping[str, str]) -> Expr:
    """``e`` with loop dims renamed."""
    return _map_expr(e, lambda a: a.rename(mapping))


def substitute_expr(e: Expr, mapping: Mapping[str, AffineLike]) -> Expr:
    """``e`` with loop dims replaced by affine expressions (or integers)."""
    return _map_expr(e, lambda a: a.substitute(mapping))
