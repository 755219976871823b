"""Matrix products: one kernel per operator, written as einsum-like contractions.

Each operator is a row ``"mk,kn->mn"``: letters of the output are parallel dims, the others are
reduction dims (``reduce="sum"`` over ``A[..] * B[..]``). The ``add*`` forms (addmm, baddbmm,
addmv, addbmm) are ONE kernel, as cuBLAS runs them: the bias (times ``beta``) is written first,
then ``alpha * A @ B`` accumulated onto it. float32 contractions carry the precision policy's
math mode (tf32 or ieee). ``matmul``, ``linear`` and ``einsum`` reach here already decomposed
into views and these operators. ``_int_mm`` (int8 x int8 -> int32, W8A8 inference) is ``mm``
with int8 loads cast to int32: it runs on the int8 tensor cores (``tc_int8``).

``_trilinear`` (what ``F.bilinear`` records) is ``out[P] = Σ_S a[..] · b[..] · c[..]`` over a
shared index space: input ``k`` occupies the positions not in ``expand_k`` (in order; size-1
dims broadcast), ``sumdim`` positions are summed away and the rest are the output's (size 1
where every input is expanded). It is ONE kernel of two contractions through a kernel-local
intermediate (as eager computes it, two GEMM-like products): a pair of inputs first, summed
over the sum dims the third input lacks (an outer product if there are none), then the
intermediate with the third input. Of the three pairings the one with the fewest flops is
taken (the first on ties; eager's pairing is one of them, so this stays below it). For
``F.bilinear`` (``y[b,o] = Σ_ij x1[b,i] W[o,i,j] x2[b,j]``) the pairings cost ``2·B·O·I·J``
plus ``2·B·O·J`` (``t[b,o,j] = Σ_i x1[b,i] W[o,i,j]`` first, as eager does), ``2·B·O·I``
(``W·x2`` first) or ``B·I·J`` (the outer product ``x1[b,i] x2[b,j]`` first).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

import torch

from solar.frontend.torch import fakes  # noqa: F401  (fake kernels of the ops lowered here)
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import broadcast_index, nest
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, call

aten = torch.ops.aten

# operator -> (contraction, schema position of A, whether it has a bias as its first argument)
CONTRACTIONS: dict[object, tuple[str, int, bool]] = {
    aten.mm.default: ("mk,kn->mn", 0, False),
    aten._int_mm.default: ("mk,kn->mn", 0, False),
    aten.bmm.default: ("bmk,bkn->bmn", 0, False),
    aten.mv.default: ("mk,k->m", 0, False),
    aten.dot.default: ("k,k->", 0, False),
    aten.vdot.default: ("k,k->", 0, False),  # conj(a)·b: spectral_norm's sigma
    aten.addmm.default: ("mk,kn->mn", 1, True),
    aten.baddbmm.default: ("bmk,bkn->bmn", 1, True),
    aten.addmv.default: ("mk,k->m", 1, True),
    aten.addbmm.default: ("bmk,bkn->mn", 1, True),
}


@lowering(*CONTRACTIONS)
def contraction(ctx: LoweringContext, *args: object) -> None:
    spec, first, has_bias = CONTRACTIONS[ctx.op]
    a, b = args[first], args[first + 1]
    bias, beta, alpha = (args[0], args[first + 2], args[first + 3]) if has_bias else (None, 0, 1)
    assert isinstance(a, T) and isinstance(b, T)
    ins, res = spec.split("->")
    sa, sb = ins.split(",")
    extent = {**dict(zip(sa, a.shape, strict=True)), **dict(zip(sb, b.shape, strict=True))}
    out = ctx.out()
    compute = out.dtype
    dims = [(c, extent[c], False) for c in res] + [
        (c, extent[c], True) for c in dict.fromkeys(sa + sb) if c not in res
    ]
    first = ctx.load(a, list(sa), compute)
    if ctx.op is aten.vdot.default and compute.startswith("complex"):
        first = call("conj", first)
    product = call("mul", first, ctx.load(b, list(sb), compute))
    precision = ctx.policy.matmul(compute)
    out_index = list(res)
    if bias is None or beta == 0:  # beta == 0 ignores the bias, even NaNs in it
        ctx.statement(dims, out, out_index, product, reduce="sum", precision=precision)
        if alpha != 1:
            scaled = call("mul", ctx.load(out, out_index), Const(alpha))
            ctx.statement(nest(res, out.shape), out, out_index, scaled)
        return
    bias_expr = (
        ctx.load(bias, broadcast_index(bias.shape, list(res)), compute)
        if isinstance(bias, T)
        else Const(bias)
    )
    if beta != 1:
        bias_expr = call("mul", Const(beta), bias_expr)
    if alpha == 1:
        ctx.statement(nest(res, out.shape), out, out_index, bias_expr)
        ctx.statement(
            dims, out, out_index, product, reduce="sum", accumulate=True, precision=precision
        )
        return
    acc = ctx.local("acc", out.shape, compute)
    ctx.statement(dims, acc, out_index, product, reduce="sum", precision=precision)
    epilogue = call("add", call("mul", Const(alpha), ctx.load(acc, out_index)), bias_expr)
    ctx.statement(nest(res, out.shape), out, out_index, epilogue)


# ------------------------------------------------------------------------------ _trilinear


def _positions(t: T, expand: Sequence[int], total: int) -> list[int]:
    """The positions of ``t``'s dims in the ``total``-dim index space of ``_trilinear``."""
    expanded = {int(e) % total for e in expand}
    pos = [p for p in range(total) if p not in expanded]
    if len(pos) != t.ndim:
        raise ValueError(f"_trilinear: {t.ndim}-dim input with expand {list(expand)}")
    return pos


