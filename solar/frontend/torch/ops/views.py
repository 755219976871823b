"""Data movement: views (free), copies (clone, ``_to_copy``, ``copy_``) and concatenation.

Views need no per-operator code: any operator whose output shares its input's storage (view,
_unsafe_view, permute, transpose, t, expand, slice, select, unsqueeze, squeeze, alias, detach,
as_strided, split, chunk, unbind, ...) is declared as an ``as_strided`` view with the sizes,
strides and storage offset torch computed while tracing (``lower_view`` in
:mod:`solar.frontend.torch.lower`). A copy the framework really makes is
a kernel that reads and writes every element.
"""

from __future__ import annotations

import torch

from solar.frontend.lowering.pointwise import pointwise
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import dims_of, nest
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine

aten = torch.ops.aten


@lowering(aten.clone.default, aten.lift_fresh_copy.default, aten._to_copy.default)
def copy(ctx: LoweringContext, x: T, *args: object) -> None:
    """``out = x``, cast to the output dtype; the output layout (``memory_format``) is torch's."""
    pointwise(ctx, lambda v: v, [x])


@lowering(aten.copy.default, aten.copy_.default)
def copy_into(ctx: LoweringContext, dst: T, src: T, *args: object) -> None:
    """``dst[...] = src[...]`` broadcast and cast to ``dst`` (in place for ``copy_``)."""
    pointwise(ctx, lambda v: v, [src])


@lowering(aten.cat.default)
def cat(ctx: LoweringContext, tensors: list[T], dim: int) -> None:
    """One statement per input, writing its slice of the output."""
    out = ctx.out()
    dim = dim % out.ndim
    dims = dims_of(out.shape)
    start = 0
    for x in tensors:
        if x.shape == (0,) and out.ndim != 1:  # legacy: empty 1-D inputs are skipped
            continue
        index = [Affine.of(d) + (start if k == dim else 0) for k, d in enumerate(dims)]
        load = ctx.load(x, dims, out.dtype)
        ctx.statement(nest(dims, x.shape), out, index, load)
        start += x.shape[dim]


@lowering(aten.stack.default)
def stack(ctx: LoweringContext, tensors: list[T], dim: int = 0) -> None:
    """One statement per input, writing ``out[..., j, ...]``."""
    out = ctx.out()
    dim = dim % out.ndim
    for j, x in enumerate(tensors):
        dims = dims_of(x.shape)
        index = [*dims[:dim], j, *dims[dim:]]
        ctx.statement(nest(dims, x.shape), out, index, ctx.load(x, dims, out.dtype))
