"""The copying forms of views (``view_copy``, ``permute_copy``, ``as_strided_copy``, ... as
functionalized graphs and ``torch.export`` record them), ``as_strided_`` (an in-place change
of a tensor's sizes and strides: free) and ``as_strided_scatter``.

A ``<view>_copy`` is ONE kernel that reads the viewed elements and writes them to a fresh
tensor: the view itself is computed by running ``<view>`` on the input's fake value (so its
sizes, strides and offset are torch's) and declared as a view of the input's storage; the
kernel copies it. Two forms are not views of the input: ``view_copy(x, size)`` of an ``x`` whose
strides admit no such view is torch's reshape copy (``_reshape_copy``: ``x`` in row-major order,
written to the contiguous output through a view of it with ``x``'s shape). ``view_copy(x, dtype)``
to another dtype copies a view that reinterprets ``x``'s bytes (as a plain ``view(dtype)`` is).

``as_strided_scatter(self, src, size, stride, offset)`` is ONE kernel that copies ``self`` as
torch's ``clone_preserve_strides`` does (a dense ``self``: its elements, in its layout; one with
gaps or a storage offset: its whole storage, the output keeping its sizes, strides and offset)
and writes ``src`` through the strided view of the copy's storage.
"""

from __future__ import annotations

import math

import torch
import torch.fx as fx

from solar.algebra.size import integer
from solar.frontend.torch.lower import LoweringContext, T, contiguous_strides
from solar.frontend.torch.ops.conventions import dims_of, nest
from solar.frontend.torch.registry import lowering
from solar.frontend.torch.symbolic_shapes import size as traced_size
from solar.frontend.torch.symbolic_shapes import sizes
from solar.ir.dtypes import from_torch

aten = torch.ops.aten

#: ``<view>_copy`` packet -> the view packet it copies
VIEW_COPIES = {
    getattr(aten, f"{name}_copy"): getattr(aten, name)
    for name in (
        "alias",
        "as_strided",
        "diagonal",
        "expand",
        "narrow",
        "permute",
        "squeeze",
        "t",
        "transpose",
        "unfold",
        "unsqueeze",
        "view",
        "detach",
        "select",
        "slice",
        "unbind",
        "split_with_sizes",
        "split",
    )  # fmt: skip
    if hasattr(aten, f"{name}_copy")
}


def _fake_args(node: fx.Node) -> tuple[tuple, dict]:
    def val(a):
        return a.meta["val"] if isinstance(a, fx.Node) else a

    return fx.node.map_aggregate(node.args, val), fx.node.map_aggregate(node.kwargs, val)


def _copy_through(ctx: LoweringContext, src: T, fake: torch.Tensor, out: T, stem: str) -> None:
    """``out[...] = src viewed as fake (sizes, strides, offset of src's storage)[...]``."""
    shape, dtype = sizes(fake.shape), from_torch(fake.dtype)
    name = ctx.builder.view(
        stem, src.name, shape, sizes(fake.stride()), traced_size(fake.storage_offset()), dtype
    )
    view = T(name, shape, dtype)
    dims = dims_of(shape)
    ctx.statement(nest(dims, shape), out, dims, ctx.load(view, dims, out.dtype))


def _reshapes(x: torch.Tensor, out: torch.Tensor) -> bool:
    """Whether ``view_copy(x, out.shape)`` is torch's reshape copy: no view of ``x``'s strides
    has that shape."""
    try:
        x.view(out.shape)
    except (RuntimeError, ValueError):  # the fake tensor's view refuses
        return True
    return False


def _reshape_copy(ctx: LoweringContext, x: T, out: T) -> None:
    """``out`` (contiguous) holds ``x`` in row-major order: written through a view of ``out``
    with ``x``'s shape and contiguous strides."""
    assert isinstance(ctx.val, torch.Tensor) and ctx.val.is_contiguous()
    name = ctx.builder.view(f"{ctx.node.name}_rows", out.name, x.shape, contiguous_strides(x.shape))
    dims = dims_of(x.shape)
    rows = T(name, x.shape, out.dtype)
    ctx.statement(nest(dims, x.shape), rows, dims, ctx.load(x, dims, out.dtype))


@lowering(*VIEW_COPIES)
def view_copy(ctx: LoweringContext, x: T, *args: object) -> None:
    packet = VIEW_COPIES[ctx.target.overloadpacket]
    view_op = getattr(packet, ctx.target._overloadname)
    fake_args, fake_kwargs = _fake_args(ctx.node)
    if view_op == aten.view.default and _reshapes(fake_args[0], ctx.val):
        ctx.begin_kernel()
        _reshape_copy(ctx, x, ctx.out())
        return
    views = view_op(*fake_args, **fake_kwargs)
    views = list(views) if isinstance(views, (tuple, list)) else [views]
    ctx.begin_kernel()
    for i, v in enumerate(views):
        _copy_through(ctx, x, v, ctx.out(i), f"{ctx.node.name}_view{i}")


@lowering(aten.as_strided_.default)
def as_strided_inplace(ctx: LoweringContext, x: T, *args: object) -> None:
    """New sizes and strides for ``x``'s storage: a view, no kernel."""
    v = ctx.val
    assert isinstance(v, torch.Tensor)
    shape = sizes(v.shape)
    name = ctx.builder.view(
        ctx.node.name, x.name, shape, sizes(v.stride()), traced_size(v.storage_offset())
    )
    ctx.set_outs([T(name, shape, x.dtype)])


@lowering(aten.as_strided_scatter.default)
def as_strided_scatter(
    ctx: LoweringContext, x: T, src: T, size, stride, offset: int | None = None
) -> None:
    """torch's ``clone_preserve_strides(self)``, then ``src`` written through its
    ``as_strided(size, stride, offset)`` (offset None: the output's own)."""
    v = ctx.val
    assert isinstance(v, torch.Tensor)
    whole = v.untyped_storage().nbytes() // v.element_size()
    if whole == v.numel() and v.storage_offset() == 0:  # a dense copy, laid out as torch's
        out = ctx.out()
        dims = dims_of(out.shape)
        ctx.statement(nest(dims, out.shape), out, dims, ctx.load(x, dims))
    else:  # a layout with gaps or an offset: the whole storage of x is copied
        base = ctx.builder.program.tensors[ctx.builder.program.base(x.name)]
        if math.prod(base.shape) != whole:
            ctx.fail(f"copies the storage of {x.name}, which the IR does not hold whole")
        flat = T(
            ctx.builder.view(f"{ctx.node.name}_whole", x.name, (whole,), (1,)), (whole,), x.dtype
        )
        storage = ctx.builder.tensor(f"{ctx.node.name}_storage", (whole,), x.dtype)
        ctx.statement([("i", whole)], T(storage, (whole,), x.dtype), ["i"], ctx.load(flat, ["i"]))
        shape = sizes(v.shape)
        name = ctx.builder.view(
            ctx.node.name, storage, shape, sizes(v.stride()), traced_size(v.storage_offset())
        )
        out = T(name, shape, x.dtype)
        ctx.set_outs([out])
    start = traced_size(v.storage_offset()) if offset is None else integer(offset)
    region = ctx.builder.view(
        f"{ctx.node.name}_region", out.name, tuple(size), tuple(stride), start
    )
    target = T(region, tuple(integer(s) for s in size), out.dtype)
    sdims = dims_of(target.shape)
    ctx.statement(nest(sdims, target.shape), target, sdims, ctx.load(src, sdims, out.dtype))
