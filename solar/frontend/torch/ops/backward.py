"""Backward operators the autograd engine launches: ONE kernel per aten operator, as eager
runs it (an operator that CUDA runs as a few launches, such as ``convolution_backward``'s
data/filter/bias kernels or ``native_layer_norm_backward``'s input and weight kernels, is one
IR kernel reading its inputs and writing its outputs once: the launches move at least that).

- pointwise: ``threshold_backward`` (ReLU), ``gelu_backward`` (exact and tanh, CUDA's
  formulas), ``silu_backward``, ``sigmoid_backward``, ``tanh_backward``, ``mse_loss_backward``;
- row-wise: ``_softmax_backward_data``, ``_log_softmax_backward_data``,
  ``native_layer_norm_backward``;
- per channel: ``native_batch_norm_backward`` / ``cudnn_batch_norm_backward``;
- scatters: ``embedding_dense_backward`` (zeros, then ``gW[ids[i], :] += g[i, :]``),
  ``nll_loss_backward`` / ``nll_loss2d_backward`` (zeros, then the target column),
  ``max_pool2d_with_indices_backward`` and ``adaptive_max_pool{2,3}d_backward`` (zeros, then
  ``gI[n, c, {idx}] += g``);
- ``convolution_backward``: the input gradient is the transposed convolution of the output
  gradient with the same weight (:func:`..conv._transposed`), the weight gradient a
  contraction of the input with the output gradient over (batch, output positions), the bias
  gradient a sum.
"""

from __future__ import annotations

import math

import torch

from solar.algebra.size import integer
from solar.frontend.lowering.pointwise import pointwise
from solar.frontend.lowering.window import window
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conv import (
    OUT_NAMES,
    TAP_NAMES,
    Loops,
    _transposed,
    expand,
)
from solar.frontend.torch.ops.conventions import acc_dtype, dims_of, nest, norm_dim
from solar.frontend.torch.ops.indexing import index_load, write
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, Expr, Indirect, call

aten = torch.ops.aten


# ------------------------------------------------------------------------------- pointwise


def _gelu_grad(g: Expr, x: Expr, approximate: str) -> Expr:
    if approximate == "tanh":
        beta, kappa = math.sqrt(2 / math.pi), 0.044715
        x_sq = call("mul", x, x)
        inner = call(
            "mul", Const(beta), call("add", x, call("mul", Const(kappa), call("mul", x_sq, x)))
        )
        th = call("tanh", inner)
        left = call("mul", Const(0.5), x)
        left_d = call("mul", Const(0.5), call("add", Const(1), th))
        right_d = call(
            "mul",
            call("mul", left, call("sub", Const(1), call("mul", th, th))),
            call("mul", Const(beta), call("add", Const(1), call("mul", Const(3 * kappa), x_sq))),
        )
        return call("mul", g, call("add", left_d, right_d))
    cdf = call(
        "mul", Const(0.5), call("add", Const(1), call("erf", call("mul", x, Const(math.sqrt(0.5)))))
    )
    pdf = call(
        "mul",
        call("exp", call("mul", Const(-0.5), call("mul", x, x))),
        Const(1 / math.sqrt(2 * math.pi)),
    )
    return call("mul", g, call("add", cdf, call("mul", x, pdf)))


def _silu_grad(g: Expr, x: Expr) -> Expr:
    s = call("sigmoid", x)
    return call(
        "mul", call("mul", g, s), call("add", Const(1), call("mul", x, call("sub", Const(1), s)))
    )


POINTWISE = {
    aten.threshold_backward.default: (
        2,
        lambda g, x, thr: call("where", call("le", x, Const(thr)), Const(0.0), g),
    ),
    aten.gelu_backward.default: (2, lambda g, x, approximate="none": _gelu_grad(g, x, approximate)),
    aten.silu_backward.default: (2, _silu_grad),
    aten.sigmoid_backward.default: (
        2,
        lambda g, y: call("mul", call("mul", g, call("sub", Const(1), y)), y),
    ),
    aten.tanh_backward.default: (
        2,
        lambda g, y: call("mul", g, call("sub", Const(1), call("mul", y, y))),
    ),
}


