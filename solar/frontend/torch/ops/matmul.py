"""Matrix products: one kernel per operator, written as einsum-like contractions.

Each operator is a row ``"mk,kn->mn"``: letters of the output are parallel dims, the others are
reduction dims (``reduce="sum"`` over ``A[..] * B[..]``). The ``add*`` forms (addmm, baddbmm,
addmv, addbmm) are ONE kernel, as cuBLAS runs them: the bias (times ``beta``) is written first,
then ``alpha * A @ B`` accumulated onto it. float32 contractions carry the precision policy's
math mode (tf32 or ieee). ``matmul``, ``linear`` and ``einsum`` reach here already decomposed
into views and these operators.
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.common import broadcast_index, nest
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, call

aten = torch.ops.aten

# operator -> (contraction, schema position of A, whether it has a bias as its first argument)
CONTRACTIONS: dict[object, tuple[str, int, bool]] = {
    aten.mm.default: ("mk,kn->mn", 0, False),
    aten.bmm.default: ("bmk,bkn->bmn", 0, False),
    aten.mv.default: ("mk,k->m", 0, False),
    aten.dot.default: ("k,k->", 0, False),
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
    product = call("mul", ctx.load(a, list(sa), compute), ctx.load(b, list(sb), compute))
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
