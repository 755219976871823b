"""Oracle cases for the operators with data-dependent sizes (``nonzero``, boolean masks,
``masked_select``, ``unique``, ``bincount``, ``histc``, ``.item()``) and the grouped GEMM,
registered into :data:`oracle_cases_torch.CASES` (that module imports this one at its end).
Each is traced with ``observe=True``, so the sizes are the drawn inputs' own and the executed
IR must reproduce them; ``_grouped_mm`` draws its offsets (empty groups included).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from oracle_cases_torch import Draw, case, rand, shape, viewed

aten = torch.ops.aten


def observed(op: object, examples: int = 5):
    return case(op, examples=examples, observe=True)


def _mask(draw: Draw, shp: tuple[int, ...]) -> torch.Tensor:
    """A boolean mask, now and then all False or all True."""
    kind = draw(st.sampled_from(["random", "none", "all"]))
    if kind == "none":
        return torch.zeros(shp, dtype=torch.bool)
    if kind == "all":
        return torch.ones(shp, dtype=torch.bool)
    return rand(shp, torch.bool)


@observed(aten.nonzero.default)
def _nonzero(draw):
    shp = shape(draw, 0, 3)
    store, view = viewed(draw, shp) if shp else ((), lambda x: x)
    dtype = draw(st.sampled_from([torch.float32, torch.int64, torch.bool]))
    return (lambda x: aten.nonzero.default(view(x))), (rand(store, dtype) * (rand(store) > 0.5),)


@observed(aten.index.Tensor)
def _mask_index(draw):
    shp = shape(draw, 2, 3)
    lead = draw(st.integers(0, len(shp) - 1))
    mask = _mask(draw, shp[lead : lead + draw(st.integers(1, len(shp) - lead))])
    index = [slice(None)] * lead + [mask]
    return (lambda x, m: x[(*index[:-1], m)]), (rand(shp), mask)


@observed(aten.index_put.default)
def _mask_put(draw):
    """``x[..., mask] (+)= v``: ``v`` one value, or one per selected element."""
    shp = shape(draw, 2, 3)
    lead = draw(st.integers(0, len(shp) - 1))
    mask = _mask(draw, shp[lead : lead + draw(st.integers(1, len(shp) - lead))])
    acc = draw(st.booleans())
    rows = (*shp[:lead], int(mask.sum()), *shp[lead + mask.ndim :])
    v = rand(rows if draw(st.booleans()) else ())
    index = [None] * lead

    def fn(x, m, v):
        return aten.index_put.default(x, [*index, m], v, acc)

    return fn, (rand(shp), mask, v)


@observed(aten.masked_select.default)
def _masked_select(draw):
    shp = shape(draw)
    store, view = viewed(draw, shp)
    mask = _mask(draw, shp[draw(st.integers(0, len(shp) - 1)) :])
    return (lambda x, m: aten.masked_select.default(view(x), m)), (rand(store), mask)


@observed(aten._unique2.default)
def _unique2(draw):
    shp = shape(draw)
    inverse, counts, ordered = draw(st.booleans()), draw(st.booleans()), draw(st.booleans())
    x = torch.randint(0, draw(st.integers(1, 6)), shp)

    def fn(x):
        return aten._unique2.default(x, ordered, inverse, counts)

    return fn, (x,)


@observed(aten._unique.default, examples=3)
def _unique(draw):
    x = torch.randint(0, 4, shape(draw)).float()
    return (lambda x: aten._unique.default(x, True, draw(st.booleans()))), (x,)


@observed(aten.unique_consecutive.default)
def _unique_consecutive(draw):
    x = torch.randint(0, 3, shape(draw, 1, 1, 8))
    inverse, counts = draw(st.booleans()), draw(st.booleans())
    return (lambda x: aten.unique_consecutive.default(x, inverse, counts)), (x,)


@observed(aten.bincount.default)
def _bincount(draw):
    n = draw(st.integers(1, 8))
    x = torch.randint(0, draw(st.integers(1, 6)), (n,))
    minlength = draw(st.integers(0, 7))
    if draw(st.booleans()):
        return (lambda x, w: aten.bincount.default(x, w, minlength)), (x, rand((n,)))
    return (lambda x: aten.bincount.default(x, None, minlength)), (x,)


@case(aten.histc.default)
def _histc(draw):
    shp = shape(draw)
    store, view = viewed(draw, shp)
    bins = draw(st.integers(1, 6))
    lo, hi = draw(st.sampled_from([(0.0, 0.0), (0.0, 1.0), (0.2, 0.7)]))
    return (lambda x: aten.histc.default(view(x), bins, lo, hi)), (rand(store),)


@observed(aten._local_scalar_dense.default, examples=2)
def _item(draw):
    def fn(x):
        n = int(aten._local_scalar_dense.default((x > 0.5).sum()))
        return x[:n] * 2

    return fn, (rand((draw(st.integers(1, 6)),)),)


@observed(aten._grouped_mm.default)
def _grouped_mm(draw):
    groups, n = draw(st.integers(1, 4)), 8 * draw(st.integers(1, 2))
    if draw(st.booleans()):  # batched: (G, M, K) @ (G, K, N)
        m = draw(st.integers(1, 3))
        return (lambda x, w: aten._grouped_mm.default(x, w)), (
            rand((groups, m, 8)).bfloat16(),
            rand((groups, 8, n)).bfloat16(),
        )
    counts = [draw(st.integers(0, 3)) for _ in range(groups)]
    offs = torch.tensor(counts, dtype=torch.int32).cumsum(0, dtype=torch.int32)
    rows = max(sum(counts), 1)
    if draw(st.booleans()):  # the weight gradient: (K, S) @ (S, N), K-major as autograd passes
        return (lambda x, g, o: aten._grouped_mm.default(x.t(), g, o)), (
            rand((rows, 8)).bfloat16(),
            rand((rows, n)).bfloat16(),
            offs,
        )
    return (lambda x, w, o: aten._grouped_mm.default(x, w, o)), (
        rand((rows, 8)).bfloat16(),
        rand((groups, 8, n)).bfloat16(),
        offs,
    )


@observed("torchvision.nms.default")
def _nms(draw):
    import torchvision

    n = draw(st.integers(1, 12))
    boxes = torch.rand(n, 4) * 10
    boxes[:, 2:] += boxes[:, :2] + 0.5
    iou = draw(st.sampled_from([0.1, 0.5, 0.9]))
    return (lambda b, s: torchvision.ops.nms(b, s, iou)), (boxes, torch.rand(n))


@case("torchvision.roi_align.default", examples=3)
def _roi_align(draw):
    import torchvision  # noqa: F401  (defines the operator)

    h, w, k = draw(st.integers(2, 6)), draw(st.integers(2, 6)), draw(st.integers(1, 3))
    x1, y1 = torch.rand(k) * (w - 1), torch.rand(k) * (h - 1)
    rois = torch.stack([torch.zeros(k), x1, y1, x1 + 1, y1 + 1], 1)
    aligned = draw(st.booleans())
    grid = draw(st.integers(1, 2))
    return (lambda x, r: torch.ops.torchvision.roi_align(x, r, 1.0, 2, 2, grid, aligned)), (
        rand((1, 2, h, w)),
        rois,
    )