def _pointwise_lowering(operands: int, build):
    def lower(ctx: LoweringContext, *args: object) -> None:
        ops, static = args[:operands], args[operands:]
        pointwise(ctx, lambda *e: build(*e, *static), ops)

    return lower


for _op, (_n, _build) in POINTWISE.items():
    lowering(_op)(_pointwise_lowering(_n, _build))


@lowering(aten.mse_loss_backward.default)
def mse_loss_backward(ctx: LoweringContext, g: T, x: T, target: T, reduction: int) -> None:
    """``gI = g · 2/N · (x − target)`` (``2`` for sum, ``2·g[i]`` elementwise for none)."""
    k = 2.0 / max(x.numel, 1) if reduction == 1 else 2.0
    pointwise(
        ctx,
        lambda gg, a, b: call("mul", call("mul", gg, Const(k)), call("sub", a, b)),
        [g, x, target],
    )


# ------------------------------------------------------------------------------- row-wise


def _row_names(x: T, d: int):
    names = [("r" if k == d else f"i{k}") for k in range(x.ndim)]
    row = [n for k, n in enumerate(names) if k != d]
    row_shape = [n for k, n in enumerate(x.shape) if k != d]
    full = [(n, x.shape[k]) for k, n in enumerate(names)]
    reduce_r = [(n, x.shape[k], k == d) for k, n in enumerate(names)]
    return names, row, row_shape, full, reduce_r


@lowering(aten._softmax_backward_data.default, aten._log_softmax_backward_data.default)
def softmax_backward(ctx: LoweringContext, g: T, y: T, dim: int, input_dtype) -> None:
    """softmax: ``gI = y·(g − Σ_r g·y)``; log-softmax: ``gI = g − exp(y)·Σ_r g``."""
    out = ctx.out()
    d = norm_dim(dim, y.ndim)
    names, row, row_shape, full, reduce_r = _row_names(y, d)
    acc = acc_dtype(out.dtype)
    s = ctx.local("sum", row_shape, acc)
    gl, yl = ctx.load(g, names, acc), ctx.load(y, names, acc)
    if ctx.op == aten._softmax_backward_data.default:
        gy = _on_cuda_cores(ctx, "gy", y.shape, names, full, call("mul", gl, yl), acc)
        ctx.statement(reduce_r, s, row, gy, reduce="sum", dtype=acc)
        res = call("mul", yl, call("sub", gl, ctx.load(s, row)))
    else:
        ctx.statement(reduce_r, s, row, gl, reduce="sum", dtype=acc)
        res = call("sub", gl, call("mul", call("exp", yl), ctx.load(s, row)))
    ctx.statement(
        full, out, names, call("cast", res, dtype=out.dtype) if acc != out.dtype else res, dtype=acc
    )


@lowering(aten.native_layer_norm_backward.default)
def layer_norm_backward(
    ctx: LoweringContext, g: T, x: T, normalized_shape, mean: T, rstd: T, weight, bias, mask
) -> None:
    """With ``x̂ = (x − mean)·rstd`` and ``gw = g·weight`` per row::

    a[row] = Σ_r gw,  b[row] = Σ_r gw·x̂
    gI = rstd·(gw − a/N − x̂·b/N);  gWeight[r] = Σ_row g·x̂;  gBias[r] = Σ_row g
    """
    outs = ctx.outs()
    lead = x.ndim - len(normalized_shape)
    names = [f"i{k}" if k < lead else f"r{k}" for k in range(x.ndim)]
    stat = [*names[:lead], *([0] * (x.ndim - lead))]
    full = [(n, x.shape[k]) for k, n in enumerate(names)]
    by_row = [(n, x.shape[k], k >= lead) for k, n in enumerate(names)]
    by_col = [(n, x.shape[k], k < lead) for k, n in enumerate(names)]
    cols = names[lead:]
    n = math.prod(integer(v) for v in normalized_shape)
    acc = acc_dtype(x.dtype)
    xhat = call(
        "mul",
        call("sub", ctx.load(x, names, acc), ctx.load(mean, stat, acc)),
        ctx.load(rstd, stat, acc),
    )
    gl = ctx.load(g, names, acc)
    gw = gl if weight is None else call("mul", gl, ctx.load(weight, cols, acc))
    if outs[0] is not None:
        a = ctx.local("sum_g", mean.shape, acc)
        b = ctx.local("sum_gx", mean.shape, acc)
        gw = _on_cuda_cores(ctx, "gw", x.shape, names, full, gw, acc)
        ctx.statement(by_row, a, stat, gw, reduce="sum", dtype=acc)
        ctx.statement(by_row, b, stat, call("mul", gw, xhat), reduce="sum", dtype=acc)
        inner = call(
            "sub",
            call("sub", gw, call("div", ctx.load(a, stat), Const(n))),
            call("mul", xhat, call("div", ctx.load(b, stat), Const(n))),
        )
        gi = call("mul", ctx.load(rstd, stat, acc), inner)
        ctx.statement(full, outs[0], names, _to(gi, acc, outs[0].dtype), dtype=acc)
    for out, term in ((outs[1], call("mul", gl, xhat)), (outs[2], gl)):
        if out is not None and out.numel:
            ctx.statement(by_col, out, cols, term, reduce="sum", dtype=acc)


