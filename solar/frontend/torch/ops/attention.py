"""Scaled dot-product attention (``torch.ops.solar.sdpa``): ONE kernel, as CUDA runs it.

``F.scaled_dot_product_attention`` is intercepted while tracing (:mod:`..fused`) because eager
CUDA runs it as one fused kernel (FlashAttention, memory-efficient or cuDNN attention). Its
loop nests, over the output's leading dims ``b...`` (batch, heads), query rows ``l < Lq``, keys
``s < Lk``, head dims ``e < E`` and value dims ``v < Ev``::

    sc[b,l,s]  = Σ_e q[b,l,e] * k[b,s,e]                     tensor cores of the input dtype
    (mask)     sc[b,l,s] = sc*scale + mask[b,l,s]            additive mask
               sc[b,l,s] = where(mask[b,l,s], sc*scale, -inf)   boolean mask
    m[b,l]    max= sc[b,l,s]
    sc[b,l,s]  = exp(sc*scale - m*scale)                     (no mask; exp(sc - m) with one)
    den[b,l]   += sc[b,l,s]
    acc[b,l,v] = Σ_s sc[b,l,s] * v[b,s,v]                    tensor cores
    out[b,l,v] = acc / den                (masks: 0 on rows with every key masked, as PyTorch)

``sc`` (scores, then probabilities), ``m``, ``den`` and ``acc`` are kernel-local (on chip,
tiled), so the kernel's DRAM traffic is Q, K, V, the mask and O, each once. Per score element
that is 4 CUDA-core flops without a mask (max, FFMA = 2, sum; the row term ``m*scale`` is per
row), one SFU exp, and 2·E + 2·Ev tensor-core flops, what FlashAttention executes.

- ``is_causal``: a guard ``s <= l`` (PyTorch's top-left alignment, also when Lq != Lk) on every
  nest over ``s``, so masked-out scores cost nothing: for Lq = Lk = L the contractions count
  2·(E + Ev)·L(L+1)/2 flops per (batch, head) exactly. With a mask too, both apply (as the
  fused CPU kernel does; the math path refuses the combination).
- ``enable_gqa``: the query-head dim ``Hq = Hkv·G`` is split into loops ``kv < Hkv, g < G``;
  query heads are indexed ``kv·G + g`` and key/value heads ``kv`` (affine; ``h // G`` is not).
- float32 inputs contract on TF32 tensor cores: CUDA's fp32 attention kernel (memory-efficient,
  CUTLASS ``OpMultiplyAddFastF32``) runs on tensor cores, so counting its products once at the
  TF32 peak keeps the bound below it.
- ``dropout_p > 0`` is training-mode attention (random) and is refused.
"""

from __future__ import annotations

import math

import torch

from solar.frontend.torch import fused  # noqa: F401  (defines torch.ops.solar.*)
from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.common import acc_dtype
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.program import Guard
from solar.ir.scalar import Const, Expr, call


def layout(ctx: LoweringContext, q: T, k: T, v: T, out: T, enable_gqa: bool):
    """The leading loops (batch, heads) and the leading index of q, k, v and the output:
    one loop per leading dim (broadcast operands read index 0), except the query-head dim
    under GQA, split into ``(kv, g)`` loops (query head ``kv·G + g``, key/value head ``kv``)."""
    lead: list[tuple[str, int]] = []
    q_ix: list[object] = []
    k_ix: list[object] = []
    v_ix: list[object] = []
    o_ix: list[object] = []
    for p in range(out.ndim - 2):
        hq, hk, hv = q.shape[p], k.shape[p], v.shape[p]
        if enable_gqa and p == out.ndim - 3 and hq != hk:
            if hk != hv or hq % hk:
                ctx.fail(f"with enable_gqa needs Hq ({hq}) a multiple of Hk = Hv ({hk}, {hv})")
            group = hq // hk
            lead += [("kv", hk), ("g", group)]
            head = Affine.of("kv") * group + "g"
            q_ix.append(head)
            o_ix.append(head)
            k_ix.append("kv")
            v_ix.append("kv")
            continue
        d = f"b{p}"
        lead.append((d, out.shape[p]))
        q_ix.append(0 if hq == 1 else d)
        k_ix.append(0 if hk == 1 else d)
        v_ix.append(0 if hv == 1 else d)
        o_ix.append(d)
    return lead, q_ix, k_ix, v_ix, o_ix


