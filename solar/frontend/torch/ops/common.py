"""Helpers shared by the operator families: loop dims, broadcasting, dtypes, dims arguments."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from solar.frontend.common import (  # noqa: F401  (re-exported for the op families)
    HALF,
    T,
    acc_dtype,
    broadcast_index,
    dims_of,
    nest,
    norm_dim,
)
from solar.frontend.torch.lower import LoweringContext, cast
from solar.interp.torch.dtypes import torch_dtype
from solar.ir.dtypes import from_torch
from solar.ir.scalar import Const, Expr, call


def norm_dims(dims: int | Sequence[int] | None, ndim: int) -> list[int]:
    """Reduced dims: None or ``[]`` mean all of them."""
    if dims is None or (not isinstance(dims, int) and len(dims) == 0):
        return list(range(ndim))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({norm_dim(d, ndim) for d in dims if ndim > 0})


def operand(ctx: LoweringContext, x: object, dims: Sequence[str], dtype: str | None) -> Expr | None:
    """A tensor operand broadcast over ``dims`` and cast to ``dtype``; a Python number as a
    constant; None stays None (an absent optional operand)."""
    if isinstance(x, T):
        return ctx.load(x, broadcast_index(x.shape, dims), dtype)
    if x is None:
        return None
    if isinstance(x, (bool, int, float)):
        return Const(x)
    raise TypeError(f"{ctx.op}: unexpected operand {x!r}")


def result_dtype(*operands: object) -> str:
    """PyTorch's type promotion of tensor and scalar operands (dimensioned tensors outrank
    0-dim ones, which outrank Python scalars, within a category)."""
    vals = [
        torch.empty((1,) * min(x.ndim, 1), dtype=torch_dtype(x.dtype), device="meta")
        if isinstance(x, T)
        else x
        for x in operands
        if x is not None
    ]
    if len(vals) == 1:
        v = vals[0]
        return from_torch(v.dtype if isinstance(v, torch.Tensor) else torch.tensor(v).dtype)
    dtype = torch.result_type(vals[0], vals[1])
    for v in vals[2:]:
        dtype = torch.result_type(torch.empty((1,), dtype=dtype, device="meta"), v)
    return from_torch(dtype)


def pointwise(
    ctx: LoweringContext,
    build: Callable[..., Expr],
    operands: Sequence[object],
    *,
    out: T | None = None,
    compute: str | None = None,
    raw: Sequence[int] = (),
) -> None:
    """One statement ``out[i...] = build(operand_0[...], ...)`` over the output's shape, with
    broadcasting. Operands are cast to ``compute`` (default: the output dtype) except those at
    positions ``raw`` (boolean masks); the result is cast to the output dtype."""
    out = out or ctx.out()
    compute = compute or out.dtype
    dims = dims_of(out.shape)
    exprs = [operand(ctx, x, dims, None if k in raw else compute) for k, x in enumerate(operands)]
    expr = cast(build(*exprs), compute, out.dtype)
    ctx.statement(nest(dims, out.shape), out, dims, expr, dtype=compute)


def scale(e: Expr, k: float | int | bool | None) -> Expr:
    """``k * e``, without a multiply when ``k`` is 1."""
    return e if k is None or k == 1 else call("mul", e, Const(k))