def _on_cuda_cores(ctx, stem, shape, names, full, product: Expr, acc: str) -> Expr:
    """A product a kernel computes elementwise (on CUDA cores) before summing it: kept in a
    kernel-local buffer, so the sum that follows is a reduction, not a tensor-core
    contraction (a row-wise dot product in a normalization backward is not a GEMM)."""
    buf = ctx.local(stem, shape, acc)
    ctx.statement(full, buf, names, product, dtype=acc)
    return ctx.load(buf, names)


def _to(e: Expr, have: str, want: str) -> Expr:
    return e if have == want else call("cast", e, dtype=want)


@lowering(aten.native_batch_norm_backward.default)
def batch_norm_backward(
    ctx: LoweringContext, g, x, weight, running_mean, running_var, save_mean, save_invstd,
    train: bool, eps: float, mask,
) -> None:  # fmt: skip
    _batch_norm_backward(
        ctx, g, x, weight, running_mean, running_var, save_mean, save_invstd, train, eps
    )


@lowering(aten.cudnn_batch_norm_backward.default)
def cudnn_batch_norm_backward(
    ctx: LoweringContext, x, g, weight, running_mean, running_var, save_mean, save_var, eps, reserve
) -> None:
    _batch_norm_backward(
        ctx, g, x, weight, running_mean, running_var, save_mean, save_var, True, eps
    )


def _batch_norm_backward(ctx, g: T, x: T, weight, rmean, rvar, smean, sinvstd, train, eps):
    """Per channel ``c`` over ``M = N·spatial`` elements, training::

        sg[c] = Σ g,  sgx[c] = Σ g·(x − mean)
        gI = (g − sg/M − (x − mean)·invstd²·sgx/M)·invstd·w;  gW = sgx·invstd;  gB = sg

    eval (running statistics): ``gI = g·rsqrt(running_var + eps)·w``, the same ``gW``, ``gB``
    with the running mean and inverse std."""
    outs = ctx.outs()
    names = [f"i{k}" for k in range(x.ndim)]
    full = [(n, x.shape[k]) for k, n in enumerate(names)]
    per_c = [(n, x.shape[k], k != 1) for k, n in enumerate(names)]
    acc = acc_dtype(x.dtype)
    m = x.numel // x.shape[1]
    c = [names[1]]
    if train:
        mean, invstd = ctx.load(smean, c, acc), ctx.load(sinvstd, c, acc)
    else:
        mean = ctx.load(rmean, c, acc)
        invstd = call("rsqrt", call("add", ctx.load(rvar, c, acc), Const(eps)))
    w = Const(1.0) if weight is None else ctx.load(weight, c, acc)
    gl = ctx.load(g, names, acc)
    xmu = call("sub", ctx.load(x, names, acc), mean)
    sg = ctx.local("sum_g", (x.shape[1],), acc)
    sgx = ctx.local("sum_gx", (x.shape[1],), acc)
    ctx.statement(per_c, sg, c, gl, reduce="sum", dtype=acc)
    ctx.statement(per_c, sgx, c, call("mul", gl, xmu), reduce="sum", dtype=acc)
    if outs[0] is not None:
        if train:
            proj = call(
                "mul",
                call("mul", xmu, call("mul", invstd, invstd)),
                call("div", ctx.load(sgx, c), Const(m)),
            )
            core = call("sub", call("sub", gl, call("div", ctx.load(sg, c), Const(m))), proj)
            gi = call("mul", call("mul", core, invstd), w)
        else:
            gi = call("mul", call("mul", gl, invstd), w)
        ctx.statement(full, outs[0], names, _to(gi, acc, outs[0].dtype), dtype=acc)
    ch = [("c", x.shape[1])]
    if len(outs) > 1 and outs[1] is not None and outs[1].numel:
        val = call(
            "mul", ctx.load(sgx, ["c"]), invstd_at(ctx, train, smean, sinvstd, rvar, eps, acc)
        )
        ctx.statement(ch, outs[1], ["c"], _to(val, acc, outs[1].dtype), dtype=acc)
    if len(outs) > 2 and outs[2] is not None and outs[2].numel:
        ctx.statement(ch, outs[2], ["c"], _to(ctx.load(sg, ["c"]), acc, outs[2].dtype), dtype=acc)


