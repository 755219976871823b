"""Normalization layers: ONE kernel each, as eager launches them.

All of them reduce statistics over some dims (kept in float32 for half inputs, as PyTorch
does), then normalize every element. Where the statistics and the affine parameters share
their dims (batch norm: per channel; group norm: per (sample, channel)) the per-element work is
one FMA, ``out = x * s + t`` with ``s = rstd * weight`` and ``t = bias - mean * s`` computed per
channel (the cost model hoists them: they depend on per-channel loads only).

``native_layer_norm`` over the trailing ``normalized_shape`` dims (``row`` = the leading dims)::

    mu[row]  += x[row, r]                   then  mu[row] = mu[row] / N
    var[row] += square(x[row, r] - mu[row])  then  rstd[row] = rsqrt(var[row] / N + eps)
    out[row, r] = (x[row, r] - mu[row]) * rstd[row] * weight[r] + bias[r]

The statistics are also outputs (``mean``, ``rstd``, shaped ``row + (1,) * len(normalized_shape)``).

Batch norm (``native_batch_norm``, ``_native_batch_norm_legit`` (+``.no_stats``),
``_native_batch_norm_legit_no_training``, ``_native_batch_norm_legit_functional``,
``cudnn_batch_norm``, which eager CUDA records for float32), on ``x[n, c, *spatial]``:

- eval: ``out = x * s[c] + t[c]``, ``s = rsqrt(running_var + eps) * weight``,
  ``t = bias - running_mean * s``;
- training: batch statistics over ``(n, *spatial)`` (``save_mean``, ``save_invstd``, biased),
  then the same map; with running statistics, ``running_mean = (1 - m) running_mean + m mean``
  and ``running_var = (1 - m) running_var + m var_unbiased``, written in place into the buffers
  (the ``_functional`` variant writes them to its extra outputs instead).

``native_group_norm`` on ``x[n, g * C/G + cg, *spatial]``: statistics per ``(n, g)`` (outputs
``mean``, ``rstd`` of shape ``(N, G)``), then ``out = x * s[n, c] + t[n, c]``.

``_fused_rms_norm`` (what ``F.rms_norm`` records on CUDA; CPU and meta traces record its
decomposition ``pow, mean, add, rsqrt, mul``): ``ms[row] += square(x)``,
``rstd[row] = rsqrt(ms / N + eps)`` (an output, float32), ``out = x * rstd[row] * weight[r]``.

Instance norm arrives as ``native_batch_norm`` on a ``(1, N*C, *spatial)`` view (weights
``repeat`` ed); dropout in eval mode records nothing.
"""

from __future__ import annotations

import torch

from solar.algebra.size import integer
from solar.frontend.torch import fused  # noqa: F401  (defines torch.ops.solar.rms_norm)
from solar.frontend.torch.lower import LoweringContext, T, output_stem
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine, AffineLike
from solar.ir.scalar import Const, Expr, call

aten = torch.ops.aten


def fresh_outputs(ctx: LoweringContext) -> list[T | None]:
    """Declare the node's returned tensors as new tensors and bind them as its outputs.

    ``ctx.outs()`` takes an operator with mutable arguments for an in-place one (its outputs
    are the arguments it writes); ``_native_batch_norm_legit`` and ``rrelu_with_noise`` write
    arguments *and* return new tensors."""
    multi = isinstance(ctx.val, (tuple, list))
    vals = ctx.val if multi else [ctx.val]
    outs = [
        ctx._declare(v, output_stem(ctx.node, i) if multi else ctx.node.name)
        if isinstance(v, torch.Tensor)
        else None
        for i, v in enumerate(vals)  # type: ignore[arg-type]
    ]
    ctx.set_outs(outs)
    return outs


def _stat_target(ctx: LoweringContext, given: T | None, stem: str, shape, acc: str) -> T:
    """Where a statistic is accumulated: the output itself if it has the accumulation dtype,
    else kernel-local scratch (copied to the output at the end)."""
    if given is not None and given.dtype == acc and given.numel:
        return given
    return ctx.local(stem, shape, acc)


def _copy_out(ctx: LoweringContext, local: T, given: T | None, dims, index) -> None:
    if given is not None and given is not local and given.numel:
        ctx.statement(dims, given, index, ctx.load(local, index))


