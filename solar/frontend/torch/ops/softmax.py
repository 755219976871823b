"""Softmax and log-softmax along one dim: ONE kernel (as eager launches) of several nests.

Kernel-local tensors hold the row maximum, the exponentials and the row sum::

    m[row]  max= x[row, r]
    e[row, r] = exp(x[row, r] - m[row])          (log_softmax: s[row] += exp(x - m))
    s[row]   += e[row, r]                         (log_softmax: l[row] = m + log(s))
    out[row, r] = e[row, r] / s[row]              (log_softmax: out = x - l)

so every element costs one exp, and the row-wide work is per row. ``half_to_float`` makes a
float32 output from half inputs; locals of half types accumulate in float32. ``_safe_softmax``
(what ``scaled_dot_product_attention``'s math path uses) gives 0 on rows that are all -inf.
"""

from __future__ import annotations

import math

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import acc_dtype, norm_dim
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, call

aten = torch.ops.aten


@lowering(
    aten._softmax.default,
    aten._softmax.out,
    aten._log_softmax.default,
    aten._safe_softmax.default,
)
def softmax(ctx: LoweringContext, x: T, dim: int, *_: object) -> None:
    out = ctx.out()
    if x.ndim == 0:
        ctx.fail("on a 0-dim tensor is not supported")
    d = norm_dim(dim, x.ndim)
    names = [("r" if k == d else f"i{k}") for k in range(x.ndim)]
    row = [n for k, n in enumerate(names) if k != d]
    row_shape = [n for k, n in enumerate(x.shape) if k != d]
    full = [(n, x.shape[k]) for k, n in enumerate(names)]
    rows = [(n, x.shape[k]) for k, n in enumerate(names) if k != d]
    reduce_r = [(n, x.shape[k], k == d) for k, n in enumerate(names)]
    compute, local = out.dtype, acc_dtype(out.dtype)

    def emit(dims, target, index, expr, reduce=None):
        ctx.statement(dims, target, index, expr, reduce=reduce, dtype=compute)

    def xs():
        return ctx.load(x, names, compute)

    m = ctx.local("max", row_shape, local)
    s = ctx.local("sum", row_shape, local)
    emit(reduce_r, m, row, xs(), reduce="max")
    shifted = call("sub", xs(), ctx.load(m, row))
    if ctx.op == aten._log_softmax.default:
        emit(reduce_r, s, row, call("exp", shifted), reduce="sum")
        lse = ctx.local("logsumexp", row_shape, local)
        emit(rows, lse, row, call("add", ctx.load(m, row), call("log", ctx.load(s, row))))
        emit(full, out, names, call("sub", xs(), ctx.load(lse, row)))
        return
    e = ctx.local("exp", x.shape, local)
    emit(full, e, names, call("exp", shifted))
    emit(reduce_r, s, row, ctx.load(e, names), reduce="sum")
    norm = call("div", ctx.load(e, names), ctx.load(s, row))
    if ctx.op == aten._safe_softmax.default:  # rows of -inf only give 0, not NaN
        masked = call("eq", ctx.load(m, row), Const(-math.inf))
        norm = call("where", masked, Const(0.0), norm)
    emit(full, out, names, norm)