def invstd_at(ctx, train, smean, sinvstd, rvar, eps, acc) -> Expr:
    if train:
        return ctx.load(sinvstd, ["c"], acc)
    return call("rsqrt", call("add", ctx.load(rvar, ["c"], acc), Const(eps)))


# --------------------------------------------------------------------------------- scatters


@lowering(aten.embedding_dense_backward.default)
def embedding_dense_backward(
    ctx: LoweringContext, g: T, ids: T, num_weights: int, padding_idx: int, scale_by_freq: bool
) -> None:
    """``gW = 0`` then ``gW[ids[i], d] += g[i, d]`` (rows of ``padding_idx`` left at zero)."""
    if scale_by_freq:
        ctx.fail("with scale_grad_by_freq=True is not supported")
    out = ctx.out()
    dim = out.shape[1]
    ctx.statement([("v", out.shape[0]), ("d", dim)], out, ["v", "d"], Const(0.0))
    ix = dims_of(ids.shape, "n")
    g_index = [*ix, "d"]
    acc = acc_dtype(out.dtype)
    value: Expr = ctx.load(g, g_index, acc)
    t = index_load(ids, ix)
    if padding_idx is not None and padding_idx >= 0:
        value = call("where", call("eq", t, Const(padding_idx)), Const(0.0), value)
    write(
        ctx,
        [*nest(ix, ids.shape), ("d", dim)],
        out,
        [Indirect(t), "d"],
        value,
        reduce="sum",
        accumulate=True,
        dtype=acc,
    )


@lowering(aten.nll_loss_backward.default, aten.nll_loss2d_backward.default)
def nll_loss_backward(
    ctx: LoweringContext, g: T, x: T, target: T, weight, reduction: int, ignore_index: int, total: T
) -> None:
    """``gI = 0`` then ``gI[n, t[n], s..] = −w[t]·g (/ total_weight for mean)`` (0 where
    ``t == ignore_index``)."""
    out = ctx.out()
    acc = acc_dtype(out.dtype)
    d = dims_of(out.shape)
    ctx.statement(nest(d, out.shape), out, d, Const(0.0))
    p = dims_of(target.shape, "n")
    t = index_load(target, p)
    keep = call("ne", t, Const(ignore_index))
    tt = Indirect(call("where", keep, t, Const(0)))
    gv = ctx.load(g, p if g.ndim == target.ndim and g.numel > 1 else [0] * g.ndim, acc)
    w: Expr = Const(1.0) if weight is None else ctx.load(weight, [tt], acc)
    value = call("neg", call("mul", gv, w))
    if reduction == 1:
        value = call("div", value, ctx.load(total, [0] * total.ndim, acc))
    value = call("where", keep, value, Const(0.0))
    index = [tt] if x.ndim == 1 else [p[0], tt, *p[1:]]
    write(ctx, nest(p, target.shape), out, index, _to(value, acc, out.dtype), dtype=acc)


MAX_POOL_BACKWARD = {
    aten.max_pool2d_with_indices_backward.default: 2,
    aten.max_pool3d_with_indices_backward.default: 3,
    aten.adaptive_max_pool2d_backward.default: 2,
    aten.adaptive_max_pool3d_backward.default: 3,
}


