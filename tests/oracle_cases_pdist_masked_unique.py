"""Oracle cases for ``torch.pdist`` (forward and backward), ``masked_scatter`` (and the
backward autograd launches for it), ``unique(dim=)`` and ``nn.EmbeddingBag``'s backward,
registered into :data:`oracle_cases_torch.CASES` (``oracle_cases_upsampling`` imports this
module)."""

from __future__ import annotations

import math

import torch
from hypothesis import strategies as st
from oracle_cases_dynamic import _mask
from oracle_cases_torch import broadcast_partner, case, rand, shape, viewed

aten = torch.ops.aten
PS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")]


def _rows(draw) -> torch.Tensor:
    """``(n, m)`` rows, now and then two equal (a zero distance)."""
    x = rand((draw(st.integers(1, 5)), draw(st.integers(1, 3))))
    if x.shape[0] > 2 and draw(st.booleans()):
        x[2] = x[0]
    return x


@case(aten._pdist_forward.default, examples=8)
def _pdist(draw):
    p = draw(st.sampled_from(PS))
    return (lambda x: aten._pdist_forward(x, p)), (_rows(draw),)


@case(aten._pdist_backward.default, examples=8)
def _pdist_backward(draw):
    p = draw(st.sampled_from(PS))
    x = _rows(draw)
    dist = aten._pdist_forward(x, p)
    fn = lambda g, x, d: aten._pdist_backward(g, x, p, d)  # noqa: E731
    return fn, (rand(tuple(dist.shape)), x, dist)


def _masked_shapes(draw) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """``x``'s and the mask's shapes (broadcasting) and their broadcast shape."""
    shp = shape(draw, 1, 3)
    x = broadcast_partner(draw, shp) if draw(st.booleans()) else shp
    m = broadcast_partner(draw, shp) if x == shp and draw(st.booleans()) else shp
    return x, m, tuple(torch.broadcast_shapes(x, m))


@case(aten.masked_scatter.default, examples=8)
def _masked_scatter(draw):
    xs, ms, out = _masked_shapes(draw)
    n = math.prod(out)
    src = rand((n + draw(st.integers(0, 2)),)) if draw(st.booleans()) else rand((n, 2))
    store, view = viewed(draw, tuple(src.shape))
    return (lambda x, m, s: aten.masked_scatter(x, m, view(s))), (
        rand(xs),
        _mask(draw, ms),
        rand(store),
    )


@case(aten.masked_scatter_backward.default, examples=8)
def _masked_scatter_backward(draw):
    _, ms, out = _masked_shapes(draw)
    sizes = draw(st.sampled_from([[math.prod(out)], [math.prod(out), 2], [2, math.prod(out) + 1]]))
    return (lambda g, m: aten.masked_scatter_backward(g, m, sizes)), (rand(out), _mask(draw, ms))


# ----------------------------------------------------------------------- embedding bag backward


def _bags(draw):
    """Regular bags: a table ``(v, d)``, ``bags`` bags of ``n`` ids each."""
    v, d = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    bags, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return v, d, bags, n, torch.randint(0, v, (bags * n,))


def _offsets(draw, bags: int, n: int) -> torch.Tensor:
    """Explicit offsets: ``bags`` starts in ``[0, n]``, the first 0, sorted (empty bags
    likely)."""
    rest = sorted(draw(st.integers(0, n)) for _ in range(bags - 1))
    return torch.tensor([0, *rest], dtype=torch.int64)


@case(aten._embedding_bag.default, examples=8)
def _embedding_bag_offsets(draw):
    """Bags of data-dependent sizes (a 1-D input with offsets), sum, mean or max (then the
    arg-max ids too)."""
    v, d, bags, n, ids = _bags(draw)
    mode = draw(st.integers(0, 2))
    psw = rand((bags * n,)) if mode == 0 and draw(st.booleans()) else None
    offs = _offsets(draw, bags, bags * n)

    def fn(w, i, o, p):
        out = aten._embedding_bag(w, i, o, False, mode, False, p)
        return (out[0], out[3]) if mode == 2 else out[0]

    return fn, (rand((v, d)), ids, offs, psw)


