"""``masked_scatter`` and the ``masked_scatter_backward`` autograd launches for it. ONE kernel
each, both built on the mask's prefix count, as CUDA's kernels are (``cub`` exclusive scan):

- the mask, broadcast to the nest's shape, copied on chip, and ``cs``, its inclusive prefix sum
  over the flattened shape (a scan: ``n`` adds);
- ``masked_scatter(x, mask, source)``: ``out[o] = mask[o] ? source[cs[o] − 1] : x[o]`` (the
  ``cs[o] − 1``-th element of ``source`` in row-major order, unravelled by index arithmetic);
- ``masked_scatter_backward(grad, mask, sizes)`` (``grad.masked_select(mask)`` padded with
  zeros to ``sizes``): ``packed[j] = 0`` for ``j < S``, then
  ``packed[mask[o] ? cs[o] − 1 : S] = grad[o]`` (slot ``S`` takes the unmasked elements and is
  never read), ``out = packed[:S]``.

Which elements of ``source`` (``grad``) are read depends on the mask, so those reads are
indirect and counted at their provable minimum (one element where the nest runs; the real
count is the mask's ``True`` count, so an all-``False`` mask reads none and the claim is one
element above: the kernel's other traffic, ``x`` or the mask read and the output written, is
exact and more than covers it). Every other count is exact.
"""

from __future__ import annotations

import math

import torch

from solar.frontend.layout import contiguous_strides
from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import broadcast_index, dims_of, nest
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr, Index, Indirect, call

aten = torch.ops.aten


def _flat_view(ctx: LoweringContext, t: T, shape: tuple[int, ...]) -> T:
    """``t`` (dense, row-major) seen with ``shape``."""
    name = ctx.builder.view(f"{t.name}_nd", t.name, shape, contiguous_strides(shape), 0)
    return T(name, shape, t.dtype)


def mask_prefix(ctx: LoweringContext, mask: T, shape: tuple[int, ...]) -> tuple[Expr, Expr]:
    """The mask broadcast to ``shape`` (a bool load of a kernel-local copy) and its inclusive
    prefix count over the flattened shape (an int64 load), both indexed by ``dims_of(shape)``."""
    n = math.prod(shape)
    names = dims_of(shape)
    flat = ctx.local("mask", (n,), "bool")
    nd = _flat_view(ctx, flat, shape)
    value = cast(ctx.load(mask, broadcast_index(mask.shape, names)), mask.dtype, "bool")
    ctx.statement(nest(names, shape), nd, names, value)
    cs = ctx.local("prefix", (n,), "int64")
    ctx.statement(
        [("p", n)], cs, ["p"], cast(ctx.load(flat, ["p"]), "bool", "int64"), reduce="sum", scan="p"
    )
    return ctx.load(nd, names), ctx.load(_flat_view(ctx, cs, shape), names)


def unravel(c: Expr, shape: tuple[int, ...]) -> list[Indirect]:
    """The row-major index of flat position ``c`` (an int64 expression) in ``shape``, as index
    arithmetic (exact in float64)."""
    if len(shape) <= 1:
        return [Indirect(c)] * len(shape)
    cf = call("cast", c, dtype="float64")
    out = []
    for d, size in enumerate(shape):
        stride = math.prod(shape[d + 1 :])
        k = call("floor", call("div", cf, Const(float(stride)))) if stride > 1 else cf
        k = call("remainder", k, Const(float(size))) if d > 0 else k
        out.append(Indirect(call("cast", k, dtype="int64")))
    return out


@lowering(aten.masked_scatter.default)
def masked_scatter(ctx: LoweringContext, x: T, mask: T, source: T) -> None:
    out = ctx.out()
    names = dims_of(out.shape)
    rows = nest(names, out.shape)
    keep = ctx.load(x, broadcast_index(x.shape, names))
    if source.numel == 0 or out.numel == 0:  # no element can be selected
        ctx.statement(rows, out, names, keep)
        return
    hit, cs = mask_prefix(ctx, mask, out.shape)
    at = call("where", hit, call("sub", cs, Const(1)), Const(0))
    ctx.statement(
        rows, out, names, call("where", hit, ctx.load(source, unravel(at, source.shape)), keep)
    )


@lowering(aten.masked_scatter_backward.default)
def masked_scatter_backward(ctx: LoweringContext, grad: T, mask: T, sizes: list) -> None:
    out = ctx.out()
    s = out.numel
    flat = T(ctx.builder.view(f"{out.name}_flat", out.name, (s,), (1,), 0), (s,), out.dtype)
    shape = tuple(torch.broadcast_shapes(grad.shape, mask.shape))
    packed = ctx.local("packed", (s + 1,), out.dtype)
    ctx.statement([("j", s)], packed, ["j"], Const(0))
    if math.prod(shape) > 0:
        names = dims_of(shape)
        hit, cs = mask_prefix(ctx, mask, shape)
        slot = Indirect(call("where", hit, call("sub", cs, Const(1)), Const(s)))
        lead = len(shape) - grad.ndim
        src = [
            0
            if n == 1
            else Indirect(call("where", hit, Index(Affine.of(names[lead + k])), Const(0)))
            for k, n in enumerate(grad.shape)
        ]
        ctx.statement(nest(names, shape), packed, [slot], ctx.load(grad, src))
    ctx.statement([("j", s)], flat, ["j"], ctx.load(packed, ["j"]))
