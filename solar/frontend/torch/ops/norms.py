"""Reductions built on a scalar map: ``logsumexp`` and the vector p-norms. ONE kernel each.

``logsumexp(x, dim)`` (kernel-local row max and sum, as PyTorch's kernel)::

    m[o] max= x[o, r]          then  m[o] = |m[o]| == inf ? 0 : m[o]
    s[o] += exp(x[o, r] - m[o])       out[o] = log(s[o]) + m[o]

``linalg_vector_norm(x, ord, dim)`` (and ``aten.norm``'s overloads, which ``torch.norm`` and
``F.pairwise_distance`` record), accumulated in float32 for half inputs (or ``dtype``):

========  ==========================================================
ord       loop nest
========  ==========================================================
2         ``a[o] += square(x)``, ``out = sqrt(a)`` (Frobenius norm)
1         ``out[o] += |x|``
inf/-inf  ``out[o] max= |x|`` / ``min= |x|``
0         ``out[o] += (x != 0)``
p         ``a[o] += |x|^p``, ``out = a^(1/p)`` (integer p: multiplies)
========  ==========================================================
"""

from __future__ import annotations

import math

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.common import acc_dtype, dims_of, nest, norm_dims
from solar.frontend.torch.ops.elementwise import pow_scalar
from solar.frontend.torch.ops.reduction import Nest
from solar.frontend.torch.registry import lowering
from solar.ir.dtypes import from_torch
from solar.ir.scalar import Const, Expr, call

aten = torch.ops.aten


@lowering(aten.logsumexp.default)
def logsumexp(ctx: LoweringContext, x: T, dim, keepdim: bool = False) -> None:
    out = ctx.out()
    n = Nest(x, norm_dims(dim, x.ndim) if x.ndim else [], bool(keepdim))
    acc = acc_dtype(out.dtype)
    o = dims_of(out.shape, "o")
    rows = nest(o, out.shape)
    m = ctx.local("max", out.shape, acc)
    s = ctx.local("sum", out.shape, acc)
    xs = ctx.load(x, n.names, acc)
    ctx.statement(n.dims, m, n.out_index, xs, reduce="max", dtype=acc)
    mo = ctx.load(m, o)
    infinite = call("eq", call("abs", mo), Const(math.inf))
    ctx.statement(rows, m, o, call("where", infinite, Const(0.0), mo))
    shifted = call("sub", xs, ctx.load(m, n.out_index))
    ctx.statement(n.dims, s, n.out_index, call("exp", shifted), reduce="sum", dtype=acc)
    lse = call("add", call("log", ctx.load(s, o)), ctx.load(m, o))
    ctx.statement(rows, out, o, lse, dtype=acc)


def vector_norm(ctx: LoweringContext, x: T, ord_: float, dim, keepdim: bool, dtype) -> None:
    out = ctx.out()
    ord_ = float(ord_)
    n = Nest(x, norm_dims(dim, x.ndim) if x.ndim else [], bool(keepdim))
    compute = from_torch(dtype) if dtype is not None else x.dtype
    acc = acc_dtype(compute)
    o = dims_of(out.shape, "o")
    rows = nest(o, out.shape)
    xs = ctx.load(x, n.names, acc)
    reduce, root = "sum", None
    if ord_ == 2:
        term, root = call("square", xs), (lambda a: call("sqrt", a))
    elif ord_ == 1:
        term = call("abs", xs)
    elif math.isinf(ord_):
        term, reduce = call("abs", xs), ("max" if ord_ > 0 else "min")
    elif ord_ == 0:
        term = call("cast", call("ne", xs, Const(0)), dtype=acc)
    else:
        term = pow_scalar(call("abs", xs), Const(_int_if_whole(ord_)))
        root = lambda a: pow_scalar(a, Const(1 / ord_))  # noqa: E731
    needs_acc = root is not None or out.dtype != acc
    target = ctx.local("acc", out.shape, acc) if needs_acc else out
    ctx.statement(n.dims, target, n.out_index, term, reduce=reduce, dtype=acc)
    if target is not out:
        a: Expr = ctx.load(target, o)
        ctx.statement(rows, out, o, root(a) if root is not None else a, dtype=acc)


def _int_if_whole(p: float) -> float | int:
    return int(p) if p.is_integer() else p


@lowering(aten.linalg_vector_norm.default)
def linalg_vector_norm(ctx, x, ord_=2, dim=None, keepdim=False, dtype=None) -> None:
    vector_norm(ctx, x, ord_, dim, keepdim, dtype)


@lowering(aten.norm.Scalar, aten.norm.ScalarOpt_dtype)
def norm_all(ctx, x, p=2, dtype=None) -> None:
    vector_norm(ctx, x, 2 if p is None else p, None, False, dtype)


@lowering(aten.norm.ScalarOpt_dim, aten.norm.ScalarOpt_dim_dtype)
def norm_dim(ctx, x, p, dim, keepdim=False, dtype=None) -> None:
    vector_norm(ctx, x, 2 if p is None else p, dim, keepdim, dtype)
