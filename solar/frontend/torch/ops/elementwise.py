"""Elementwise operators: one table row per aten operator, one statement per kernel.

A row says how many leading schema arguments are operands (tensors, broadcast numpy-style, or
Python numbers, which become constants) and how to build the scalar expression from their
loads and the remaining (static) arguments. Scalar operators are the rows of
:data:`solar.ir.ops.SCALAR_OPS`; compositions (leaky_relu, hardswish, ...) use several.
The compute dtype is the output dtype, except for comparisons (bool out), which compare in the
promoted operand dtype. In-place variants (``add_``, ``relu_``) reuse these rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from solar.frontend.lowering.exprs import scale
from solar.frontend.lowering.pointwise import pointwise
from solar.frontend.torch.lower import LoweringContext
from solar.frontend.torch.ops.conventions import dims_of, nest, result_dtype
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.ops import SCALAR_OPS
from solar.ir.program import Guard
from solar.ir.scalar import Const, Expr, call

aten = torch.ops.aten


@dataclass(frozen=True)
class Row:
    ops: Sequence[object]
    operands: int
    build: Callable[..., Expr]
    compare: bool = False  # bool output: compute in the operands' promoted dtype
    raw: Sequence[int] = ()  # operand positions read without a cast (boolean masks)


def fn(name: str) -> Callable[..., Expr]:
    """Apply scalar operator ``name`` to the operands; ignore static arguments."""
    arity = SCALAR_OPS[name].arity
    return lambda *a: call(name, *a[:arity])


def clamp(x: Expr, lo: Expr | float | None, hi: Expr | float | None) -> Expr:
    """``min(max(x, lo), hi)``; a missing bound is no operation."""
    lo = Const(lo) if isinstance(lo, (int, float)) else lo
    hi = Const(hi) if isinstance(hi, (int, float)) else hi
    if lo is not None:
        x = call("maximum", x, lo)
    if hi is not None:
        x = call("minimum", x, hi)
    return x


def positive(x: Expr, then: Expr, otherwise: Expr) -> Expr:
    return call("where", call("gt", x, Const(0)), then, otherwise)


def pow_scalar(x: Expr, e: Expr) -> Expr:
    """``x ** e`` for a constant exponent, with the cheap special cases PyTorch also takes."""
    k = e.value if isinstance(e, Const) else None
    special = {
        2: lambda: call("square", x),
        1: lambda: x,
        0.5: lambda: call("sqrt", x),
        -0.5: lambda: call("rsqrt", x),
        -1: lambda: call("reciprocal", x),
        -2: lambda: call("reciprocal", call("square", x)),
        3: lambda: call("mul", call("square", x), x),
    }
    if k is not None and not isinstance(k, bool) and k in special:
        return special[k]()
    return call("pow", x, e)


def divide(a: Expr, b: Expr, rounding_mode: str | None = None) -> Expr:
    if rounding_mode is None:
        return call("div", a, b)
    if rounding_mode == "floor":
        return call("floor", call("div", a, b))
    if rounding_mode == "trunc":
        return call("trunc", call("div", a, b))
    raise NotImplementedError(f"div with rounding_mode={rounding_mode!r} is not supported")


def softplus(x: Expr, beta: float, threshold: float) -> Expr:
    bx = scale(x, beta)
    soft = call("log1p", call("exp", bx))
    return call(
        "where",
        call("gt", bx, Const(threshold)),
        x,
        soft if beta == 1 else call("div", soft, Const(beta)),
    )


def elu(x: Expr, alpha: float, s: float, input_scale: float) -> Expr:
    neg = scale(call("expm1", scale(x, input_scale)), alpha * s)
    return positive(x, scale(x, s), neg)


def lerp(a: Expr, b: Expr, w: Expr | float) -> Expr:
    """CUDA's (and CPU's) lerp: ``a + w·(b − a)`` where ``|w| < 0.5``, else
    ``b − (b − a)·(1 − w)``; a constant weight picks its branch statically."""
    w = Const(w) if isinstance(w, (int, float)) else w
    diff = call("sub", b, a)
    low = call("add", a, call("mul", w, diff))
    high = call("sub", b, call("mul", diff, call("sub", Const(1), w)))
    if isinstance(w, Const):
        return low if abs(w.value) < 0.5 else high
    return call("where", call("lt", call("abs", w), Const(0.5)), low, high)


def relu6ish(x: Expr) -> Expr:
    """``min(max(x + 3, 0), 6)``, the core of hardsigmoid/hardswish."""
    return clamp(call("add", x, Const(3)), 0, 6)


ROWS = [
    # unary scalar operators
    *(
        Row([getattr(aten, name).default], 1, fn(name))
        for name in [
            "abs",
            "neg",
            "exp",
            "exp2",
            "expm1",
            "log",
            "log2",
            "log1p",
            "sqrt",
            "rsqrt",
            "relu",
            "sigmoid",
            "tanh",
            "silu",
            "erf",
            "erfinv",
            "asinh",
            "acosh",
            "atanh",
            "log10",
            "sin",
            "cos",
            "reciprocal",
            "floor",
            "ceil",
            "sign",
            "trunc",
            "tan",
            "atan",
            "asin",
            "acos",
            "sinh",
            "cosh",
        ]
    ),
    Row([aten.round.default], 1, fn("round")),
    Row([aten.logical_not.default], 1, fn("logical_not"), compare=True),
    Row(
        [aten.gelu.default],
        1,
        lambda x, approximate: call("gelu_tanh" if approximate == "tanh" else "gelu", x),
    ),
    # arithmetic (``alpha`` scales the second operand)
    Row([aten.add.Tensor, aten.add.Scalar], 2, lambda a, b, alpha: call("add", a, scale(b, alpha))),
    Row([aten.sub.Tensor, aten.sub.Scalar], 2, lambda a, b, alpha: call("sub", a, scale(b, alpha))),
    Row(
        [aten.rsub.Tensor, aten.rsub.Scalar], 2, lambda a, b, alpha: call("sub", b, scale(a, alpha))
    ),
    Row([aten.mul.Tensor, aten.mul.Scalar], 2, fn("mul")),
    Row([aten.div.Tensor, aten.div.Scalar], 2, fn("div")),
    Row([aten.div.Tensor_mode, aten.div.Scalar_mode], 2, divide),
    Row(
        [aten.floor_divide.default, aten.floor_divide.Scalar], 2, lambda a, b: divide(a, b, "floor")
    ),
    Row([aten.pow.Tensor_Scalar], 2, pow_scalar),
    Row([aten.pow.Tensor_Tensor, aten.pow.Scalar], 2, fn("pow")),
    # remainder takes the divisor's sign (Python's %), fmod the dividend's (C's fmod)
    Row(
        [aten.remainder.Tensor, aten.remainder.Scalar, aten.remainder.Scalar_Tensor],
        2,
        fn("remainder"),
    ),
    Row([aten.fmod.Tensor, aten.fmod.Scalar], 2, fn("fmod")),
    Row([aten.atan2.default, aten.atan2.out], 2, fn("atan2")),
    Row([aten.maximum.default], 2, fn("maximum")),
    Row([aten.minimum.default], 2, fn("minimum")),
    Row([aten.lerp.Scalar], 2, lerp),
    Row([aten.lerp.Tensor], 3, lerp),
    # the backward of train-mode dropout: grad · mask · 1/(1−p), one kernel as on CUDA
    Row(
        [aten.native_dropout_backward.default],
        2,
        lambda g, mask, k: scale(call("mul", g, mask), k),
    ),
    Row([aten.addcmul.default], 3, lambda s, a, b, v: call("add", s, scale(call("mul", a, b), v))),
    Row([aten.addcdiv.default], 3, lambda s, a, b, v: call("add", s, scale(call("div", a, b), v))),
    # comparisons and logic
    *(
        Row([getattr(aten, name).Tensor, getattr(aten, name).Scalar], 2, fn(name), compare=True)
        for name in ("eq", "ne", "lt", "le", "gt", "ge")
    ),
    Row([aten.logical_and.default], 2, fn("logical_and"), compare=True),
    Row([aten.logical_or.default], 2, fn("logical_or"), compare=True),
    Row([aten.logical_xor.default], 2, fn("logical_xor"), compare=True),
    *(
        Row([op.Tensor, op.Scalar, op.Scalar_Tensor], 2, fn(op.__name__))
        for op in (aten.bitwise_and, aten.bitwise_or, aten.bitwise_xor)
    ),
    # ``~x``: logical not for bool, two's complement for integers (one LOP3)
    Row([aten.bitwise_not.default], 1, fn("bitwise_not")),
    *(
        Row([getattr(aten, n).default], 1, fn(n), compare=True)
        for n in ("isnan", "isinf", "isfinite")
    ),
    Row([aten.isposinf.default], 1, lambda x: call("eq", x, Const(math.inf)), compare=True),
    Row([aten.isneginf.default], 1, lambda x: call("eq", x, Const(-math.inf)), compare=True),
    Row([aten.where.self], 3, fn("where"), raw=(0,)),
    Row(
        [aten.masked_fill.Scalar, aten.masked_fill.Tensor],
        3,
        lambda x, m, v: call("where", m, v, x),
        raw=(1,),
    ),
    # clamps and activations built from several scalar operators
    Row([aten.clamp.default, aten.clamp.Tensor], 3, clamp),
    Row([aten.clamp_min.default, aten.clamp_min.Tensor], 2, lambda x, lo: clamp(x, lo, None)),
    Row([aten.clamp_max.default, aten.clamp_max.Tensor], 2, lambda x, hi: clamp(x, None, hi)),
    Row([aten.hardtanh.default], 1, clamp),
    Row([aten.leaky_relu.default], 1, lambda x, slope: positive(x, x, scale(x, slope))),
    Row([aten.elu.default], 1, elu),
    Row([aten.softplus.default], 1, softplus),
    Row([aten.hardsigmoid.default], 1, lambda x: call("div", relu6ish(x), Const(6))),
    Row([aten.hardswish.default], 1, lambda x: call("div", call("mul", x, relu6ish(x)), Const(6))),
    Row(
        [aten.mish.default],
        1,
        lambda x: call("mul", x, call("tanh", call("log1p", call("exp", x)))),
    ),
]


def _row_lowering(row: Row) -> Callable[..., None]:
    def lower(ctx: LoweringContext, *args: object) -> None:
        operands, static = args[: row.operands], args[row.operands :]
        compute = None
        if row.compare:
            compute = result_dtype(*(x for k, x in enumerate(operands) if k not in row.raw))
        try:
            pointwise(
                ctx, lambda *e: row.build(*e, *static), operands, compute=compute, raw=row.raw
            )
        except NotImplementedError as e:
            ctx.fail(str(e))

    return lower


for _row in ROWS:
    lowering(*_row.ops)(_row_lowering(_row))


@lowering(aten.triu.default, aten.tril.default)
def triangle(ctx: LoweringContext, x, diagonal: int) -> None:
    """Two guarded nests: ``out = x`` on the kept triangle (``j - i >= diagonal`` for triu,
    ``j - i <= diagonal`` for tril), ``out = 0`` on the rest."""
    out = ctx.out()
    dims = dims_of(out.shape)
    rows, cols = out.shape[-2:]
    offset = Affine.of(dims[-1]) - Affine.of(dims[-2])  # j - i, in (-rows, cols)
    split = diagonal if ctx.op == aten.triu.default else diagonal + 1
    upper, lower = Guard(offset, split, cols), Guard(offset, -rows, split)
    keep, zero = (upper, lower) if ctx.op == aten.triu.default else (lower, upper)
    loops = nest(dims, out.shape)
    ctx.statement(loops, out, dims, ctx.operand(x, dims, out.dtype), guards=[keep])
    ctx.statement(loops, out, dims, Const(0), guards=[zero])


@lowering(aten.nan_to_num.default)
def nan_to_num(ctx: LoweringContext, x, nan, posinf, neginf) -> None:
    """``where(x != x, nan, where(x == inf, posinf, where(x == -inf, neginf, x)))``; the
    defaults are 0 and the dtype's largest and lowest finite values. Integer inputs are a copy."""
    out = ctx.out()
    if not out.dtype.startswith(("float", "bfloat")):
        pointwise(ctx, lambda v: v, [x])
        return
    info = torch.finfo(getattr(torch, out.dtype))
    nan = 0.0 if nan is None else nan
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf

    def build(v: Expr) -> Expr:
        e = call("where", call("eq", v, Const(-math.inf)), Const(neginf), v)
        e = call("where", call("eq", v, Const(math.inf)), Const(posinf), e)
        return call("where", call("isnan", v), Const(nan), e)

    pointwise(ctx, build, [x])