def _scale_shift(x: Expr, rstd: Expr, mean: Expr, weight: Expr | None, bias: Expr | None):
    """``x * s + (bias - mean * s)`` with ``s = rstd * weight``: one FMA per element when
    ``s`` and the shift depend on per-channel loads only (the cost model hoists them)."""
    s = rstd if weight is None else call("mul", rstd, weight)
    ms = call("mul", mean, s)
    if bias is None:
        return call("sub", call("mul", x, s), ms)
    return call("add", call("mul", x, s), call("sub", bias, ms))


# ------------------------------------------------------------------------------- layer norm


@lowering(aten.native_layer_norm.default)
def layer_norm(ctx: LoweringContext, x: T, normalized_shape, weight, bias, eps: float) -> None:
    out, mean_out, rstd_out = ctx.out(0), ctx.out(1), ctx.out(2)
    lead = x.ndim - len(normalized_shape)
    names = [f"i{k}" if k < lead else f"r{k}" for k in range(x.ndim)]
    stat = [*names[:lead], *([0] * (x.ndim - lead))]  # index of the per-row statistics
    rows = [(n, x.shape[k]) for k, n in enumerate(names[:lead])]
    full = [(n, x.shape[k]) for k, n in enumerate(names)]
    reduce = [(n, x.shape[k], k >= lead) for k, n in enumerate(names)]
    count = 1
    for n in normalized_shape:
        count *= integer(n)
    acc = acc_dtype(x.dtype)

    mu = _stat_target(ctx, mean_out, "mean", mean_out.shape, acc)
    rstd = _stat_target(ctx, rstd_out, "rstd", rstd_out.shape, acc)
    var = ctx.local("var", mean_out.shape, acc)

    def xs(dtype: str) -> Expr:
        return ctx.load(x, names, dtype)

    ctx.statement(reduce, mu, stat, xs(acc), reduce="sum")
    ctx.statement(rows, mu, stat, call("div", ctx.load(mu, stat), Const(count)))
    centered = call("sub", xs(acc), ctx.load(mu, stat))
    ctx.statement(reduce, var, stat, call("square", centered), reduce="sum")
    variance = call("div", ctx.load(var, stat), Const(count))
    ctx.statement(rows, rstd, stat, call("rsqrt", call("add", variance, Const(eps))))
    y = call("mul", call("sub", xs(out.dtype), ctx.load(mu, stat)), ctx.load(rstd, stat))
    if isinstance(weight, T):
        y = call("mul", y, ctx.load(weight, names[lead:], out.dtype))
    if isinstance(bias, T):
        y = call("add", y, ctx.load(bias, names[lead:], out.dtype))
    ctx.statement(full, out, names, y)
    _copy_out(ctx, mu, mean_out, rows, stat)
    _copy_out(ctx, rstd, rstd_out, rows, stat)


# -------------------------------------------------------------------------------- batch norm


