"""Activations of ``torch.nn`` that ``elementwise`` does not already cover, as table rows.

``elementwise.ROWS`` holds the activations that are plain scalar compositions of one operand
(relu, hardtanh/relu6, leaky_relu, elu/selu, gelu, silu, mish, softplus, hardsigmoid, hardswish,
sigmoid, tanh). This module adds more rows to the same table machinery (one kernel, one
statement per output), and the few activations whose loop nest is not a plain map:

- ``celu(x) = x > 0 ? x : alpha * expm1(x / alpha)``
- ``softshrink``, ``hardshrink``, ``threshold`` (``nn.Threshold``): selects and shifts
- ``_prelu_kernel(x, w) = x > 0 ? x : w * x`` (``w`` arrives viewed to broadcast)
- ``rrelu_with_noise`` in eval mode: leaky_relu with slope ``(lower + upper) / 2``; training
  draws random slopes, which a loop nest cannot express
- ``log_sigmoid_forward``: ``min(x, 0) - log1p(exp(-|x|))``; its second output (``buffer``,
  ``exp(-|x|)`` on CPU, empty on CUDA) is written when it has elements, as eager does
- ``glu(x, dim) = a * sigmoid(b)`` with ``a``, ``b`` the two halves of ``x`` along ``dim``

The rest of ``torch.nn``'s activations arrive decomposed (what eager runs): Softsign is
``abs``, ``add``, ``div``; Tanhshrink ``tanh``, ``sub``; Softmin ``neg``, ``_softmax``;
Softmax2d / Softmax / LogSoftmax ``_softmax`` / ``_log_softmax``.
"""

from __future__ import annotations

import torch

from solar.frontend.lowering.exprs import scale
from solar.frontend.lowering.pointwise import pointwise
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import dims_of, nest
from solar.frontend.torch.ops.elementwise import Row, _row_lowering, positive
from solar.frontend.torch.ops.normalization import fresh_outputs
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr, call

aten = torch.ops.aten


def celu(x: Expr, alpha: float) -> Expr:
    return positive(x, x, scale(call("expm1", scale(x, 1 / alpha)), alpha))


def softshrink(x: Expr, lambd: float) -> Expr:
    shrunk = call("where", call("lt", x, Const(-lambd)), call("add", x, Const(lambd)), Const(0))
    return call("where", call("gt", x, Const(lambd)), call("sub", x, Const(lambd)), shrunk)


def hardshrink(x: Expr, lambd: float) -> Expr:
    """``|x| <= lambd ? 0 : x`` (NaN passes through, as in PyTorch)."""
    return call("where", call("le", call("abs", x), Const(lambd)), Const(0), x)


def threshold(x: Expr, th: float, value: float) -> Expr:
    """``x <= th ? value : x`` (NaN passes through, as in PyTorch)."""
    return call("where", call("le", x, Const(th)), Const(value), x)


def log_sigmoid(x: Expr) -> Expr:
    """``log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))``: stable for both signs."""
    softplus_neg = call("log1p", call("exp", call("neg", call("abs", x))))
    return call("sub", call("minimum", x, Const(0)), softplus_neg)


ROWS = [
    Row([aten.celu.default], 1, celu),
    Row([aten.softshrink.default], 1, softshrink),
    Row([aten.hardshrink.default], 1, hardshrink),
    Row([aten.threshold.default], 1, threshold),
    Row([aten._prelu_kernel.default], 2, lambda x, w: positive(x, x, call("mul", w, x))),
]

for _row in ROWS:
    lowering(*_row.ops)(_row_lowering(_row))


@lowering(aten.rrelu_with_noise.default, aten.rrelu_with_noise_.default)
def rrelu(ctx: LoweringContext, x: T, noise: T, lower, upper, training: bool, *_) -> None:
    """Eval mode: ``x > 0 ? x : x * (lower + upper) / 2``; ``noise`` is neither read nor
    written (the in-place form writes ``x``)."""
    if training:
        ctx.fail("in training mode draws random slopes, which a loop nest cannot express")
    if ctx.op == aten.rrelu_with_noise_.default:
        ctx.set_outs([x])
    else:
        fresh_outputs(ctx)
    slope = (float(lower) + float(upper)) / 2
    pointwise(ctx, lambda v: positive(v, v, scale(v, slope)), [x])


@lowering(aten.log_sigmoid_forward.default)
def log_sigmoid_forward(ctx: LoweringContext, x: T) -> None:
    out, buffer = ctx.out(0), ctx.out(1)
    pointwise(ctx, log_sigmoid, [x], out=out)
    if buffer.numel:  # CPU keeps exp(-|x|) for the backward; CUDA returns an empty buffer
        pointwise(ctx, lambda v: call("exp", call("neg", call("abs", v))), [x], out=buffer)


@lowering(aten.glu.default)
def glu(ctx: LoweringContext, x: T, dim: int = -1) -> None:
    """``out[.., j, ..] = x[.., j, ..] * sigmoid(x[.., j + h, ..])``, ``h`` half of ``dim``."""
    out = ctx.out()
    d = dim % x.ndim
    dims = dims_of(out.shape)
    half = out.shape[d]
    second = [Affine.of(n) + (half if k == d else 0) for k, n in enumerate(dims)]
    a = ctx.load(x, dims, out.dtype)
    b = ctx.load(x, second, out.dtype)
    ctx.statement(nest(dims, out.shape), out, dims, call("mul", a, call("sigmoid", b)))
