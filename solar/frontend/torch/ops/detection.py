"""torchvision's detection operators, registered by name (torchvision defines them when it is
imported): ``torchvision::nms``, ``torchvision::roi_align``. ONE kernel each.

``nms(dets (N, 4), scores (N,), iou)`` keeps the boxes no higher-scoring kept box overlaps by
more than ``iou``, in decreasing score order: the boxes sorted by score (an extern sort of the
scores into a kernel-local order), gathered in that order (kernel-local), suppressed (the extern
``nms`` routine over the sorted boxes, giving kept positions) and mapped back to box indices.
It reads the boxes and scores once and writes the ``m`` kept indices (``m`` is the traced size:
1 at least when there is a box, or observed).
"""

from __future__ import annotations

from solar.frontend.layout import acc_dtype
from solar.frontend.lowering.exprs import cast
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.indexing import index_load
from solar.frontend.torch.registry import named_lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr, Index, Indirect, call


@named_lowering("torchvision.nms.default")
def nms(ctx: LoweringContext, dets: T, scores: T, iou_threshold: float) -> None:
    out = ctx.out()
    n, m = dets.shape[0], out.shape[0]
    if n == 0:
        return
    order = ctx.local("order", (n,), "int64")
    score = ctx.load(scores, ["r"])
    attrs = {"descending": True, "stable": False}
    ctx.statement(
        [("p", n), ("r", n, True)], order, ["p"], score, extern="sort.indices", extern_attrs=attrs
    )
    ranked = ctx.local("ranked", (n, 4), dets.dtype)
    by_score = ctx.load(dets, [Indirect(index_load(order, ["i"])), "c"])
    ctx.statement([("i", n), ("c", 4)], ranked, ["i", "c"], by_score)
    kept = ctx.local("kept", (max(m, 1),), "int64")
    boxes = ctx.load(ranked, ["r0", "r1"])
    attrs = {"iou": float(iou_threshold), "size": m}
    ctx.statement(
        [("p", m), ("r0", n, True), ("r1", 4, True)],
        kept,
        ["p"],
        boxes,
        extern="nms",
        extern_attrs=attrs,
    )
    ctx.statement([("j", m)], out, ["j"], index_load(order, [Indirect(index_load(kept, ["j"]))]))


def _f(v: float) -> Const:
    return Const(float(v))


def _axis(start: Expr, size: Expr, bins: int, grid: int, p: str, i: str, n: int):
    """Sample positions along one axis of the bilinear interpolation: the low and high
    pixel, the weights of each, and whether the sample lies in ``[-1, n]``."""
    step = call("div", size, _f(bins))
    pos = call(
        "add",
        call("add", start, call("mul", Index(Affine.of(p)), step)),
        call("mul", call("add", Index(Affine.of(i)), _f(0.5)), call("div", step, _f(grid))),
    )
    inside = call("logical_and", call("ge", pos, _f(-1.0)), call("le", pos, _f(n)))
    at = call("maximum", pos, _f(0.0))
    low = call("floor", at)
    edge = call("ge", low, _f(n - 1))
    low = call("where", edge, _f(n - 1), low)
    high = call("where", edge, _f(n - 1), call("add", low, _f(1.0)))
    frac = call("sub", call("where", edge, _f(n - 1), at), low)
    return low, high, call("sub", _f(1.0), frac), frac, inside


@named_lowering("torchvision.roi_align.default")
def roi_align(
    ctx: LoweringContext,
    x: T,
    rois: T,
    spatial_scale: float,
    pooled_height: int,
    pooled_width: int,
    sampling_ratio: int,
    aligned: bool,
) -> None:
    """``out[k, c, ph, pw]``: the mean over a ``sampling_ratio`` x ``sampling_ratio`` grid of
    bilinear samples of ``x[rois[k, 0], c]`` in bin ``(ph, pw)`` of roi ``k`` (torchvision's
    kernel): four gathered pixels and their weights per sample, summed in a kernel-local
    accumulator, then divided by the sample count."""
    if sampling_ratio <= 0:
        ctx.fail(
            "with sampling_ratio <= 0 (a sample grid sized by each roi: data-dependent) is not "
            "supported; pass sampling_ratio > 0 (torchvision's detection models use 2)"
        )
    out = ctx.out()
    f = acc_dtype(x.dtype)
    grid, (height, width) = int(sampling_ratio), x.shape[2:]
    shift = _f(0.5 if aligned else 0.0)

    def coord(j: int) -> Expr:
        return call("sub", call("mul", ctx.load(rois, ["k", j], f), _f(spatial_scale)), shift)

    start_w, start_h = coord(1), coord(2)
    size_w, size_h = call("sub", coord(3), start_w), call("sub", coord(4), start_h)
    if not aligned:  # torchvision's legacy rois are at least one pixel
        size_w, size_h = call("maximum", size_w, _f(1.0)), call("maximum", size_h, _f(1.0))
    y_lo, y_hi, wy_lo, wy_hi, y_in = _axis(start_h, size_h, pooled_height, grid, "ph", "iy", height)
    x_lo, x_hi, wx_lo, wx_hi, x_in = _axis(start_w, size_w, pooled_width, grid, "pw", "ix", width)
    batch = Indirect(cast(ctx.load(rois, ["k", 0], f), f, "int64"))

    def pixel(y: Expr, xx: Expr) -> Expr:
        index = [batch, "c", Indirect(cast(y, f, "int64")), Indirect(cast(xx, f, "int64"))]
        return ctx.load(x, index, f)

    terms = [
        call("mul", call("mul", wy, wx), pixel(y, xx))
        for y, wy in ((y_lo, wy_lo), (y_hi, wy_hi))
        for xx, wx in ((x_lo, wx_lo), (x_hi, wx_hi))
    ]
    value = call("add", call("add", terms[0], terms[1]), call("add", terms[2], terms[3]))
    value = call("where", call("logical_and", y_in, x_in), value, _f(0.0))
    k, c = rois.shape[0], x.shape[1]
    parallel = [("k", k), ("c", c), ("ph", pooled_height), ("pw", pooled_width)]
    names = ["k", "c", "ph", "pw"]
    acc = ctx.local("acc", out.shape, f)
    dims = [*parallel, ("iy", grid, True), ("ix", grid, True)]
    ctx.statement(dims, acc, names, value, reduce="sum", dtype=f)
    mean = call("mul", ctx.load(acc, names), _f(1.0 / (grid * grid)))
    ctx.statement(parallel, out, names, cast(mean, f, out.dtype), dtype=f)