def batch_norm(
    ctx: LoweringContext,
    x: T,
    weight: T | None,
    bias: T | None,
    running_mean: T | None,
    running_var: T | None,
    training: bool,
    momentum: float,
    eps: float,
    outs: list[T | None],
    running_out: tuple[T, T] | None = None,
) -> None:
    """Batch norm of ``x[n, c, *spatial]`` into ``outs = [out, save_mean, save_invstd, ...]``;
    updated running statistics go to ``running_out`` (default: in place)."""
    if x.ndim < 2:
        ctx.fail(f"needs an input of at least 2 dims, got {x.shape}")
    out = outs[0]
    assert out is not None
    save_mean, save_invstd = outs[1], outs[2]
    names = ["n", "c", *(f"s{k}" for k in range(x.ndim - 2))]
    full = [(d, x.shape[k]) for k, d in enumerate(names)]
    per_channel = [("c", x.shape[1])]
    acc = acc_dtype(x.dtype)
    xs = ctx.load(x, names, acc)

    def chan(t: T | None) -> Expr | None:
        return None if t is None else ctx.load(t, ["c"], acc)

    if not training:
        if running_mean is None or running_var is None:
            ctx.fail("in eval mode needs running_mean and running_var")
        rstd = call("rsqrt", call("add", chan(running_var), Const(eps)))
        y = _scale_shift(xs, rstd, chan(running_mean), chan(weight), chan(bias))
        ctx.statement(full, out, names, y, dtype=acc)
        return

    count = x.numel // x.shape[1]
    reduce = [(d, x.shape[k], k != 1) for k, d in enumerate(names)]
    mean = _stat_target(ctx, save_mean, "mean", (x.shape[1],), acc)
    invstd = _stat_target(ctx, save_invstd, "invstd", (x.shape[1],), acc)
    var = ctx.local("var", (x.shape[1],), acc)
    ctx.statement(reduce, mean, ["c"], xs, reduce="sum")
    ctx.statement(per_channel, mean, ["c"], call("div", chan(mean), Const(count)))
    centered = call("sub", xs, chan(mean))
    ctx.statement(reduce, var, ["c"], call("square", centered), reduce="sum")
    variance = call("div", chan(var), Const(count))
    ctx.statement(per_channel, invstd, ["c"], call("rsqrt", call("add", variance, Const(eps))))
    y = _scale_shift(xs, chan(invstd), chan(mean), chan(weight), chan(bias))
    ctx.statement(full, out, names, y, dtype=acc)
    _copy_out(ctx, mean, save_mean, per_channel, ["c"])
    _copy_out(ctx, invstd, save_invstd, per_channel, ["c"])
    if running_mean is None or running_var is None:
        return
    new_mean, new_var = running_out or (running_mean, running_var)
    m = float(momentum)
    unbiased_var = call("div", chan(var), Const(max(count - 1, 1)))
    for old, new, batch in (
        (running_mean, new_mean, chan(mean)),
        (running_var, new_var, unbiased_var),
    ):
        blend = call("add", call("mul", chan(old), Const(1 - m)), call("mul", batch, Const(m)))
        ctx.statement(per_channel, new, ["c"], blend, dtype=acc)


@lowering(aten.native_batch_norm.default)
def native_batch_norm(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps):
    batch_norm(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps, ctx.outs())


@lowering(aten.cudnn_batch_norm.default, aten.miopen_batch_norm.default)
def cudnn_batch_norm(ctx, x, weight, bias, running_mean, running_var, training, factor, eps):
    """cuDNN's batch norm (eager CUDA's choice for float32): the same kernel; its
    ``reserve`` output is empty; in eval mode ``save_mean``/``save_invstd`` are empty too."""
    batch_norm(ctx, x, weight, bias, running_mean, running_var, training, factor, eps, ctx.outs())


@lowering(aten._native_batch_norm_legit.default)
def native_batch_norm_legit(
    ctx, x, weight, bias, running_mean, running_var, training, momentum, eps
):
    outs = fresh_outputs(ctx)  # running_mean/var are mutable arguments, not the outputs
    batch_norm(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps, outs)


@lowering(aten._native_batch_norm_legit.no_stats)
def native_batch_norm_legit_no_stats(ctx, x, weight, bias, training, momentum, eps):
    batch_norm(ctx, x, weight, bias, None, None, training, momentum, eps, ctx.outs())


@lowering(aten._native_batch_norm_legit_no_training.default)
def native_batch_norm_no_training(ctx, x, weight, bias, running_mean, running_var, momentum, eps):
    batch_norm(ctx, x, weight, bias, running_mean, running_var, False, momentum, eps, ctx.outs())


@lowering(aten._native_batch_norm_legit_functional.default)
def native_batch_norm_functional(
    ctx, x, weight, bias, running_mean, running_var, training, momentum, eps
):
    outs = ctx.outs()
    new = (outs[3], outs[4])
    batch_norm(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps, outs, new)
    if not training:  # the new running statistics are the old ones
        for old, t in zip((running_mean, running_var), new, strict=True):
            ctx.statement([("c", x.shape[1])], t, ["c"], ctx.load(old, ["c"]))


# -------------------------------------------------------------------------------- group norm


