"""Scalar expressions: the right-hand side of a statement, evaluated per loop instance."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from solar.ir.affine import Affine


class Expr:
    """Base of scalar expression nodes."""

    def children(self) -> tuple[Expr, ...]:
        return ()

    def walk(self) -> Iterator[Expr]:
        yield self
        for c in self.children():
            yield from c.walk()

    def loads(self) -> list[Load]:
        return [e for e in self.walk() if isinstance(e, Load)]


@dataclass(frozen=True)
class Load(Expr):
    """Read ``tensor[index]``; ``index`` is affine in the statement's loop dims."""

    tensor: str
    index: tuple[Affine, ...]

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
