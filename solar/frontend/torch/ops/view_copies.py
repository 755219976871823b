"""The copying forms of views (``view_copy``, ``permute_copy``, ``as_strided_copy``, ... as
functionalized graphs and ``torch.export`` record them), ``as_strided_`` (an in-place change
of a tensor's sizes and strides: free) and ``as_strided_scatter``.

A ``<view>_copy`` is ONE kernel that reads the viewed elements and writes them to a fresh
tensor: the view itself is computed by running ``<view>`` on the input's fake value (so its
sizes, strides and offset are torch's) and declared as a view of the input's storage; the
kernel copies it. ``as_strided_scatter(self, src, size, stride, offset)`` is ONE kernel that
copies ``self`` and writes ``src`` through the strided view of the copy.
"""

from __future__ import annotations

import torch
import torch.fx as fx

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.common import dims_of, nest
from solar.frontend.torch.registry import lowering

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
    shape = tuple(int(s) for s in fake.shape)
    name = ctx.builder.view(stem, src.name, shape, fake.stride(), fake.storage_offset())
    view = T(name, shape, src.dtype)
    dims = dims_of(shape)
    ctx.statement(nest(dims, shape), out, dims, ctx.load(view, dims, out.dtype))


@lowering(*VIEW_COPIES)
def view_copy(ctx: LoweringContext, x: T, *args: object) -> None:
    packet = VIEW_COPIES[ctx.target.overloadpacket]
    view_op = getattr(packet, ctx.target._overloadname)
    fake_args, fake_kwargs = _fake_args(ctx.node)
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
    shape = tuple(int(s) for s in v.shape)
    name = ctx.builder.view(ctx.node.name, x.name, shape, v.stride(), v.storage_offset())
    ctx.set_outs([T(name, shape, x.dtype)])


@lowering(aten.as_strided_scatter.default)
def as_strided_scatter(
    ctx: LoweringContext, x: T, src: T, size, stride, offset: int | None = None
) -> None:
    out = ctx.out()
    dims = dims_of(out.shape)
    ctx.statement(nest(dims, out.shape), out, dims, ctx.load(x, dims))
    region = ctx.builder.view(
        f"{ctx.node.name}_region", out.name, tuple(size), tuple(stride), int(offset or 0)
    )
    target = T(region, tuple(int(s) for s in size), out.dtype)
    sdims = dims_of(target.shape)
    ctx.statement(nest(sdims, target.shape), target, sdims, ctx.load(src, sdims, out.dtype))