@case(aten._embedding_bag_backward.default, examples=8)
def _embedding_bag_backward_offsets(draw):
    v, d, bags, n, ids = _bags(draw)
    mode = draw(st.integers(0, 2))
    psw = rand((bags * n,)) if mode == 0 and draw(st.booleans()) else None
    offs = _offsets(draw, bags, bags * n)
    _, o2b, size, maxi = aten._embedding_bag(rand((v, d)), ids, offs, False, mode, False, psw)

    def fn(g, i, o, o2b, size, maxi, p):
        return aten._embedding_bag_backward(g, i, o, o2b, size, maxi, v, False, mode, False, p)

    return fn, (rand((bags, d)), ids, offs, o2b, size, maxi, psw)


@case(aten._embedding_bag_per_sample_weights_backward.default, examples=6)
def _embedding_bag_psw_backward_offsets(draw):
    v, d, bags, n, ids = _bags(draw)
    offs = _offsets(draw, bags, bags * n)
    o2b = torch.zeros(bags * n, dtype=torch.int64)

    def fn(g, w, i, o, o2b):
        return aten._embedding_bag_per_sample_weights_backward(g, w, i, o, o2b, 0)

    return fn, (rand((bags, d)), rand((v, d)), ids, offs, o2b)


@case(aten._embedding_bag_backward.default, examples=8)
def _embedding_bag_backward(draw):
    v, d, bags, n, ids = _bags(draw)
    mode = draw(st.integers(0, 2))
    psw = rand((bags * n,)) if mode == 0 and draw(st.booleans()) else None
    w = rand((v, d))
    offs = torch.arange(0, bags * n, n)
    _, o2b, size, maxi = aten._embedding_bag(w, ids, offs, False, mode, False, psw)

    def fn(g, i, o2b, size, maxi, p):
        offsets = torch.arange(0, bags * n, n)
        return aten._embedding_bag_backward(
            g, i, offsets, o2b, size, maxi, v, False, mode, False, p
        )

    return fn, (rand((bags, d)), ids, o2b, size, maxi, psw)


@case(aten._embedding_bag_per_sample_weights_backward.default, examples=6)
def _embedding_bag_psw_backward(draw):
    v, d, bags, n, ids = _bags(draw)
    o2b = torch.arange(bags * n) // n

    def fn(g, w, i, o2b):
        offsets = torch.arange(0, bags * n, n)
        return aten._embedding_bag_per_sample_weights_backward(g, w, i, offsets, o2b, 0)

    return fn, (rand((bags, d)), rand((v, d)), ids, o2b)


# ------------------------------------------------------------------------ core out= variants


@case(aten.atan2.out)
def _atan2_out(draw):
    """``out=`` a fresh tensor or the first operand itself (core ATen lists this overload)."""
    shp = shape(draw)
    other = broadcast_partner(draw, shp)
    if draw(st.booleans()):
        return (lambda x, y: aten.atan2.out(x, y, out=x)), (rand(shp), rand(other))
    return (lambda x, y, z: aten.atan2.out(x, y, out=z)), (rand(shp), rand(other), rand(shp))


# -------------------------------------------------------------------------------- unique_dim


@case(aten.unique_dim.default, examples=8, observe=True)
def _unique_dim(draw):
    """Slices of few distinct values (repeats likely), along any dim; observed sizes."""
    shp = shape(draw, 1, 3)
    d = draw(st.integers(-len(shp), len(shp) - 1))
    x = torch.randint(0, draw(st.integers(1, 3)), shp)
    if draw(st.booleans()):
        x = x.float()
    inverse, counts = draw(st.booleans()), draw(st.booleans())

    def fn(x):
        values, inv, cnt = aten.unique_dim(x, d, True, inverse, counts)
        return (values, *([inv] if inverse else []), *([cnt] if counts else []))

    return fn, (x,)
