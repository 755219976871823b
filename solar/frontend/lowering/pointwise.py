"""Elementwise statements written once for both frontends, against the shared
:class:`~solar.frontend.lowering.base.LoweringContext` (its ``out`` and ``operand``):
:func:`pointwise`, one statement over an output's shape, operands broadcast (numpy rules:
right-aligned, size-1 dims read element 0) and cast to the compute dtype."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from solar.frontend.layout import T, dims_of, nest
from solar.frontend.lowering.exprs import cast
from solar.ir.scalar import Expr

if TYPE_CHECKING:  # pragma: no cover
    from solar.frontend.lowering.base import LoweringContext


def pointwise(
    ctx: LoweringContext,
    build: Callable[..., Expr],
    operands: Sequence[object],
    *,
    out: T | None = None,
    compute: str | None = None,
    raw: Sequence[int] = (),
    result: str | None = None,
) -> None:
    """One statement ``out[i...] = build(operand_0[...], ...)`` over the output's shape
    (``out``, default the operation's first output), with broadcasting. Operands (what the
    context's ``operand`` takes: tensors, known values, numbers) are cast to ``compute``
    (default: the output dtype) except those at positions ``raw`` (boolean masks,
    predicates); the result (of dtype ``result``, default ``compute``) is cast to the output
    dtype."""
    out = out or ctx.out()
    compute = compute or out.dtype
    dims = dims_of(out.shape)
    exprs = [ctx.operand(x, dims, None if k in raw else compute) for k, x in enumerate(operands)]
    expr = cast(build(*exprs), result or compute, out.dtype)
    ctx.statement(nest(dims, out.shape), out, dims, expr, dtype=compute)
