"""Pointwise backward operators of activations and losses beyond ``backward``'s (ReLU, GELU,
SiLU, sigmoid, tanh): what autograd launches for ``F.elu``/``selu``/``celu``, ``leaky_relu``,
``hardtanh``/``relu6``, ``mish``, ``softplus``, ``hardswish``, ``hardsigmoid``,
``logsigmoid``, ``softshrink``, ``hardshrink``, ``l1_loss`` (``sgn``), ``binary_cross_entropy``,
``huber_loss`` and ``smooth_l1_loss``, ``prelu`` (``_prelu_kernel_backward``: the input and
the per-element weight gradients, which autograd then sums) and ``rrelu`` (the noise the
training forward drew, or the mean slope). ONE kernel each, one statement over the gradient's shape
(operands broadcast), each with the formula of PyTorch's CUDA kernel (its comparisons, selects
and transcendental calls counted as it runs them).
"""

from __future__ import annotations

import torch

from solar.frontend.lowering.pointwise import pointwise
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, Expr, call

aten = torch.ops.aten

ZERO = Const(0.0)
BCE_EPS = 1e-12  # CUDA's binary_cross_entropy_backward clamps (1 - x)·x below at this


def _where(c: Expr, a: Expr, b: Expr) -> Expr:
    return call("where", c, a, b)


def _elu(g, alpha, scale, input_scale, is_result, x):
    """``x > 0``: ``g·scale``; else ``g·input_scale·alpha·scale·exp(x·input_scale)`` (from the
    input) or ``g·input_scale·(y + alpha·scale)`` (from the result ``y``)."""
    neg_coef, in_coef = float(alpha) * float(scale), float(input_scale)
    if is_result:
        neg = call("mul", call("mul", g, Const(in_coef)), call("add", x, Const(neg_coef)))
    else:
        e = call("exp", call("mul", x, Const(in_coef)))
        neg = call("mul", call("mul", g, Const(in_coef * neg_coef)), e)
    return _where(call("le", x, ZERO), neg, call("mul", g, Const(float(scale))))


def _mish(g, x):
    """``g·(tanh(softplus(x)) + x·sigmoid(x)·(1 − tanh(softplus(x))²))``."""
    t = call("tanh", call("log1p", call("exp", x)))
    s = call("sigmoid", x)
    d = call("mul", call("mul", x, s), call("sub", Const(1.0), call("mul", t, t)))
    return call("mul", g, call("add", t, d))


def _softplus(g, x, beta, threshold):
    """``x·beta > threshold``: ``g``; else ``g·z/(z + 1)`` with ``z = exp(x·beta)``."""
    xb = call("mul", x, Const(float(beta)))
    z = call("exp", xb)
    return _where(
        call("gt", xb, Const(float(threshold))),
        g,
        call("div", call("mul", g, z), call("add", z, Const(1.0))),
    )


def _hardswish(g, x):
    """``x < −3``: 0; ``x ≤ 3``: ``g·(x/3 + 1/2)``; else ``g``."""
    mid = call("mul", g, call("add", call("div", x, Const(3.0)), Const(0.5)))
    return _where(call("lt", x, Const(-3.0)), ZERO, _where(call("le", x, Const(3.0)), mid, g))


def _hardsigmoid(g, x):
    """``−3 < x < 3``: ``g/6``; else 0."""
    inside = call("logical_and", call("gt", x, Const(-3.0)), call("lt", x, Const(3.0)))
    return _where(inside, call("mul", g, Const(1 / 6)), ZERO)


def _log_sigmoid(g, x, buffer=None):
    """``g·(m − s·z/(1 + z))`` with ``z = exp(−|x|)``, ``m = 1, s = 1`` for ``x < 0`` and
    ``m = 0, s = −1`` otherwise."""
    z = call("exp", call("neg", call("abs", x)))
    neg = call("lt", x, ZERO)
    q = call("div", z, call("add", Const(1.0), z))
    return call("mul", g, _where(neg, call("sub", Const(1.0), q), q))


def _shrink(g, x, lambd):
    """``−λ ≤ x ≤ λ``: 0; else ``g``."""
    lam = float(lambd)
    inside = call("logical_and", call("ge", x, Const(-lam)), call("le", x, Const(lam)))
    return _where(inside, ZERO, g)


def _norm(x: T, reduction: int) -> float:
    return 1.0 / max(x.numel, 1) if reduction == 1 else 1.0


def _huber(g, x, t, norm, delta):
    """``d = x − t``: ``d < −δ``: ``−norm·g·δ``; ``d > δ``: ``norm·g·δ``; else ``norm·d·g``."""
    d = call("sub", x, t)
    ng = call("mul", g, Const(norm))
    out = _where(call("gt", d, Const(delta)), call("mul", ng, Const(delta)), call("mul", ng, d))
    return _where(call("lt", d, Const(-delta)), call("mul", ng, Const(-delta)), out)


