"""``_cdist_backward``: the gradient of ``torch.cdist`` with respect to ``x1`` (autograd
launches it again with ``x1``/``x2`` swapped and the gradient transposed for ``x2``). ONE
kernel, a sum over the other set's rows ``j`` with ATen's per-term formula::

    gI[b.., i, k] = Σ_j f(x1[b.., i, k] − x2[b.., j, k], g[b.., i, j], dist[b.., i, j])

- ``p = 0``: 0 (written, no sum); ``p = 1``: ``sign(d)·g``; ``p = 2``: ``g·d/dist``;
- ``p = ∞``: ``sign(d)·(|d| == dist)·g``;
- ``p < 2``: ``sign(d)·|d|^(p−1)·g/dist^(p−1)``, 0 where ``d == 0`` and ``p < 1``;
- else: ``d·|d|^(p−2)·g/dist^(p−1)``;

and 0 where ``dist == 0`` (``p`` not 1 or ∞), as ATen's ``Distance`` kernels compute it.
"""

from __future__ import annotations

import math

import torch

from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, Expr, call

aten = torch.ops.aten
ZERO = Const(0.0)


def grad_term(d: Expr, g: Expr, dist: Expr, p: float) -> Expr:
    sign = call("sign", d)
    if p == 1:
        return call("mul", sign, g)
    if p == math.inf:
        hit = call("where", call("eq", call("abs", d), dist), g, ZERO)
        return call("mul", sign, hit)
    if p == 2:
        value = call("div", call("mul", g, d), dist)
    elif p < 2:
        ratio = call(
            "div", call("pow", call("abs", d), Const(p - 1)), call("pow", dist, Const(p - 1))
        )
        value = call("mul", call("mul", sign, ratio), g)
        if p < 1:
            value = call("where", call("eq", d, ZERO), ZERO, value)
    else:
        up = call("mul", d, call("pow", call("abs", d), Const(p - 2)))
        value = call("div", call("mul", up, g), call("pow", dist, Const(p - 1)))
    return call("where", call("eq", dist, ZERO), ZERO, value)


@lowering(aten._cdist_backward.default)
def cdist_backward(ctx: LoweringContext, g: T, x1: T, x2: T, p: float, dist: T) -> None:
    out = ctx.out()
    acc = acc_dtype(out.dtype)
    nb = out.ndim - 2
    b = [f"b{k}" for k in range(nb)]
    rows = [*zip(b, out.shape[:nb], strict=True), ("i", out.shape[-2]), ("k", out.shape[-1])]
    if float(p) == 0:
        ctx.statement(rows, out, [*b, "i", "k"], ZERO)
        return

    def load(t: T, inner: list[str]) -> Expr:
        tb = t.ndim - 2  # its batch dims, aligned to the right of the output's
        lead = [0 if t.shape[q] == 1 else b[nb - tb + q] for q in range(tb)]
        return ctx.load(t, [*lead, *inner], acc)

    d = call("sub", load(x1, ["i", "k"]), load(x2, ["j", "k"]))
    term = grad_term(d, load(g, ["i", "j"]), load(dist, ["i", "j"]), float(p))
    dims = [*rows, ("j", x2.shape[-2], True)]
    target = out if acc == out.dtype else ctx.local("acc", out.shape, acc)
    ctx.statement(dims, target, [*b, "i", "k"], term, reduce="sum", dtype=acc)
    if target is not out:
        total = cast(ctx.load(target, [*b, "i", "k"]), acc, out.dtype)
        ctx.statement(rows, out, [*b, "i", "k"], total, dtype=acc)
