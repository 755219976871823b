"""Backward of the fused library calls (``torch.ops.solar.sdpa_backward``,
``.rms_norm_backward``, see :mod:`solar.frontend.torch.fused_grad`): ONE kernel each.

Attention backward, as FlashAttention-2 runs it (the probabilities are recomputed from Q and K,
never read from DRAM), over the loops of the forward (:func:`.attention.layout`)::

    P[b,l,s]   = softmax_s(scale·Σ_e q·k (+ mask, causal))      recomputed, kernel-local
    D[b,l]     = Σ_ev dO[b,l,ev]·O[b,l,ev]
    dV[b,s,ev] = Σ_l P·dO                                        tensor cores
    dP[b,l,s]  = Σ_ev dO[b,l,ev]·V[b,s,ev]                       tensor cores
    dS[b,l,s]  = P·(dP − D)
    dQ[b,l,e]  = scale·Σ_s dS·K[b,s,e]                           tensor cores
    dK[b,s,e]  = scale·Σ_l dS·Q[b,l,e]                           tensor cores

five contractions (2.5x the forward's two), DRAM traffic Q, K, V, O, dO, the mask, dQ, dK, dV
once each. With dropout (training-mode attention) the forward's keep mask ``Z/(1−p)`` is
regenerated from its seed (one draw per score, kernel-local, as FlashAttention's Philox):
``dV = Σ_l (P·Z/(1−p))·dO``, ``dS = P·(dP·Z/(1−p) − D)``. FlashAttention reads the forward's
row log-sum-exp instead of recomputing the row max and sum: this kernel does two more
CUDA-core operations per score and reads less, both on the side of a lower bound's
tensor-core-bound time. Under GQA the key/value gradients sum over
the query-head group. Broadcast key/value batch dims (not GQA) are refused.

RMSNorm backward, with ``x̂ = x·rstd`` (``rstd`` recomputed) and ``gw = g·weight``::

    gI = rstd·(gw − x̂·Σ_r(gw·x̂)/N);   gWeight[r] = Σ_rows g·x̂
"""

from __future__ import annotations

import math

import torch

from solar.algebra.size import integer, sqrt
from solar.frontend.torch import fused_grad  # noqa: F401  (defines the backward ops)
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.attention import layout
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.ops.random import draw
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.program import Guard
from solar.ir.scalar import Const, Expr, call


@lowering(torch.ops.solar.sdpa_backward.default)
def sdpa_backward(
    ctx: LoweringContext, g: T, q: T, k: T, v: T, o: T, mask, dropout_p, is_causal, scale, gqa
) -> None:
    dq, dk, dv = ctx.out(0), ctx.out(1), ctx.out(2)
    if not q.ndim == k.ndim == v.ndim == o.ndim:
        ctx.fail("with query, key, value of different ranks is not supported")
    head = q.ndim - 3
    if not gqa and head >= 0 and k.shape[head] == v.shape[head] == 1 < q.shape[head]:
        gqa = True  # every query head on one key/value head (multi-query): one GQA group
    if any(k.shape[p] != q.shape[p] for p in range(q.ndim - 2) if not (gqa and p == q.ndim - 3)):
        ctx.fail("with key/value broadcast over a batch dim is not supported")
    lq, e_dim, lk, ev = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    scale = 1 / sqrt(e_dim) if scale is None else scale
    ll = layout(ctx, q, k, v, o, gqa)
    lead, q_ix, k_ix, v_ix, o_ix = ll.loops, ll.q, ll.k, ll.v, ll.o
    kv_lead = [(n, e) for n, e in lead if n != "g"]  # dK, dV sum over the query-head group
    acc = acc_dtype(q.dtype)
    precision = "tf32" if q.dtype == "float32" else None
    guards = [Guard(Affine.of("s") - "l", 1 - lq, 1)] if is_causal else []
    lead_shape = o.shape[:-2]
    row_ix, sc_ix = [*o_ix, "l"], [*o_ix, "l", "s"]
    rows, scores = [*lead, ("l", lq)], [*lead, ("l", lq), ("s", lk)]
    p = ctx.local("probs", (*lead_shape, lq, lk), acc)
    ds = ctx.local("dscores", (*lead_shape, lq, lk), acc)
    m = ctx.local("max", (*lead_shape, lq), acc)
    den = ctx.local("sum", (*lead_shape, lq), acc)
    dd = ctx.local("rowdot", (*lead_shape, lq), acc)

    def emit(dims, target, index, expr, **kw) -> None:
        ctx.statement(dims, target, index, expr, guards=guards, **kw)

    def red(name: str, extent: int) -> tuple:
        return (name, extent, True)

    qk = call("mul", ctx.load(q, [*q_ix, "l", "e"]), ctx.load(k, [*k_ix, "s", "e"]))
    emit([*scores, red("e", e_dim)], p, sc_ix, qk, reduce="sum", precision=precision)
    logit: Expr = call("mul", ctx.load(p, sc_ix), Const(scale))
    if mask is not None:
        full = [*o_ix, "l", "s"]
        m_ix = [0 if n == 1 else full[len(full) - mask.ndim + j] for j, n in enumerate(mask.shape)]
        if mask.dtype == "bool":
            logit = call("where", ctx.load(mask, m_ix), logit, Const(-math.inf))
        else:
            logit = call("add", logit, ctx.load(mask, m_ix, acc))
    emit(scores, p, sc_ix, logit)
    emit([*rows, red("s", lk)], m, row_ix, ctx.load(p, sc_ix), reduce="max")
    emit(scores, p, sc_ix, call("exp", call("sub", ctx.load(p, sc_ix), ctx.load(m, row_ix))))
    emit([*rows, red("s", lk)], den, row_ix, ctx.load(p, sc_ix), reduce="sum")
    prob: Expr = call("div", ctx.load(p, sc_ix), ctx.load(den, row_ix))
    if mask is not None:  # rows with every key masked: P = 0
        prob = call("where", call("eq", ctx.load(m, row_ix), Const(-math.inf)), Const(0.0), prob)
    emit(scores, p, sc_ix, prob)
    kept: Expr = ctx.load(p, sc_ix)  # P, or with dropout P·Z/(1−p)
    if dropout_p:  # the forward's keep mask Z/(1−p), regenerated from its seed (one draw each)
        z = ctx.local("keep", (*lead_shape, lq, lk), acc)
        keep = call("cast", draw(scores, "bernoulli", "bool", a=1.0 - dropout_p), dtype=acc)
        emit(scores, z, sc_ix, call("mul", keep, Const(1.0 / (1.0 - dropout_p))))
        kept = call("mul", kept, ctx.load(z, sc_ix))
    o_row = [*o_ix, "l", "ev"]
    go = ctx.local("dout_out", o.shape, acc)  # dO·O elementwise (CUDA cores), then its row sum
    go_mul = call("mul", ctx.load(g, o_row, acc), ctx.load(o, o_row, acc))
    ctx.statement([*rows, ("ev", ev)], go, o_row, go_mul)
    ctx.statement([*rows, red("ev", ev)], dd, row_ix, ctx.load(go, o_row), reduce="sum")
    # dV[kv.., s, ev] = Σ_{g, l} P·dO
    kv_red = [red("g", e) for n, e in lead if n == "g"]
    emit(
        [*kv_lead, ("s", lk), ("ev", ev), *kv_red, red("l", lq)],
        dv,
        [*v_ix, "s", "ev"],
        call("mul", kept, ctx.load(g, o_row)),
        reduce="sum",
        precision=precision,
        dtype=acc,
    )
    # dP = dO·Vᵀ, then dS = P·(dP − D) (in place in ds)
    emit(
        [*scores, red("ev", ev)],
        ds,
        sc_ix,
        call("mul", ctx.load(g, o_row), ctx.load(v, [*v_ix, "s", "ev"])),
        reduce="sum",
        precision=precision,
    )
    dp: Expr = ctx.load(ds, sc_ix)
    if dropout_p:  # dP = dP_dropped · Z/(1−p)
        dp = call("mul", dp, ctx.load(z, sc_ix))
    dscore = call("mul", ctx.load(p, sc_ix), call("sub", dp, ctx.load(dd, row_ix)))
    emit(scores, ds, sc_ix, call("mul", dscore, Const(scale)))
    emit(
        [*rows, ("e", e_dim), red("s", lk)],
        dq,
        [*q_ix, "l", "e"],
        call("mul", ctx.load(ds, sc_ix), ctx.load(k, [*k_ix, "s", "e"])),
        reduce="sum",
        precision=precision,
        dtype=acc,
    )
    emit(
        [*kv_lead, ("s", lk), ("e", e_dim), *kv_red, red("l", lq)],
        dk,
        [*k_ix, "s", "e"],
        call("mul", ctx.load(ds, sc_ix), ctx.load(q, [*q_ix, "l", "e"])),
        reduce="sum",
        precision=precision,
        dtype=acc,
    )


