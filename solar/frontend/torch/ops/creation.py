"""Tensor creation: fills (full, zeros, ones, fill_), ranges (arange), and allocations.

A fill is a kernel writing a constant; ``empty`` allocates without a kernel; ``scalar_tensor``
is a constant (eager wraps a Python number into a CPU scalar, launching nothing).
"""

from __future__ import annotations

import torch

from solar.frontend.lowering.pointwise import pointwise
from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import dims_of, nest
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Index, call

aten = torch.ops.aten

# operator -> position of the fill value among its schema arguments (None: the value is fixed)
FILLS: dict[object, tuple[int | None, float]] = {
    aten.full.default: (1, 0),
    aten.full_like.default: (1, 0),
    aten.new_full.default: (2, 0),
    aten.fill.Scalar: (1, 0),
    aten.fill.Tensor: (1, 0),
    aten.zeros.default: (None, 0),
    aten.zeros_like.default: (None, 0),
    aten.new_zeros.default: (None, 0),
    aten.zero.default: (None, 0),
    aten.ones.default: (None, 1),
    aten.ones_like.default: (None, 1),
    aten.new_ones.default: (None, 1),
}


@lowering(*FILLS)
def fill(ctx: LoweringContext, *args: object) -> None:
    """``out[...] = value`` (a number, or a 0-dim tensor for ``fill.Tensor``)."""
    position, fixed = FILLS[ctx.op]
    value = fixed if position is None else args[position]
    if isinstance(value, T):
        pointwise(ctx, lambda v: v, [value])
    else:
        pointwise(ctx, lambda: Const(value), [])


@lowering(
    aten.empty.memory_format,
    aten.empty_like.default,
    aten.new_empty.default,
    aten.empty_strided.default,
    aten.new_empty_strided.default,
)
def empty(ctx: LoweringContext, *args: object) -> None:
    """An allocation: declares the output, launches nothing."""
    ctx.outs()


@lowering(aten.scalar_tensor.default)
def scalar_tensor(ctx: LoweringContext, s: object, *args: object) -> None:
    val = ctx.val
    assert isinstance(val, torch.Tensor)
    ctx.set_outs([ctx.constant(ctx.node.name, torch.tensor(s, dtype=val.dtype))])


@lowering(aten.arange.default, aten.arange.start, aten.arange.start_step)
def arange(ctx: LoweringContext, *args: object) -> None:
    """``out[i] = start + step * i``: an integer affine index when everything is integral."""
    if ctx.op == aten.arange.default:
        start, step = 0, 1
    elif ctx.op == aten.arange.start:
        start, step = args[0], 1
    else:
        start, step = args[0], args[2]
    out = ctx.out()
    (i,) = dims_of(out.shape)
    if all(isinstance(v, int) for v in (start, step)):
        expr = Index(Affine.of(i) * step + start)
    else:
        expr = call("mul", Index(Affine.of(i)), Const(step))
        if start != 0:
            expr = call("add", expr, Const(start))
    ctx.statement(nest([i], out.shape), out, [i], expr)


@lowering(aten.linspace.default, aten.logspace.default)
def linspace(ctx: LoweringContext, start, end, steps: int, *rest: object) -> None:
    """``start + step·i`` for the first ``steps // 2`` points and ``end − step·(steps − 1 −
    i)`` for the rest, with ``step = (end − start) / (steps − 1)``, as ATen's kernel computes
    them; ``logspace`` raises ``base`` to that power."""
    out = ctx.out()
    if isinstance(start, T) or isinstance(end, T):
        ctx.fail("with tensor endpoints is not supported; pass Python numbers")
    if not out.dtype.startswith(("float", "bfloat")):
        ctx.fail(f"with an integer dtype ({out.dtype}) is not supported")
    base = rest[0] if ctx.op == aten.logspace.default else None
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    half = steps // 2 if steps > 1 else 1  # one point: ``start``
    acc = "float32" if out.dtype in ("float16", "bfloat16") else out.dtype
    for first, count, value in (
        (0, half, lambda i: call("add", Const(start), call("mul", Const(step), i))),
        (half, steps - half, lambda i: call("sub", Const(end), call("mul", Const(step), i))),
    ):
        if count == 0:
            continue
        pos = Affine.of("i") + first
        i = Index(pos) if first == 0 else Index(Affine.of(steps - 1 - first) - Affine.of("i"))
        e = value(cast(i, "int64", acc))
        if base is not None:
            e = call("pow", Const(float(base)), e)
        ctx.statement([("i", count)], out, [pos], cast(e, acc, out.dtype), dtype=acc)


@lowering(aten.eye.default, aten.eye.m)
def eye(ctx: LoweringContext, *args: object) -> None:
    """``out = 0`` then ``out[i, i] = 1`` (ATen's ``zero_`` and diagonal ``fill_``, counted
    as one kernel: the work of both, no compares)."""
    out = ctx.out()
    d = dims_of(out.shape)
    ctx.statement(nest(d, out.shape), out, d, Const(0))
    ctx.statement([("i", min(out.shape))], out, ["i", "i"], Const(1))
