"""torchvision's detection operators, registered by name (torchvision defines them when it is
imported): ``torchvision::nms``. ONE kernel each.

``nms(dets (N, 4), scores (N,), iou)`` keeps the boxes no higher-scoring kept box overlaps by
more than ``iou``, in decreasing score order: the boxes sorted by score (an extern sort of the
scores into a kernel-local order), gathered in that order (kernel-local), suppressed (the extern
``nms`` routine over the sorted boxes, giving kept positions) and mapped back to box indices.
It reads the boxes and scores once and writes the ``m`` kept indices (``m`` is the traced size:
1 at least when there is a box, or observed).
"""

from __future__ import annotations

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.indexing import index_load
from solar.frontend.torch.registry import named_lowering
from solar.ir.scalar import Indirect


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