@lowering(aten._trilinear.default)
def trilinear(
    ctx: LoweringContext,
    i1: T,
    i2: T,
    i3: T,
    expand1: Sequence[int],
    expand2: Sequence[int],
    expand3: Sequence[int],
    sumdim: Sequence[int],
    unroll_dim: int = 1,
) -> None:
    out = ctx.out()
    total = i1.ndim + len(expand1)
    summed = {int(d) % total for d in sumdim}
    compute = out.dtype
    precision = ctx.policy.matmul(compute)
    extent = [1] * total
    ops = []  # (tensor, its index, the positions it really spans)
    for t, expand in ((i1, expand1), (i2, expand2), (i3, expand3)):
        pos = _positions(t, expand, total)
        index: list[object] = []
        spans = set()
        for p, n in zip(pos, t.shape, strict=True):
            if n == 1:
                index.append(0)
            else:
                index.append(f"d{p}")
                spans.add(p)
                extent[p] = n
        ops.append((t, index, spans))
    keep = [p for p in range(total) if p not in summed]
    if any(extent[p] == 0 for p in range(total)) or out.numel == 0:
        ctx.fail("on empty inputs is not supported")

    def plan(x: int, y: int) -> tuple[int, list[int], list[int], list[int]]:
        """Cost and loops of pairing inputs ``x`` and ``y`` first (``z`` last)."""
        z = 3 - x - y
        both = ops[x][2] | ops[y][2]
        first_sum = sorted((both & summed) - ops[z][2])
        mid = sorted(both - set(first_sum))
        last_sum = sorted(summed & (set(mid) | ops[z][2]))
        # flops: a multiply-add (2) per instance of a contraction, a multiply (1) otherwise
        cost = (1 + bool(first_sum)) * prod(extent[p] for p in both)
        cost += (1 + bool(last_sum)) * prod(extent[p] for p in [*keep, *last_sum])
        return cost, mid, first_sum, last_sum

    pairs = [(0, 1), (0, 2), (1, 2)]
    x, y = min(pairs, key=lambda xy: plan(*xy)[0])
    _, mid, first_sum, last_sum = plan(x, y)
    z = 3 - x - y
    names = [f"d{p}" for p in range(total)]

    def load(k: int):
        t, index, _ = ops[k]
        return ctx.load(t, index, compute)

    tmp = ctx.local("pair", [extent[p] for p in mid], compute)
    tmp_index = [names[p] for p in mid]
    loops = [(names[p], extent[p]) for p in mid] + [(names[p], extent[p], True) for p in first_sum]
    product = call("mul", load(x), load(y))
    if first_sum:
        ctx.statement(loops, tmp, tmp_index, product, reduce="sum", precision=precision)
    else:  # an outer product
        ctx.statement(loops, tmp, tmp_index, product)
    loops = [(names[p], extent[p]) for p in keep] + [(names[p], extent[p], True) for p in last_sum]
    product = call("mul", ctx.load(tmp, tmp_index), load(z))
    out_index = [names[p] for p in keep]
    if last_sum:
        ctx.statement(loops, out, out_index, product, reduce="sum", precision=precision)
    else:
        ctx.statement(loops, out, out_index, product)


@lowering(aten._scaled_mm.default)
def scaled_mm(
    ctx: LoweringContext,
    a: T,
    b: T,
    scale_a: T,
    scale_b: T,
    bias=None,
    scale_result=None,
    out_dtype=None,
    use_fast_accum: bool = False,
) -> None:
    """The fp8 GEMM: ``out = cast((A @ B) * scale_a * scale_b + bias)``, ONE kernel as cuBLASLt
    runs it: the contraction on the fp8 tensor cores accumulates in float32 on chip, the
    scales (per tensor ``()``/``(1,)`` or per row ``(M, 1)`` / per column ``(1, N)``) and bias
    are its epilogue."""
    out = ctx.out()
    m, k = a.shape
    n = b.shape[1]
    acc = ctx.local("acc", (m, n), "float32")
    dims = [("m", m, False), ("n", n, False), ("k", k, True)]
    product = call("mul", ctx.load(a, ["m", "k"]), ctx.load(b, ["k", "n"]))
    ctx.statement(dims, acc, ["m", "n"], product, reduce="sum", dtype="float32")
    y = ctx.load(acc, ["m", "n"])
    for s in (scale_a, scale_b, scale_result):
        if isinstance(s, T):
            y = call("mul", y, ctx.load(s, broadcast_index(s.shape, ["m", "n"]), "float32"))
    if isinstance(bias, T):
        y = call("add", y, ctx.load(bias, broadcast_index(bias.shape, ["m", "n"]), "float32"))
    ctx.statement(nest("mn", out.shape), out, ["m", "n"], y, dtype="float32")
