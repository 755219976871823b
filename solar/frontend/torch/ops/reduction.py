"""Reductions over some dims (``dim``/``keepdim``, or all of them): one kernel each.

``out[kept] op= x[kept, reduced]`` with the reduced dims marked; ``mean`` adds one divide per
output; ``max.dim``/``argmax`` add a second nest finding the first index that attains the
extremum; ``var``/``std`` are two passes (mean, then squared deviations). Half-precision
inputs accumulate in float32, as PyTorch does.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import acc_dtype, dims_of, nest, norm_dim, norm_dims
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Index, call

aten = torch.ops.aten

# operator -> (reduction, schema position of dim or None for all dims, position of keepdim)
REDUCTIONS: dict[object, tuple[str, int | None, int | None]] = {
    aten.sum.dim_IntList: ("sum", 1, 2),
    aten.sum.default: ("sum", None, None),
    aten.mean.dim: ("mean", 1, 2),
    aten.mean.default: ("mean", None, None),
    aten.prod.dim_int: ("prod", 1, 2),
    aten.prod.default: ("prod", None, None),
    aten.amax.default: ("max", 1, 2),
    aten.amin.default: ("min", 1, 2),
    aten.max.default: ("max", None, None),
    aten.min.default: ("min", None, None),
}


class Nest:
    """The loop nest of reducing ``x`` over ``reduced`` dims: dims named ``i<k>`` (kept) and
    ``r<k>`` (reduced), and the output index (0 for a reduced dim kept with size 1)."""

    def __init__(self, x: T, reduced: Sequence[int], keepdim: bool) -> None:
        self.names = [f"r{k}" if k in reduced else f"i{k}" for k in range(x.ndim)]
        self.dims = [(n, x.shape[k], k in reduced) for k, n in enumerate(self.names)]
        self.out_index = [
            0 if k in reduced else n
            for k, n in enumerate(self.names)
            if keepdim or k not in reduced
        ]
        self.count = prod(x.shape[k] for k in reduced)
        self.reduced = [self.names[k] for k in reduced]


def bound(args: Sequence[object], pos: int | None, default: object) -> object:
    return default if pos is None else args[pos]


@lowering(*REDUCTIONS)
def reduction(ctx: LoweringContext, x: T, *args: object) -> None:
    op, dim_pos, keep_pos = REDUCTIONS[ctx.op]
    full = (x, *args)
    n = Nest(x, norm_dims(bound(full, dim_pos, None), x.ndim), bool(bound(full, keep_pos, False)))
    out = ctx.out()
    if op != "mean":
        ctx.statement(n.dims, out, n.out_index, ctx.load(x, n.names, out.dtype), reduce=op)
        return
    acc = out if acc_dtype(out.dtype) == out.dtype else ctx.local("sum", out.shape, "float32")
    ctx.statement(n.dims, acc, n.out_index, ctx.load(x, n.names, acc.dtype), reduce="sum")
    o = dims_of(out.shape, "o")
    mean = call("div", ctx.load(acc, o), Const(n.count))
    ctx.statement(nest(o, out.shape), out, o, mean, dtype=acc.dtype)


# operator -> (reduction, position of dim, position of keepdim, which outputs: values/indices)
ARG_REDUCTIONS = {
    aten.max.dim: ("max", 1, 2, (0, 1)),
    aten.min.dim: ("min", 1, 2, (0, 1)),
    aten.argmax.default: ("max", 1, 2, (None, 0)),
    aten.argmin.default: ("min", 1, 2, (None, 0)),
}


@lowering(*ARG_REDUCTIONS)
def arg_reduction(ctx: LoweringContext, x: T, *args: object) -> None:
    """``values[o] max= x[o, r]``, then ``indices[o] min= (x[o, r] == values[o] ? r : R)``:
    the first index of the extremum (``dim=None`` indexes the flattened tensor)."""
    op, dim_pos, keep_pos, (vi, ii) = ARG_REDUCTIONS[ctx.op]
    full = (x, *args)
    dim = full[dim_pos]
    reduced = list(range(x.ndim)) if dim is None else [norm_dim(dim, x.ndim)]
    n = Nest(x, reduced if x.ndim else [], bool(full[keep_pos]))
    indices = ctx.out(ii)
    values = ctx.out(vi) if vi is not None else ctx.local("values", indices.shape, x.dtype)
    ctx.statement(n.dims, values, n.out_index, ctx.load(x, n.names), reduce=op)
    coefs, stride = {}, 1
    for k in reversed(reduced if x.ndim else []):  # row-major position among reduced dims
        coefs[n.names[k]] = stride
        stride *= x.shape[k]
    position = Affine.build(coefs)
    hit = call("eq", ctx.load(x, n.names), ctx.load(values, n.out_index))
    first = call("where", hit, Index(position), Const(n.count))
    ctx.statement(n.dims, indices, n.out_index, first, reduce="min", dtype=x.dtype)


# operator -> (take the square root, also output the mean)
MOMENTS = {
    aten.var.correction: (False, False),
    aten.std.correction: (True, False),
    aten.var_mean.correction: (False, True),
    aten.std_mean.correction: (True, True),
}


@lowering(*MOMENTS)
def moments(ctx: LoweringContext, x: T, dim, correction, keepdim: bool) -> None:
    """Two passes: ``mu = sum(x) / N``, then ``var = sum((x - mu)^2) / (N - correction)``
    (``sqrt`` of it for std)."""
    root, with_mean = MOMENTS[ctx.op]
    n = Nest(x, norm_dims(dim, x.ndim), bool(keepdim))
    out = ctx.out(0)
    acc = acc_dtype(out.dtype)
    o = dims_of(out.shape, "o")

    def scratch(given: T | None, stem: str) -> T:
        return (
            given if given is not None and given.dtype == acc else ctx.local(stem, out.shape, acc)
        )

    mean = scratch(ctx.out(1) if with_mean else None, "mean")
    var = scratch(out, "var")
    ctx.statement(n.dims, mean, n.out_index, ctx.load(x, n.names, acc), reduce="sum")
    ctx.statement(nest(o, out.shape), mean, o, call("div", ctx.load(mean, o), Const(n.count)))
    centered = call("sub", ctx.load(x, n.names, acc), ctx.load(mean, n.out_index))
    ctx.statement(n.dims, var, n.out_index, call("square", centered), reduce="sum")
    dof = max(n.count - (1 if correction is None else correction), 0)
    result = call("div", ctx.load(var, o), Const(dof))
    ctx.statement(nest(o, out.shape), out, o, call("sqrt", result) if root else result, dtype=acc)
    if with_mean and mean is not ctx.out(1):
        ctx.statement(nest(o, out.shape), ctx.out(1), o, ctx.load(mean, o))
