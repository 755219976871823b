"""The operator registry: aten operator -> function that emits its loop nests.

A lowering is ``fn(ctx, *args)``: ``ctx`` is the
:class:`~solar.frontend.torch.lower.LoweringContext` of one graph node and ``args`` are the
operator's schema arguments in order, defaults filled in, with tensors replaced by
:class:`~solar.frontend.layout.T` references. It declares the node's
outputs (``ctx.out()``) and emits statements (``ctx.statement``); everything it emits forms one
kernel. Register with ``@lowering(torch.ops.aten.foo.default)`` (an overload) or
``@lowering(torch.ops.aten.foo)`` (every overload of the packet). The table is a
:class:`solar.frontend.lowering.Registry`: an operator registered twice is an error naming both
functions.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from solar.frontend.lowering import errors
from solar.frontend.lowering.errors import NO_DEFINITION, MissingOperator
from solar.frontend.lowering.registry import Registry

HOW_TO_ADD = "see solar/frontend/torch/ops/"

__all__ = [
    "LOWERINGS",
    "NAMED_LOWERINGS",
    "NO_DEFINITION",
    "DataDependentOperatorError",
    "MissingOperator",
    "UnsupportedOperatorError",
    "find_lowering",
    "functional_form",
    "lowering",
    "mutated_args",
    "named_lowering",
]


def _aten_op(op: object) -> object:
    if not isinstance(op, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        raise TypeError(f"@lowering takes torch.ops.aten operators, not {op!r}")
    return op


#: aten overload or packet -> the function that emits its loop nests
LOWERINGS: Registry[object, Callable[..., None]] = Registry("PyTorch", key=_aten_op)


def lowering(
    *ops: object, replace: bool = False
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``fn`` as the loop-nest definition of each of ``ops`` (an operator registered
    twice is an error; ``replace``: this one replaces, and may wrap, the one registered)."""
    if not ops:
        raise TypeError("@lowering needs at least one aten operator")

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        for op in ops:
            LOWERINGS.add(op, fn, replace=replace)
        return fn

    return register


class UnsupportedOperatorError(errors.UnsupportedOperatorError):
    """An aten operator the frontend has no loop-nest definition for (or cannot express).

    ``missing`` lists every such operator of the program once (:class:`MissingOperator`):
    tracing goes on past each one to collect them all, and raises this error at the end."""

    how_to_add = f"@solar.frontend.torch.lowering(torch.ops.{{op}}) — {HOW_TO_ADD}"


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


def _name(op: object) -> str:
    if not isinstance(op, str):
        raise TypeError(f"@named_lowering takes operator names, not {op!r}")
    return op


# lowerings of operators of libraries that define them when imported (torchvision::nms), by
# the name ``str(op)`` has: "torchvision.nms.default"
NAMED_LOWERINGS: Registry[str, Callable[..., None]] = Registry("PyTorch (by name)", key=_name)


def named_lowering(*names: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``fn`` for operators not defined yet when solar is imported, by name."""

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        for name in names:
            NAMED_LOWERINGS.add(name, fn)
        return fn

    return register


def mutated_args(op: torch._ops.OpOverload) -> list[str]:
    """Names of the arguments ``op`` writes in place (``self`` of ``add_``, ``out=``)."""
    return [
        a.name for a in op._schema.arguments if a.alias_info is not None and a.alias_info.is_write
    ]


def functional_form(op: torch._ops.OpOverload) -> torch._ops.OpOverload:
    """``aten.add.Tensor`` for the in-place ``aten.add_.Tensor``, ``aten.div.Tensor`` for the
    ``out=`` form ``aten.div.out`` (:func:`out_form_of`); ``op`` itself otherwise."""
    name = op.overloadpacket.__name__
    if name.endswith("_") and mutated_args(op) == ["self"]:
        packet = getattr(torch.ops.aten, name[:-1], None)
        functional = getattr(packet, op._overloadname, None) if packet is not None else None
        if isinstance(functional, torch._ops.OpOverload):
            return functional
    return out_form_of(op) or op


def _out_args(op: torch._ops.OpOverload) -> list[str]:
    """The keyword-only arguments ``op`` writes (``out=``), when they are its last ones."""
    args = op._schema.arguments
    written = [a for a in args if a.alias_info is not None and a.alias_info.is_write]
    if not written or not all(a.kwarg_only for a in written) or args[-len(written) :] != written:
        return []
    return [a.name for a in written]


def out_form_of(op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The functional overload of an ``out=`` form: the overload of the same operator whose
    arguments are the out form's less its ``out`` arguments (``aten.cumsum.out`` ->
    ``aten.cumsum.default``), or None."""
    outs = _out_args(op)
    if not outs:
        return None
    wanted = [(a.name, str(a.type)) for a in op._schema.arguments if a.name not in outs]
    packet = op.overloadpacket
    for name in packet.overloads():
        candidate = getattr(packet, name)
        if candidate is op or mutated_args(candidate):
            continue
        if [(a.name, str(a.type)) for a in candidate._schema.arguments] == wanted:
            return candidate
    return None


def find_lowering(op: torch._ops.OpOverload) -> Callable[..., None] | None:
    """The lowering of ``op``: the overload's, else its packet's; an in-place operator
    (``aten.add_.Tensor``) without one of its own uses its functional form's (``aten.add.Tensor``),
    writing into ``self``, and an ``out=`` form (``aten.div.out``) its functional overload's
    (``aten.div.Tensor``), called without the ``out`` arguments and writing into them."""
    for candidate in dict.fromkeys([op, functional_form(op)]):
        fn = LOWERINGS.get(candidate) or LOWERINGS.get(candidate.overloadpacket)
        if fn is not None:
            if candidate is not op and out_form_of(op) is candidate:
                return _without_outs(fn, len(_out_args(op)))
            return fn
    return NAMED_LOWERINGS.get(str(op))


def _without_outs(fn: Callable[..., None], n: int) -> Callable[..., None]:
    """``fn`` called without the last ``n`` arguments (an ``out=`` form's outputs)."""

    def lower(ctx: object, *args: object) -> None:
        fn(ctx, *args[: len(args) - n])

    return lower