@lowering(aten.native_group_norm.default)
def group_norm(ctx: LoweringContext, x: T, weight, bias, N, C, HxW, group: int, eps: float):
    out, mean_out, rstd_out = ctx.out(0), ctx.out(1), ctx.out(2)
    n_, c_, g = integer(N), integer(C), int(group)
    cg = c_ // g
    spatial = [f"s{k}" for k in range(x.ndim - 2)]
    channel = Affine.of("g") * cg + Affine.of("cg")
    x_index: list[AffineLike] = ["n", channel, *spatial]
    names = ["n", "g", "cg", *spatial]
    extents = [n_, g, cg, *x.shape[2:]]
    full = list(zip(names, extents, strict=True))
    reduce = [(d, e, d not in ("n", "g")) for d, e in full]
    groups = [("n", n_), ("g", g)]
    count = cg * integer(HxW)
    acc = acc_dtype(x.dtype)
    mean = _stat_target(ctx, mean_out, "mean", (n_, g), acc)
    rstd = _stat_target(ctx, rstd_out, "rstd", (n_, g), acc)
    var = ctx.local("var", (n_, g), acc)
    xs = ctx.load(x, x_index, acc)

    def stat(t: T) -> Expr:
        return ctx.load(t, ["n", "g"], acc)

    def chan(t: object) -> Expr | None:
        return ctx.load(t, [channel], acc) if isinstance(t, T) else None

    ctx.statement(reduce, mean, ["n", "g"], xs, reduce="sum")
    ctx.statement(groups, mean, ["n", "g"], call("div", stat(mean), Const(count)))
    ctx.statement(
        reduce, var, ["n", "g"], call("square", call("sub", xs, stat(mean))), reduce="sum"
    )
    variance = call("div", stat(var), Const(count))
    ctx.statement(groups, rstd, ["n", "g"], call("rsqrt", call("add", variance, Const(eps))))
    y = _scale_shift(xs, stat(rstd), stat(mean), chan(weight), chan(bias))
    ctx.statement(full, out, x_index, y, dtype=acc)
    _copy_out(ctx, mean, mean_out, groups, ["n", "g"])
    _copy_out(ctx, rstd, rstd_out, groups, ["n", "g"])


# ---------------------------------------------------------------------------------- RMS norm


@lowering(aten._fused_rms_norm.default)
def fused_rms_norm(ctx: LoweringContext, x: T, normalized_shape, weight, eps) -> None:
    _rms_norm(ctx, x, normalized_shape, weight, eps, ctx.out(0), ctx.out(1))


@lowering(torch.ops.solar.rms_norm.default)
def solar_rms_norm(ctx: LoweringContext, x: T, normalized_shape, weight=None, eps=None) -> None:
    """``torch.rms_norm`` intercepted as the one ``_fused_rms_norm`` kernel CUDA runs (see
    :mod:`solar.frontend.torch.fused`); its ``rstd`` stays on chip."""
    _rms_norm(ctx, x, normalized_shape, weight, eps, ctx.out(), None)


def _rms_norm(ctx, x: T, normalized_shape, weight, eps, out: T, rstd_out: T | None) -> None:
    lead = x.ndim - len(normalized_shape)
    names = [f"i{k}" if k < lead else f"r{k}" for k in range(x.ndim)]
    stat = [*names[:lead], *([0] * (x.ndim - lead))]
    rows = [(n, x.shape[k]) for k, n in enumerate(names[:lead])]
    full = [(n, x.shape[k]) for k, n in enumerate(names)]
    reduce = [(n, x.shape[k], k >= lead) for k, n in enumerate(names)]
    count = 1
    for n in normalized_shape:
        count *= integer(n)
    acc = acc_dtype(x.dtype)
    if eps is None:  # PyTorch's default: the machine epsilon of the accumulation type
        from solar.interp.torch.dtypes import torch_dtype

        eps = torch.finfo(torch_dtype(acc)).eps
    stat_shape = (*x.shape[:lead], *([1] * (x.ndim - lead)))
    rstd = _stat_target(ctx, rstd_out, "rstd", stat_shape, acc)
    ms = ctx.local("sumsq", stat_shape, acc)
    ctx.statement(reduce, ms, stat, call("square", ctx.load(x, names, acc)), reduce="sum")
    mean_sq = call("div", ctx.load(ms, stat), Const(count))
    ctx.statement(rows, rstd, stat, call("rsqrt", call("add", mean_sq, Const(float(eps)))))
    y = call("mul", ctx.load(x, names, acc), ctx.load(rstd, stat))
    if isinstance(weight, T):
        y = call("mul", y, ctx.load(weight, names[lead:], acc))
    ctx.statement(full, out, names, y, dtype=acc)
    _copy_out(ctx, rstd, rstd_out, rows, stat)
