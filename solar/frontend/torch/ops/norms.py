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

``_weight_norm_interface(v, g, dim)`` (what ``nn.utils.weight_norm`` and
``nn.utils.parametrizations.weight_norm`` record: wav2vec2/WavLM/HuBERT's convolutional
positional embedding), one kernel as ATen's: the norm of ``v`` over every dim but ``dim``
(an output, accumulated in float32 for half inputs), then ``w = v · (g / norm)``::

    norm[.., j, ..] += square(v[.., j, ..])     norm = sqrt(norm)
    w[.., j, ..] = v[.., j, ..] * (g[.., j, ..] / norm[.., j, ..])

Its backward ``_weight_norm_interface_backward(grad_w, v, g, norm, dim)``, one kernel as ATen's:
``s = Σ grad_w · v`` over the same dims (kernel-local, float32 for half inputs), ``grad_g =
s / norm``, ``grad_v = (g / norm) · (grad_w − v · grad_g / norm)``.

(``spectral_norm``'s products are ``mv`` and ``vdot``: :mod:`solar.frontend.torch.ops.matmul`.)
"""

from __future__ import annotations

import math

import torch

from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import acc_dtype, dims_of, nest, norm_dims
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


@lowering(aten._cdist_forward.default)
def cdist(ctx: LoweringContext, x1: T, x2: T, p: float, compute_mode) -> None:
    """``torch.cdist``: ``out[b.., i, j] = (Σ_k |x1[b.., i, k] − x2[b.., j, k]|^p)^(1/p)``
    (p = 0: the count of differing entries; p = ∞: the largest difference), the batch dims
    broadcast; one kernel, the sums on chip."""
    out = ctx.out()
    acc = acc_dtype(out.dtype)
    nb = out.ndim - 2
    b = [f"b{k}" for k in range(nb)]
    rows = [*((n, e) for n, e in zip(b, out.shape[:nb], strict=True)), ("i", x1.shape[-2])]
    dims = [*rows, ("j", x2.shape[-2]), ("k", x1.shape[-1], True)]

    def side(t: T, row: str) -> Expr:
        tb = t.ndim - 2  # its batch dims, aligned to the right of the output's
        lead = [0 if t.shape[q] == 1 else b[nb - tb + q] for q in range(tb)]
        return ctx.load(t, [*lead, row, "k"], acc)

    diff = call("abs", call("sub", side(x1, "i"), side(x2, "j")))
    index = [*b, "i", "j"]
    term, reduce, finish = distance_term(diff, float(p), acc)
    target = out if finish is None and acc == out.dtype else ctx.local("acc", out.shape, acc)
    ctx.statement(dims, target, index, term, reduce=reduce, dtype=acc)
    if target is out:
        return
    total = finish_distance(ctx.load(target, index), finish, float(p))
    ctx.statement([*rows, ("j", x2.shape[-2])], out, index, cast(total, acc, out.dtype), dtype=acc)


def distance_term(diff: Expr, p: float, acc: str) -> tuple[Expr, str, str | None]:
    """The per-coordinate term of a p-distance over ``diff = |a − b|``, its reduction and the
    finishing step (None, ``"sqrt"`` or ``"pow"``): ``torch.cdist`` and ``torch.pdist``."""
    if p == 0:
        return call("cast", call("ne", diff, Const(0.0)), dtype=acc), "sum", None
    if p == math.inf:
        return diff, "max", None
    if p == 1:
        return diff, "sum", None
    if p == 2:
        return call("square", diff), "sum", "sqrt"
    return call("pow", diff, Const(float(p))), "sum", "pow"


def finish_distance(total: Expr, finish: str | None, p: float) -> Expr:
    """The p-th root of a reduced distance term (nothing for p = 0, 1, ∞)."""
    if finish == "sqrt":
        return call("sqrt", total)
    if finish == "pow":
        return call("pow", total, Const(1.0 / p))
    return total


def _per_slice(ctx: LoweringContext, v: T, norm: T, dim: int) -> tuple[list, list, list, list]:
    """The loop names of ``v``, the index of its per-slice statistics (``dim`` kept), the
    reduction nest over every other dim and the nest over the slices."""
    d = dim % max(v.ndim, 1)
    if v.ndim < 2 or norm.numel != v.shape[d]:
        ctx.fail(
            f"of a {v.ndim}-dim weight along dim {dim} is not supported (PyTorch's own meta "
            "and CPU kernels disagree on its shape); weight-normalize a 2-dim or larger one"
        )
    names = dims_of(v.shape)
    stat = [n if k == d else 0 for k, n in enumerate(names)]
    dims = [(names[d], v.shape[d], False)] + [
        (n, v.shape[k], True) for k, n in enumerate(names) if k != d
    ]
    return names, stat, dims, nest([names[d]], [v.shape[d]])


@lowering(aten._weight_norm_interface.default)
def weight_norm(ctx: LoweringContext, v: T, g: T, dim: int = 0) -> None:
    w, norm = ctx.out(0), ctx.out(1)
    names, stat, dims, rows = _per_slice(ctx, v, norm, dim)
    ctx.statement(dims, norm, stat, call("square", ctx.load(v, names, norm.dtype)), reduce="sum")
    ctx.statement(rows, norm, stat, call("sqrt", ctx.load(norm, stat)))
    scale = call("div", ctx.load(g, stat, w.dtype), ctx.load(norm, stat, w.dtype))
    ctx.statement(nest(names, v.shape), w, names, call("mul", ctx.load(v, names), scale))


@lowering(aten._weight_norm_interface_backward.default)
def weight_norm_backward(ctx: LoweringContext, grad_w: T, v: T, g: T, norm: T, dim: int) -> None:
    grad_v, grad_g = ctx.out(0), ctx.out(1)
    names, stat, dims, rows = _per_slice(ctx, v, norm, dim)
    acc = norm.dtype
    sums = ctx.local("sums", norm.shape, acc)
    product = call("mul", ctx.load(grad_w, names, acc), ctx.load(v, names, acc))
    ctx.statement(dims, sums, stat, product, reduce="sum")
    scaled = call("div", ctx.load(sums, stat), ctx.load(norm, stat))
    ctx.statement(rows, grad_g, stat, cast(scaled, acc, grad_g.dtype))
    n, per = ctx.load(norm, stat, acc), ctx.load(grad_g, stat, acc)
    centered = call("sub", ctx.load(grad_w, names, acc), call("mul", ctx.load(v, names, acc),
                                                            call("div", per, n)))  # fmt: skip
    value = call("mul", call("div", ctx.load(g, stat, acc), n), centered)
    ctx.statement(nest(names, v.shape), grad_v, names, cast(value, acc, grad_v.dtype))
