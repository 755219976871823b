"""Tensor creation: fills (full, zeros, ones, fill_), ranges (arange), and allocations.

A fill is a kernel writing a constant; ``empty`` allocates without a kernel; ``scalar_tensor``
is a constant (eager wraps a Python number into a CPU scalar, launching nothing).
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.common import dims_of, nest, pointwise
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
