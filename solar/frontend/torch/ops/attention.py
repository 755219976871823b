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
- ``dropout_p > 0`` (training-mode attention): after the row sums, each probability is kept
  with probability ``1 - p`` and scaled by ``1/(1 - p)`` (one random draw per score, kernel-
  local, as FlashAttention's in-kernel Philox dropout; see :mod:`.random`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from solar.algebra.size import sqrt
from solar.frontend.torch import fused  # noqa: F401  (defines torch.ops.solar.*)
from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.ops.random import draw
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.program import Guard
from solar.ir.scalar import Const, Expr, call


@dataclass
class _Lead:
    """The loops over the output's leading dims (batch, heads) and how each operand is indexed
    by them: broadcast operands read index 0; under GQA the query-head dim is split into
    loops ``kv < Hkv, g < G`` (query heads ``kv·G + g``, key/value heads ``kv``)."""

    loops: list[tuple[str, int]] = field(default_factory=list)
    q: list[object] = field(default_factory=list)
    k: list[object] = field(default_factory=list)
    v: list[object] = field(default_factory=list)
    o: list[object] = field(default_factory=list)


def _checked_output(ctx: LoweringContext, q: T, k: T, v: T) -> T:
    """The call's output, once the call is one with a loop-nest definition: operands of the
    output's rank with matching head and sequence sizes."""
    out = ctx.out()
    if not q.ndim == k.ndim == v.ndim == out.ndim:
        ctx.fail(f"with query, key, value of {q.ndim}, {k.ndim}, {v.ndim} dims is not supported")
    if k.shape[-1] != q.shape[-1] or v.shape[-2] != k.shape[-2]:
        ctx.fail(f"with mismatched shapes q {q.shape}, k {k.shape}, v {v.shape}")
    return out


def layout(ctx: LoweringContext, q: T, k: T, v: T, out: T, enable_gqa: bool) -> _Lead:
    """The leading loops (batch, heads) and the leading index of q, k, v and the output: one
    loop per leading dim (broadcast operands read index 0), except the query-head dim under
    GQA, split into ``(kv, g)`` loops. Shared with the backward (:mod:`.fused_backward`)."""
    nd = out.ndim
    lead = _Lead()
    for p in range(nd - 2):
        hq, hk, hv = q.shape[p], k.shape[p], v.shape[p]
        if enable_gqa and p == nd - 3 and hq != hk:
            if hk != hv or hq % hk:
                ctx.fail(f"with enable_gqa needs Hq ({hq}) a multiple of Hk = Hv ({hk}, {hv})")
            group = hq // hk
            lead.loops += [("kv", hk), ("g", group)]
            head = Affine.of("kv") * group + "g"
            lead.q.append(head)
            lead.o.append(head)
            lead.k.append("kv")
            lead.v.append("kv")
            continue
        d = f"b{p}"
        lead.loops.append((d, out.shape[p]))
        lead.q.append(0 if hq == 1 else d)
        lead.k.append(0 if hk == 1 else d)
        lead.v.append(0 if hv == 1 else d)
        lead.o.append(d)
    return lead


class _Attention:
    """Emits the loop nests of one attention kernel (module docstring): the scores, the
    softmax over keys, the weighted sum of values. Holds the kernel-local storage
    (``sc``, ``m``, ``den``, ``acc``) and the causal guard every nest over ``s`` carries."""

    def __init__(
        self, ctx: LoweringContext, q: T, k: T, out: T, lead: _Lead, is_causal: bool, scale: float
    ) -> None:
        self.ctx = ctx
        self.lead = lead
        self.scale = scale
        self.lq, self.e_dim, self.lk = q.shape[-2], q.shape[-1], k.shape[-2]
        self.rows = [*lead.loops, ("l", self.lq)]
        self.scores = [*self.rows, ("s", self.lk)]
        self.keys = [*self.rows, ("s", self.lk, True)]  # a reduction over the keys
        self.row_ix = [*lead.o, "l"]
        self.sc_ix = [*self.row_ix, "s"]
        self.acc = acc = acc_dtype(out.dtype)
        lead_shape = out.shape[:-2]
        self.sc = ctx.local("scores", (*lead_shape, self.lq, self.lk), acc)
        self.m = ctx.local("max", (*lead_shape, self.lq), acc)
        self.den = ctx.local("sum", (*lead_shape, self.lq), acc)
        self.o_acc = ctx.local("acc", out.shape, acc)
        self.precision = "tf32" if q.dtype == "float32" else None
        self.guards = [Guard(Affine.of("s") - "l", 1 - self.lq, 1)] if is_causal else []

    def emit(self, dims, target: T, index, expr: Expr, **kw) -> None:
        """One nest, under the causal guard."""
        self.ctx.statement(dims, target, index, expr, guards=self.guards, **kw)

    def sc_load(self) -> Expr:
        """``sc[b..., l, s]``."""
        return self.ctx.load(self.sc, self.sc_ix)

    def row_max(self) -> Expr:
        """``m[b..., l]``."""
        return self.ctx.load(self.m, self.row_ix)

    def scaled(self, x: Expr) -> Expr:
        """``x·scale`` (no multiply for a scale of 1)."""
        return x if self.scale == 1 else call("mul", x, Const(self.scale))

    def qk(self, q: T, k: T) -> None:
        """``sc = Q K^T``, on tensor cores."""
        ctx, lead = self.ctx, self.lead
        qk = call("mul", ctx.load(q, [*lead.q, "l", "e"]), ctx.load(k, [*lead.k, "s", "e"]))
        dims = [*self.scores, ("e", self.e_dim, True)]
        self.emit(dims, self.sc, self.sc_ix, qk, reduce="sum", precision=self.precision)

    def shifted_logits(self, mask: T | None) -> Expr:
        """Emit the row maxima of the (masked, scaled) logits; return ``logit - row max``.
        Without a mask and with ``scale > 0``, ``max(scale·x) = scale·max(x)``: the scale is
        applied in the shift, one FFMA per score, as FlashAttention."""
        folded = mask is None and self.scale > 0  # the scale applied in the shift
        if mask is not None:
            self.emit(self.scores, self.sc, self.sc_ix, self.masked_logit(mask))
        elif not folded:
            self.emit(self.scores, self.sc, self.sc_ix, self.scaled(self.sc_load()))
        self.emit(self.keys, self.m, self.row_ix, self.sc_load(), reduce="max")
        if folded:
            return call("sub", self.scaled(self.sc_load()), self.scaled(self.row_max()))
        return call("sub", self.sc_load(), self.row_max())

    def masked_logit(self, mask: T) -> Expr:
        """``where(mask, sc·scale, -inf)`` (boolean mask) or ``sc·scale + mask`` (additive),
        the mask broadcast from the right over ``[b..., l, s]``."""
        ctx = self.ctx
        full = [*self.lead.o, "l", "s"]
        m_ix = [0 if n == 1 else full[len(full) - mask.ndim + j] for j, n in enumerate(mask.shape)]
        logit = self.scaled(self.sc_load())
        if mask.dtype == "bool":
            return call("where", ctx.load(mask, m_ix), logit, Const(-math.inf))
        return call("add", logit, ctx.load(mask, m_ix, self.acc))

    def softmax_numerator(self, shifted: Expr) -> None:
        """``sc = exp(shifted)`` and its row sums ``den``."""
        self.emit(self.scores, self.sc, self.sc_ix, call("exp", shifted))
        self.emit(self.keys, self.den, self.row_ix, self.sc_load(), reduce="sum")

    def dropout(self, p: float) -> None:
        """Training-mode attention: keep each probability with probability ``1 - p`` and scale
        it by ``1/(1 - p)`` (kernel-local draws, after the row sums, as FlashAttention)."""
        keep = draw(self.scores, "bernoulli", "bool", a=1.0 - p)
        dropped = call("mul", call("cast", keep, dtype=self.acc), Const(1.0 / (1.0 - p)))
        self.emit(self.scores, self.sc, self.sc_ix, call("mul", self.sc_load(), dropped))

    def weighted_values(self, v: T, out: T, masked: bool) -> None:
        """``acc = P V`` on tensor cores, then ``out = acc / den`` (0 on a row whose keys are
        all masked, as PyTorch, not NaN)."""
        ctx, ev = self.ctx, v.shape[-1]
        pv = call("mul", self.sc_load(), ctx.load(v, [*self.lead.v, "s", "ev"]))
        o_ix = [*self.row_ix, "ev"]
        dims = [*self.rows, ("ev", ev), ("s", self.lk, True)]
        self.emit(dims, self.o_acc, o_ix, pv, reduce="sum", precision=self.precision)
        norm: Expr = call("div", ctx.load(self.o_acc, o_ix), ctx.load(self.den, self.row_ix))
        if masked:
            empty = call("eq", self.row_max(), Const(-math.inf))
            norm = call("where", empty, Const(0.0), norm)
        result = cast(norm, self.acc, out.dtype)
        ctx.statement([*self.rows, ("ev", ev)], out, o_ix, result, dtype=self.acc)


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
    """One attention kernel: scores, softmax over keys, weighted values (module docstring)."""
    out = _checked_output(ctx, q, k, v)
    scale = 1 / sqrt(q.shape[-1]) if scale is None else scale  # a symbolic head dim kept
    lead = layout(ctx, q, k, v, out, enable_gqa)
    att = _Attention(ctx, q, k, out, lead, is_causal, scale)
    att.qk(q, k)
    att.softmax_numerator(att.shifted_logits(mask))
    if dropout_p:
        att.dropout(dropout_p)
    att.weighted_values(v, out, masked=mask is not None)