@lowering(torch.ops.solar.rms_norm_backward.default)
def rms_norm_backward(ctx: LoweringContext, g: T, x: T, normalized_shape, weight, eps) -> None:
    gi, gw_out = ctx.out(0), ctx.out(1)
    lead = x.ndim - len(normalized_shape)
    names = [f"i{k}" if k < lead else f"r{k}" for k in range(x.ndim)]
    stat = [*names[:lead], *([0] * (x.ndim - lead))]
    rows = [(n, x.shape[k]) for k, n in enumerate(names[:lead])]
    full = [(n, x.shape[k]) for k, n in enumerate(names)]
    by_row = [(n, x.shape[k], k >= lead) for k, n in enumerate(names)]
    by_col = [(n, x.shape[k], k < lead) for k, n in enumerate(names)]
    cols = names[lead:]
    count = math.prod(integer(n) for n in normalized_shape)
    acc = acc_dtype(x.dtype)
    if eps is None:
        eps = torch.finfo(torch.float32 if acc == "float32" else torch.float64).eps
    stat_shape = (*x.shape[:lead], *([1] * (x.ndim - lead)))
    rstd = ctx.local("rstd", stat_shape, acc)
    dot = ctx.local("dot", stat_shape, acc)
    xl = ctx.load(x, names, acc)
    ctx.statement(by_row, rstd, stat, call("square", xl), reduce="sum")
    mean_sq = call("div", ctx.load(rstd, stat), Const(count))
    ctx.statement(rows, rstd, stat, call("rsqrt", call("add", mean_sq, Const(float(eps)))))
    xhat = call("mul", xl, ctx.load(rstd, stat))
    gl = ctx.load(g, names, acc)
    gw = call("mul", gl, ctx.load(weight, cols, acc)) if isinstance(weight, T) else gl
    ctx.statement(by_row, dot, stat, call("mul", gw, xhat), reduce="sum")
    proj = call("mul", xhat, call("div", ctx.load(dot, stat), Const(count)))
    res = call("mul", ctx.load(rstd, stat), call("sub", gw, proj))
    ctx.statement(
        full, gi, names, res if acc == gi.dtype else call("cast", res, dtype=gi.dtype), dtype=acc
    )
    if isinstance(weight, T) and gw_out.numel:
        ctx.statement(by_col, gw_out, cols, call("mul", gl, xhat), reduce="sum", dtype=acc)
