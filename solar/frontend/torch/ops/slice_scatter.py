"""Writes into one slice of a tensor: ``slice_backward`` / ``select_backward`` (what autograd
launches for ``x[a:b:s]`` and ``x[i]``: zeros, then the gradient copied into the slice) and
``slice_scatter`` / ``select_scatter`` (a copy of ``input`` with the slice replaced by ``src``).
ONE kernel each, 0 flops.

The output is cut along the sliced dim into disjoint progressions, each one statement (every
element written exactly once, so reads and writes are exact boxes and no element is counted
twice): the slice ``start + step·i`` (``i < len``) takes the gradient / ``src``; the rest --
``[0, start)``, the positions ``start + r + step·i`` of each residue ``0 < r < step``, and the
positions of residue 0 past the slice -- take zero (the backward ops) or ``input`` (the
scatters). Eager's backward fills the whole output and then copies the slice (two launches);
one kernel writing each element once moves no more than they do.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import dims_of, norm_dim
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr

aten = torch.ops.aten

Value = Callable[[list[Affine]], Expr]  # the output index -> the value written there


def _progression(ctx: LoweringContext, out: T, d: int, first: int, step: int, count: int, value):
    """``out[.., first + step·i, ..] = value(index)`` for ``i < count`` (other dims whole)."""
    if count <= 0:
        return
    names = dims_of(out.shape)
    loops = [(n, count if k == d else m) for k, (n, m) in enumerate(zip(names, out.shape))]
    index = [Affine.of(n) * step + first if k == d else Affine.of(n) for k, n in enumerate(names)]
    ctx.statement(loops, out, index, value(index, Affine.of(names[d])))


def emit_slice(
    ctx: LoweringContext, out: T, d: int, start: int, step: int, length: int, inside, outside
) -> None:
    """The slice ``start + step·i`` (``i < length``) of dim ``d`` from ``inside(index, i)``, every
    other position of ``out`` from ``outside(index, i)``, each element written once."""
    n = out.shape[d]
    _progression(ctx, out, d, start, step, length, inside)
    _progression(ctx, out, d, 0, 1, start, outside)
    for r in range(step):
        total = max(0, -(-(n - start - r) // step))  # positions start + r + step·i below n
        done = length if r == 0 else 0
        _progression(ctx, out, d, start + r + step * done, step, total - done, outside)


def _start(start: int | None, n: int) -> int:
    s = 0 if start is None else int(start)
    s = s + n if s < 0 else s
    return min(max(s, 0), n)


def _from(ctx: LoweringContext, src: T, out: T, d: int, drop: bool):
    """The value of ``src`` at the slice position ``index`` (dim ``d`` replaced by the loop
    variable ``i``, or dropped for a selected index)."""

    def value(index: list[Affine], i: Affine) -> Expr:
        idx = [i if k == d else a for k, a in enumerate(index)]
        return ctx.load(src, idx[:d] + idx[d + 1 :] if drop else idx, out.dtype)

    return value


def _zero(index: list[Affine], i: Affine) -> Expr:
    return Const(0)


def _copy(ctx: LoweringContext, x: T, out: T):
    return lambda index, i: ctx.load(x, index, out.dtype)


@lowering(aten.slice_backward.default)
def slice_backward(
    ctx: LoweringContext, g: T, input_sizes, dim: int, start: int, end: int, step: int
) -> None:
    """``gI = 0; gI[.., start:end:step, ..] = g``."""
    out = ctx.out()
    d = norm_dim(dim, out.ndim)
    s = _start(start, out.shape[d])
    emit_slice(ctx, out, d, s, int(step), g.shape[d], _from(ctx, g, out, d, False), _zero)


@lowering(aten.select_backward.default)
def select_backward(ctx: LoweringContext, g: T, input_sizes, dim: int, index: int) -> None:
    """``gI = 0; gI[.., index, ..] = g``."""
    out = ctx.out()
    d = norm_dim(dim, out.ndim)
    i = int(index) + (out.shape[d] if int(index) < 0 else 0)
    emit_slice(ctx, out, d, i, 1, 1, _from(ctx, g, out, d, True), _zero)


@lowering(aten.slice_scatter.default)
def slice_scatter(
    ctx: LoweringContext, x: T, src: T, dim: int = 0, start=None, end=None, step: int = 1
) -> None:
    """``out = x; out[.., start:end:step, ..] = src``."""
    out = ctx.out()
    d = norm_dim(dim, out.ndim)
    s = _start(start, out.shape[d])
    inside = _from(ctx, src, out, d, False)
    emit_slice(ctx, out, d, s, int(step), src.shape[d], inside, _copy(ctx, x, out))


@lowering(aten.select_scatter.default)
def select_scatter(ctx: LoweringContext, x: T, src: T, dim: int, index: int) -> None:
    """``out = x; out[.., index, ..] = src``."""
    out = ctx.out()
    d = norm_dim(dim, out.ndim)
    i = int(index) + (out.shape[d] if int(index) < 0 else 0)
    emit_slice(ctx, out, d, i, 1, 1, _from(ctx, src, out, d, True), _copy(ctx, x, out))
