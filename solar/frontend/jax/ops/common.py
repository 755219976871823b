"""Helpers shared by the primitive families: elementwise statements and output dims."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.frontend.common import cast, dims_of, nest
from solar.frontend.jax.lower import LoweringContext, V
from solar.ir.scalar import Expr


def pointwise(
    ctx: LoweringContext,
    build: Callable[..., Expr],
    operands: Sequence[V],
    *,
    compute: str | None = None,
    raw: Sequence[int] = (),
    result: str | None = None,
) -> None:
    """One statement ``out[i...] = build(operand_0[...], ...)`` over the output's shape, with
    numpy broadcasting (jaxprs broadcast size-1 dims and scalars implicitly). Operands are cast
    to ``compute`` (default: the output dtype) except those at positions ``raw`` (predicates);
    the result (of dtype ``result``, default ``compute``) is cast to the output dtype."""
    out = ctx.out()
    compute = compute or out.dtype
    dims = dims_of(out.shape)
    exprs = [ctx.operand(v, dims, None if k in raw else compute) for k, v in enumerate(operands)]
    expr = cast(build(*exprs), result or compute, out.dtype)
    ctx.statement(nest(dims, out.shape), out, dims, expr, dtype=compute)
