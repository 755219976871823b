"""Negative log-likelihood: ``nll_loss_forward`` and ``nll_loss2d_forward``, ONE kernel each
(``F.cross_entropy`` records ``_log_softmax`` + ``nll_loss_forward``, plus elementwise ops and
sums for label smoothing).

The loss picks ``x[n, target[n], s..]`` through an indirect index. Ignored targets
(``target == ignore_index``) contribute nothing: the target index is redirected to class 0
(``where(t != ignore, t, 0)``, free index arithmetic) and the per-position weight is
multiplied by a 0/1 selector read through the index ``t != ignore`` from a two-element
kernel-local table, so the comparison is index arithmetic too::

    sel[0] = 0; sel[1] = 1                                     (kernel-local)
    wm[n, s..] = weight[{tt}] * sel[{t != ignore}]            (weight absent: sel[..] only)
    reduction none: out[n, s..] = -(x[n, {tt}, s..] * wm[n, s..]);  total_weight = 0
    sum / mean:     acc += x[n, {tt}, s..] * wm[n, s..];  total_weight += wm[n, s..]
                    out = -acc  (mean: -acc / total_weight)

with ``tt = where(t != ignore, t, 0)``. Per position that counts one multiply-add and one add
(a fused kernel also needs the compare, predicated), so it stays a lower bound. The weights are
gathered: at least one weight element is read (``exact=False``), never the whole vector.
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import acc_dtype, dims_of, nest
from solar.frontend.torch.ops.indexing import index_load
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, Indirect, call

aten = torch.ops.aten


@lowering(aten.nll_loss_forward.default, aten.nll_loss2d_forward.default)
def nll_loss(
    ctx: LoweringContext, x: T, target: T, weight: T | None, reduction: int, ignore_index: int
) -> None:
    out, total = ctx.out(0), ctx.out(1)
    acc = acc_dtype(x.dtype)
    # positions: target's dims; x is (C,) with a 0-dim target, else (N, C, *spatial)
    p = dims_of(target.shape, "n")
    pos = nest(p, target.shape)
    t = index_load(target, p)
    keep = call("ne", t, Const(ignore_index))
    tt = Indirect(call("where", keep, t, Const(0)))
    x_index = [tt] if x.ndim == 1 else [p[0], tt, *p[1:]]
    sel = ctx.local("select", (2,), acc)
    ctx.statement([], sel, [0], Const(0.0))
    ctx.statement([], sel, [1], Const(1.0))
    mask = ctx.load(sel, [Indirect(keep)])
    wm = ctx.local("weight", target.shape, acc)
    w = mask if weight is None else call("mul", ctx.load(weight, [tt], acc), mask)
    ctx.statement(pos, wm, p, w)
    picked = ctx.load(x, x_index, acc)
    if reduction == 0:
        loss = call("neg", call("mul", picked, ctx.load(wm, p)))
        ctx.statement(pos, out, p, loss, dtype=acc)
        ctx.statement([], total, [], Const(0))
        return
    red = nest(p, target.shape, reduction=True)
    s = ctx.local("sum", (), acc)
    tw = total if total.dtype == acc else ctx.local("total_weight", (), acc)
    ctx.statement(red, s, [], call("mul", picked, ctx.load(wm, p)), reduce="sum")
    ctx.statement(red, tw, [], ctx.load(wm, p), reduce="sum")
    loss = call("neg", ctx.load(s, []))
    if reduction == 1:
        loss = call("div", loss, ctx.load(tw, []))
    ctx.statement([], out, [], loss, dtype=acc)
    if tw is not total:
        ctx.statement([], total, [], ctx.load(tw, []))
