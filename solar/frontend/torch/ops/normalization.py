"""Normalization layers: ONE kernel each, as eager launches them.

``native_layer_norm`` over the trailing ``normalized_shape`` dims (``row`` = the leading dims)::

    mu[row]  += x[row, r]                   then  mu[row] = mu[row] / N
    var[row] += square(x[row, r] - mu[row])  then  rstd[row] = rsqrt(var[row] / N + eps)
    out[row, r] = (x[row, r] - mu[row]) * rstd[row] * weight[r] + bias[r]

The statistics accumulate in float32 for half inputs; they are also outputs (``mean``,
``rstd``, shaped ``row + (1,) * len(normalized_shape)``).
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.common import acc_dtype
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, call

aten = torch.ops.aten


@lowering(aten.native_layer_norm.default)
def layer_norm(ctx: LoweringContext, x: T, normalized_shape, weight, bias, eps: float) -> None:
    out, mean_out, rstd_out = ctx.out(0), ctx.out(1), ctx.out(2)
    lead = x.ndim - len(normalized_shape)
    names = [f"i{k}" if k < lead else f"r{k}" for k in range(x.ndim)]
    stat = [*names[:lead], *([0] * (x.ndim - lead))]  # index of the per-row statistics
    rows = [(n, x.shape[k]) for k, n in enumerate(names[:lead])]
    full = [(n, x.shape[k]) for k, n in enumerate(names)]
    reduce = [(n, x.shape[k], k >= lead) for k, n in enumerate(names)]
    count = 1
    for n in normalized_shape:
        count *= int(n)
    acc = acc_dtype(x.dtype)

    def stat_tensor(given: T, stem: str) -> T:
        return given if given.dtype == acc else ctx.local(stem, given.shape, acc)

    mu, rstd = stat_tensor(mean_out, "mean"), stat_tensor(rstd_out, "rstd")
    var = ctx.local("var", mean_out.shape, acc)

    def xs(dtype: str) -> object:
        return ctx.load(x, names, dtype)

    ctx.statement(reduce, mu, stat, xs(acc), reduce="sum")
    ctx.statement(rows, mu, stat, call("div", ctx.load(mu, stat), Const(count)))
    centered = call("sub", xs(acc), ctx.load(mu, stat))
    ctx.statement(reduce, var, stat, call("square", centered), reduce="sum")
    variance = call("div", ctx.load(var, stat), Const(count))
    ctx.statement(rows, rstd, stat, call("rsqrt", call("add", variance, Const(eps))))
    y = call("mul", call("sub", xs(out.dtype), ctx.load(mu, stat)), ctx.load(rstd, stat))
    if isinstance(weight, T):
        y = call("mul", y, ctx.load(weight, names[lead:], out.dtype))
    if isinstance(bias, T):
        y = call("add", y, ctx.load(bias, names[lead:], out.dtype))
    ctx.statement(full, out, names, y)
    for local, given in ((mu, mean_out), (rstd, rstd_out)):
        if local is not given:
            ctx.statement(rows, given, stat, ctx.load(local, stat))
