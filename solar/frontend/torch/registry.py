"""The operator registry: aten operator -> function that emits its loop nests.

A lowering is ``fn(ctx, *args)``: ``ctx`` is the :class:`~solar.frontend.torch.lower.Lowering`
of one graph node and ``args`` are the operator's schema arguments in order, defaults filled in,
with tensors replaced by :class:`~solar.frontend.torch.lower.T` references. It declares the node's
outputs (``ctx.out()``) and emits statements (``ctx.statement``); everything it emits forms one
kernel. Register with ``@lowering(torch.ops.aten.foo.default)`` (an overload) or
``@lowering(torch.ops.aten.foo)`` (every overload of the packet).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

LOWERINGS: dict[object, Callable[..., None]] = {}

HOW_TO_ADD = "see solar/frontend/torch/ops/"
NO_DEFINITION = "has no loop-nest definition"


def lowering(*ops: object) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``fn`` as the loop-nest definition of each of ``ops``."""
    if not ops:
        raise TypeError("@lowering needs at least one aten operator")

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        for op in ops:
            if not isinstance(op, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
                raise TypeError(f"@lowering takes torch.ops.aten operators, not {op!r}")
            LOWERINGS[op] = fn
        return fn

    return register


@dataclass
class MissingOperator:
    """One operator a program needs and the frontend cannot lower: why, how many nodes of the
    traced graph call it, and the source line of each (in graph order)."""

    op: str
    reason: str
    sources: list[str] = field(default_factory=list)
    count: int = 1

    def line(self, all_sources: bool = False) -> str:
        where = [s for s in self.sources if s]
        shown = where if all_sources else where[:1]
        at = f", at {', '.join(shown)}" if shown else ""
        more = len(where) - len(shown)
        rest = f" and {more} more: --debug lists them" if more else ""
        return f"{self.op} ({self.count}x{at}{rest}): {self.reason}"


class UnsupportedOperatorError(ValueError):
    """An operator the frontend has no loop-nest definition for (or cannot express).

    ``missing`` lists every such operator of the program once (:class:`MissingOperator`):
    tracing goes on past each one to collect them all, and raises this error at the end."""

    def __init__(self, op: object, source: str = "", reason: str = "") -> None:
        self.op = str(op)
        self.source = source
        where = f" at {source}" if source else ""
        self.reason = reason or NO_DEFINITION
        self.missing: list[MissingOperator] = [MissingOperator(self.op, self.reason, [source])]
        reason = reason or (
            f"{NO_DEFINITION}; register one with "
            f"@solar.frontend.torch.lowering(torch.ops.{self.op}) — {HOW_TO_ADD}"
        )
        super().__init__(f"{self.op}{where} {reason}")

    @classmethod
    def collected(cls, missing: list[MissingOperator]) -> UnsupportedOperatorError:
        """One error listing every operator of ``missing`` (at least two)."""
        err = cls(missing[0].op, next(iter(missing[0].sources), ""), missing[0].reason)
        err.missing = list(missing)
        ValueError.__init__(err, err.report())
        return err

    def report(self, all_sources: bool = False) -> str:
        """Every missing operator, one line each (``all_sources``: every source line)."""
        if len(self.missing) == 1 and not all_sources:
            return str(self.args[0]) if self.args else ""
        n = len(self.missing)
        head = (
            f"{n} operators cannot be lowered (tracing went on past each to list them all; no "
            f"bound is computed until each is lowered: register one with "
            f"@solar.frontend.torch.lowering(torch.ops.<op>) — {HOW_TO_ADD}):"
        )
        return "\n".join([head, *(f"  {m.line(all_sources)}" for m in self.missing)])


class DataDependentOperatorError(UnsupportedOperatorError):
    """An operator whose output shape or value depends on tensor data (nonzero, item)."""

    def __init__(self, op: object, source: str = "") -> None:
        super().__init__(
            op,
            source,
            "is data-dependent (a Python value read from tensor contents), which fake tensors "
            "cannot give: trace with observe=True on real inputs to use the values they "
            "produce, or keep it out of the traced code",
        )


# lowerings of operators of libraries that define them when imported (torchvision::nms), by
# the name ``str(op)`` has: "torchvision.nms.default"
NAMED_LOWERINGS: dict[str, Callable[..., None]] = {}


def named_lowering(*names: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``fn`` for operators not defined yet when solar is imported, by name."""

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        for name in names:
            NAMED_LOWERINGS[name] = fn
        return fn

    return register


def mutated_args(op: torch._ops.OpOverload) -> list[str]:
    """Names of the arguments ``op`` writes in place (``self`` of ``add_``, ``out=``)."""
    return [
        a.name for a in op._schema.arguments if a.alias_info is not None and a.alias_info.is_write
    ]


def functional_form(op: torch._ops.OpOverload) -> torch._ops.OpOverload:
    """``aten.add.Tensor`` for the in-place ``aten.add_.Tensor``; ``op`` itself otherwise."""
    name = op.overloadpacket.__name__
    if name.endswith("_") and mutated_args(op) == ["self"]:
        packet = getattr(torch.ops.aten, name[:-1], None)
        functional = getattr(packet, op._overloadname, None) if packet is not None else None
        if isinstance(functional, torch._ops.OpOverload):
            return functional
    return op


def find_lowering(op: torch._ops.OpOverload) -> Callable[..., None] | None:
    """The lowering of ``op``: the overload's, else its packet's; an in-place operator
    (``aten.add_.Tensor``) without one of its own uses its functional form's (``aten.add.Tensor``),
    writing into ``self``."""
    for candidate in dict.fromkeys([op, functional_form(op)]):
        fn = LOWERINGS.get(candidate) or LOWERINGS.get(candidate.overloadpacket)
        if fn is not None:
            return fn
    return NAMED_LOWERINGS.get(str(op))