@lowering(torch.ops.solar.sdpa.default)
def sdpa(
    ctx: LoweringContext,
    q: T,
    k: T,
    v: T,
    mask: T | None,
    dropout_p: float,
    is_causal: bool,
    scale: float | None,
    enable_gqa: bool,
) -> None:
    if dropout_p:
        ctx.fail(
            f"with dropout_p={dropout_p} is training-mode (random) attention, which has no "
            "loop-nest definition; trace in eval mode with dropout_p=0"
        )
    out = ctx.out()
    nd = out.ndim
    if not q.ndim == k.ndim == v.ndim == nd:
        ctx.fail(f"with query, key, value of {q.ndim}, {k.ndim}, {v.ndim} dims is not supported")
    lq, e_dim, lk, ev = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    if k.shape[-1] != e_dim or v.shape[-2] != lk:
        ctx.fail(f"with mismatched shapes q {q.shape}, k {k.shape}, v {v.shape}")
    scale = 1 / math.sqrt(e_dim) if scale is None else scale

    lead, q_ix, k_ix, v_ix, o_ix = layout(ctx, q, k, v, out, enable_gqa)

    rows = [*lead, ("l", lq)]
    scores = [*rows, ("s", lk)]
    row_ix = [*o_ix, "l"]
    sc_ix = [*row_ix, "s"]
    acc = acc_dtype(out.dtype)
    lead_shape = out.shape[:-2]
    sc = ctx.local("scores", (*lead_shape, lq, lk), acc)
    m = ctx.local("max", (*lead_shape, lq), acc)
    den = ctx.local("sum", (*lead_shape, lq), acc)
    o_acc = ctx.local("acc", out.shape, acc)
    precision = "tf32" if q.dtype == "float32" else None
    guards = [Guard(Affine.of("s") - "l", 1 - lq, 1)] if is_causal else []

    def emit(dims, target, index, expr, **kw) -> None:
        ctx.statement(dims, target, index, expr, guards=guards, **kw)

    def sc_load() -> Expr:
        return ctx.load(sc, sc_ix)

    def scaled(x: Expr) -> Expr:
        return x if scale == 1 else call("mul", x, Const(scale))

    # scores = Q K^T
    qk = call("mul", ctx.load(q, [*q_ix, "l", "e"]), ctx.load(k, [*k_ix, "s", "e"]))
    emit([*scores, ("e", e_dim, True)], sc, sc_ix, qk, reduce="sum", precision=precision)

    # the masked, scaled logits; exp(logit - row max)
    masked = mask is not None
    if masked:
        assert mask is not None
        full = [*o_ix, "l", "s"]
        m_ix = [0 if n == 1 else full[len(full) - mask.ndim + j] for j, n in enumerate(mask.shape)]
        if mask.dtype == "bool":
            logit = call("where", ctx.load(mask, m_ix), scaled(sc_load()), Const(-math.inf))
        else:
            logit = call("add", scaled(sc_load()), ctx.load(mask, m_ix, acc))
        emit(scores, sc, sc_ix, logit)
        emit([*rows, ("s", lk, True)], m, row_ix, sc_load(), reduce="max")
        shifted = call("sub", sc_load(), ctx.load(m, row_ix))
    elif scale > 0:  # max(scale·x) = scale·max(x): one FFMA per score, as FlashAttention
        emit([*rows, ("s", lk, True)], m, row_ix, sc_load(), reduce="max")
        shifted = call("sub", scaled(sc_load()), scaled(ctx.load(m, row_ix)))
    else:
        emit(scores, sc, sc_ix, scaled(sc_load()))
        emit([*rows, ("s", lk, True)], m, row_ix, sc_load(), reduce="max")
        shifted = call("sub", sc_load(), ctx.load(m, row_ix))
    emit(scores, sc, sc_ix, call("exp", shifted))
    emit([*rows, ("s", lk, True)], den, row_ix, sc_load(), reduce="sum")

    # O = P V / rowsum
    pv = call("mul", sc_load(), ctx.load(v, [*v_ix, "s", "ev"]))
    emit(
        [*rows, ("ev", ev), ("s", lk, True)],
        o_acc,
        [*row_ix, "ev"],
        pv,
        reduce="sum",
        precision=precision,
    )
    o_ix_full = [*row_ix, "ev"]
    norm: Expr = call("div", ctx.load(o_acc, o_ix_full), ctx.load(den, row_ix))
    if masked:  # a row whose keys are all masked gives 0 (PyTorch), not NaN
        empty = call("eq", ctx.load(m, row_ix), Const(-math.inf))
        norm = call("where", empty, Const(0.0), norm)
    ctx.statement([*rows, ("ev", ev)], out, o_ix_full, cast(norm, acc, out.dtype), dtype=acc)