@lowering(*MAX_POOL_BACKWARD)
def max_pool_backward(ctx: LoweringContext, g: T, x: T, *args: object) -> None:
    """``gI = 0`` then ``gI[n, c, {indices[n, c, p..]}] += g[n, c, p..]`` (indices are flat
    positions in the input's spatial plane)."""
    indices = args[-1]
    assert isinstance(indices, T)
    out = ctx.out()
    d = dims_of(out.shape)
    ctx.statement(nest(d, out.shape), out, d, Const(0.0))
    nsp = MAX_POOL_BACKWARD[ctx.op]  # (N,) C, spatial
    lead = out.shape[: out.ndim - nsp]
    plane = math.prod(out.shape[out.ndim - nsp :])
    flat_name = ctx.builder.view(
        f"{out.name}_plane", out.name, (*lead, plane), (*_strides(lead, plane), 1), 0
    )
    flat_out = T(flat_name, (*lead, plane), out.dtype)
    p = dims_of(indices.shape, "p")
    index = [*p[: len(lead)], Indirect(index_load(indices, p))]
    acc = acc_dtype(out.dtype)
    write(
        ctx,
        nest(p, indices.shape),
        flat_out,
        index,
        ctx.load(g, p, acc),
        reduce="sum",
        accumulate=True,
        dtype=acc,
    )


def _strides(lead, plane: int) -> list[int]:
    out, acc = [], plane
    for s in reversed(lead):
        out.append(acc)
        acc *= integer(s)
    return list(reversed(out))


# ---------------------------------------------------------------------------- convolution


@lowering(aten.convolution_backward.default)
def convolution_backward(
    ctx: LoweringContext, g: T, x: T, weight: T, bias_sizes, stride, padding, dilation,
    transposed: bool, output_padding, groups: int, mask,
) -> None:  # fmt: skip
    if transposed:
        ctx.fail("of a transposed convolution is not supported")
    nsp = weight.ndim - 2
    params = [expand(v, nsp, w) for v, w in ((stride, "stride"), (padding, "padding"))]
    params.append(expand(dilation, nsp, "dilation"))
    outs = ctx.outs()
    if outs[0] is not None:
        _transposed(ctx, g, weight, None, *params, int(groups), outs[0])
    if outs[1] is not None:
        _weight_grad(ctx, g, x, *params, int(groups), outs[1])
    if outs[2] is not None and outs[2].numel:
        names = dims_of(g.shape)
        by_c = [(n, g.shape[k], k != 1) for k, n in enumerate(names)]
        acc = acc_dtype(outs[2].dtype)
        ctx.statement(by_c, outs[2], [names[1]], ctx.load(g, names, acc), reduce="sum", dtype=acc)


def _weight_grad(ctx, g: T, x: T, stride, padding, dilation, groups: int, out: T) -> None:
    """The weight gradient, a contraction over (batch, output positions)::

    gW[g·K/G + k, c, r..] = Σ_{n, p..} gO[n, g·K/G + k, p..]·I[n, g·C/G + c, s·p + d·r − pad]
    """
    nsp = out.ndim - 2
    cg, kg = out.shape[1], out.shape[0] // groups
    loops = Loops()
    gr, k, c = loops.add("g", groups), loops.add("k", kg), loops.add("c", cg)
    rs = [loops.add(n, e) for n, e in zip(TAP_NAMES[nsp], out.shape[2:], strict=True)]
    n = loops.add("n", x.shape[0], True)
    ps = [loops.add(nm, e, True) for nm, e in zip(OUT_NAMES[nsp], g.shape[2:], strict=True)]
    ext = loops.extents()
    spatial, guards = window(ps, rs, stride, dilation, padding, x.shape[2:], ext)
    compute = out.dtype
    product = call(
        "mul",
        ctx.load(g, [n, gr * kg + k, *ps], compute),
        ctx.load(x, [n, gr * cg + c, *spatial], compute),
    )
    index = [gr * kg + k, c, *rs]
    filled = bool(guards)
    if filled:  # taps whose every read lies in the padding get zero
        ctx.statement(loops.parallel, out, index, Const(0.0))
    ctx.statement(
        loops.dims,
        out,
        index,
        product,
        reduce="sum",
        accumulate=filled,
        precision=ctx.policy.conv(compute),
        guards=guards,
    )
