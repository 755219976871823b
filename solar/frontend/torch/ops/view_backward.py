"""Backward of views whose gradient is not a view: ``diagonal_backward`` and
``unfold_backward`` (``Tensor.unfold``'s sliding windows). ONE kernel each.

- ``diagonal_backward``: zeros off the diagonal, the gradient on it, each element written once:
  with ``t = j − i`` over the two dims, the zero statements are guarded to ``t < offset`` and
  ``t > offset``, the copy writes ``(i, i + offset)`` (or ``(i − offset, i)``).
- ``unfold_backward``: zeros, then window ``w`` adds its ``size`` elements into
  ``w·step + k``. Windows overlap when ``step < size``: the taps are cut into runs of ``step``
  (``k = c·step + k'``) so that each statement's writes are distinct; one add per gradient
  element, as CUDA's kernel (which gathers the windows covering each element) does.
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import acc_dtype, dims_of, nest, norm_dim
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.program import Guard
from solar.ir.scalar import Const

aten = torch.ops.aten


@lowering(aten.diagonal_backward.default)
def diagonal_backward(
    ctx: LoweringContext, g: T, input_sizes, offset: int, dim1: int, dim2: int
) -> None:
    """``gI = 0`` off the diagonal, ``gI[.., i, .., i + offset, ..] = g[.., i]``."""
    out = ctx.out()
    a, b = norm_dim(dim1, out.ndim), norm_dim(dim2, out.ndim)
    names = dims_of(out.shape)
    t = Affine.of(names[b]) - Affine.of(names[a])
    span = out.shape[a] + out.shape[b]
    for guard in (Guard(t, -span, int(offset)), Guard(t, int(offset) + 1, span)):
        ctx.statement(nest(names, out.shape), out, names, Const(0.0), guards=[guard])
    rest = [n for k, n in enumerate(names) if k not in (a, b)]
    gd = [*rest, "d"]  # the gradient's dims: the others in order, then the diagonal
    index = [Affine.of(n) for n in names]
    index[a] = Affine.of("d") + max(-int(offset), 0)
    index[b] = Affine.of("d") + max(int(offset), 0)
    loops = [*((n, out.shape[names.index(n)]) for n in rest), ("d", g.shape[-1])]
    ctx.statement(loops, out, index, ctx.load(g, gd, out.dtype))


@lowering(aten.unfold_backward.default)
def unfold_backward(
    ctx: LoweringContext, g: T, input_sizes, dim: int, size: int, step: int
) -> None:
    """``gI = 0``, then ``gI[.., w·step + k, ..] += g[.., w, .., k]``."""
    out = ctx.out()
    d = norm_dim(dim, max(out.ndim, 1))
    names = dims_of(out.shape)
    ctx.statement(nest(names, out.shape), out, names, Const(0.0))
    size, step = int(size), int(step)
    windows = g.shape[d] if out.ndim else g.shape[0]
    acc = acc_dtype(out.dtype)
    rest = [(n, out.shape[k]) for k, n in enumerate(names) if k != d]
    for c in range(0, size, step if step < size else size):
        run = min(step, size - c) if step < size else size
        loops = [*rest, ("w", windows), ("k", run)]
        index = [Affine.of(n) for n in names]
        if out.ndim:
            index[d] = Affine.of("w") * step + Affine.of("k") + c
        src = [Affine.of(n) for n in names]
        if out.ndim:
            src[d] = Affine.of("w")
        else:
            src = [Affine.of("w")]
        value = ctx.load(g, [*src, Affine.of("k") + c], acc)
        ctx.statement(loops, out, index, value, reduce="sum", accumulate=True, dtype=acc)