def _smooth_l1(g, x, t, norm, beta):
    """``d = x − t``: ``d < −β``: ``−norm·g``; ``d > β``: ``norm·g``; else ``norm·d·g/β``."""
    d = call("sub", x, t)
    ng = call("mul", g, Const(norm))
    inner = call("div", call("mul", ng, d), Const(beta)) if beta else ZERO
    out = _where(call("gt", d, Const(beta)), ng, inner)
    return _where(call("lt", d, Const(-beta)), call("neg", ng), out)


POINTWISE = {
    aten.leaky_relu_backward.default: (
        2,
        lambda g, x, slope, is_result: _where(
            call("gt", x, ZERO), g, call("mul", g, Const(float(slope)))
        ),
    ),
    aten.hardtanh_backward.default: (
        2,
        lambda g, x, lo, hi: _where(
            call("logical_or", call("le", x, Const(float(lo))), call("ge", x, Const(float(hi)))),
            ZERO,
            g,
        ),
    ),
    aten.mish_backward.default: (2, _mish),
    aten.softplus_backward.default: (2, _softplus),
    aten.hardswish_backward.default: (2, _hardswish),
    aten.hardsigmoid_backward.default: (2, _hardsigmoid),
    aten.log_sigmoid_backward.default: (2, _log_sigmoid),
    aten.softshrink_backward.default: (2, _shrink),
    aten.hardshrink_backward.default: (2, _shrink),
}


def _lower(operands: int, build):
    def lower(ctx: LoweringContext, *args: object) -> None:
        pointwise(ctx, lambda *e: build(*e, *args[operands:]), args[:operands])

    return lower


for _op, (_n, _build) in POINTWISE.items():
    lowering(_op)(_lower(_n, _build))


@lowering(aten.elu_backward.default)
def elu_backward(ctx: LoweringContext, g: T, alpha, scale, input_scale, is_result, x: T) -> None:
    pointwise(ctx, lambda gg, xx: _elu(gg, alpha, scale, input_scale, is_result, xx), [g, x])


@lowering(aten.sgn.default)
def sgn(ctx: LoweringContext, x: T) -> None:
    """``sgn`` of a real tensor is ``sign`` (what ``l1_loss``'s backward launches)."""
    if x.dtype.startswith("complex"):
        ctx.fail("of a complex tensor is not supported (x/|x|): use a real tensor")
    pointwise(ctx, lambda e: call("sign", e), [x])


@lowering(aten.binary_cross_entropy_backward.default)
def binary_cross_entropy_backward(
    ctx: LoweringContext, g: T, x: T, t: T, weight, reduction: int
) -> None:
    """``gI = norm·w·g·(x − t) / max((1 − x)·x, 1e-12)``."""
    norm = _norm(x, reduction)

    def build(gg, xx, tt, w=None):
        denom = call("maximum", call("mul", call("sub", Const(1.0), xx), xx), Const(BCE_EPS))
        r = call("div", call("mul", gg, call("sub", xx, tt)), denom)
        r = r if w is None else call("mul", r, w)
        return r if norm == 1.0 else call("mul", r, Const(norm))

    pointwise(ctx, build, [g, x, t] + ([weight] if isinstance(weight, T) else []))


@lowering(aten.huber_loss_backward.default)
def huber_loss_backward(ctx: LoweringContext, g: T, x: T, t: T, reduction: int, delta) -> None:
    norm = _norm(x, reduction)
    pointwise(ctx, lambda gg, a, b: _huber(gg, a, b, norm, float(delta)), [g, x, t])


@lowering(aten.smooth_l1_loss_backward.default)
def smooth_l1_loss_backward(ctx: LoweringContext, g: T, x: T, t: T, reduction: int, beta) -> None:
    norm = _norm(x, reduction)
    pointwise(ctx, lambda gg, a, b: _smooth_l1(gg, a, b, norm, float(beta)), [g, x, t])


@lowering(aten._prelu_kernel_backward.default)
def prelu_kernel_backward(ctx: LoweringContext, g: T, x: T, weight: T) -> None:
    """``gI = x > 0 ? g : w·g`` and ``gW = x > 0 ? 0 : x·g`` (both over the broadcast shape)."""
    positive = lambda xx: call("gt", xx, ZERO)  # noqa: E731
    pointwise(
        ctx,
        lambda gg, xx, w: _where(positive(xx), gg, call("mul", w, gg)),
        [g, x, weight],
        out=ctx.out(0),
    )
    pointwise(
        ctx, lambda gg, xx: _where(positive(xx), ZERO, call("mul", xx, gg)), [g, x], out=ctx.out(1)
    )


@lowering(aten.rrelu_with_noise_backward.default)
def rrelu_with_noise_backward(
    ctx: LoweringContext, g: T, x: T, noise: T, lower, upper, training: bool, is_result: bool
) -> None:
    """Training (``upper > lower``): ``g·noise``; else leaky ReLU's with slope
    ``(lower + upper)/2``."""
    if training and float(upper) - float(lower) > 1e-6:
        pointwise(ctx, lambda gg, n: call("mul", gg, n), [g, noise])
        return
    slope = (float(lower) + float(upper)) / 2
    pointwise(
        ctx, lambda gg, xx: _where(call("gt", xx, ZERO), gg, call("mul", gg, Const(slope))), [g, x]
    )
