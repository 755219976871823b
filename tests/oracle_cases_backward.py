"""Oracle cases for the backward operators of real models' training steps and the other
operators lowered with them (slices, activations, pooling, searching),
registered into :data:`oracle_cases_torch.CASES` (``oracle_cases_upsampling`` imports this module).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from oracle_cases_torch import Draw, case, rand

aten = torch.ops.aten


def _sliced(draw: Draw):
    """A shape, a dim of it, and a slice (start, end, step) of that dim as Python writes it."""
    shp = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 3)))]
    d = draw(st.integers(0, len(shp) - 1))
    shp[d] = draw(st.integers(1, 8))
    start = draw(st.sampled_from([None, 0, 1, 2, -3]))
    end = draw(st.sampled_from([None, 3, -1, 2**62]))
    step = draw(st.integers(1, 3))
    length = len(range(shp[d])[slice(start, end, step)])
    return shp, d, start, end, step, length


@case(aten.slice_backward.default, examples=8)
def _slice_backward(draw):
    shp, d, start, end, step, length = _sliced(draw)
    g = shp[:d] + [length] + shp[d + 1 :]
    s = 0 if start is None else start
    e = 2**62 if end is None else end
    return (lambda g: aten.slice_backward(g, shp, d, s, e, step)), (rand(tuple(g)),)


@case(aten.slice_scatter.default, examples=8)
def _slice_scatter(draw):
    shp, d, start, end, step, length = _sliced(draw)
    src = shp[:d] + [length] + shp[d + 1 :]
    return (lambda x, s: aten.slice_scatter(x, s, d, start, end, step)), (
        rand(tuple(shp)),
        rand(tuple(src)),
    )


def _selected(draw: Draw):
    shp = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 3)))]
    d = draw(st.integers(0, len(shp) - 1))
    index = draw(st.integers(-shp[d], shp[d] - 1))
    return shp, d, index, shp[:d] + shp[d + 1 :]


@case(aten.select_backward.default)
def _select_backward(draw):
    shp, d, index, g = _selected(draw)
    return (lambda g: aten.select_backward(g, shp, d, index)), (rand(tuple(g)),)


@case(aten.select_scatter.default)
def _select_scatter(draw):
    shp, d, index, src = _selected(draw)
    return (lambda x, s: aten.select_scatter(x, s, d, index)), (rand(tuple(shp)), rand(tuple(src)))


# ------------------------------------------------------------- activation and loss backward


def _grad_input(draw: Draw):
    """A gradient and an input of one shape (values spread over every branch: |x| up to 6)."""
    shp = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    return rand(shp), rand(shp) * 12 - 6


ACTIVATIONS = {
    aten.leaky_relu_backward.default: lambda g, x: aten.leaky_relu_backward(g, x, 0.02, False),
    aten.hardtanh_backward.default: lambda g, x: aten.hardtanh_backward(g, x, -1.0, 6.0),
    aten.mish_backward.default: aten.mish_backward,
    aten.softplus_backward.default: lambda g, x: aten.softplus_backward(g, x, 2.0, 3.0),
    aten.hardswish_backward.default: aten.hardswish_backward,
    aten.hardsigmoid_backward.default: aten.hardsigmoid_backward,
    aten.log_sigmoid_backward.default: lambda g, x: aten.log_sigmoid_backward(
        g, x, aten.log_sigmoid_forward(x)[1]
    ),
    aten.softshrink_backward.default: lambda g, x: aten.softshrink_backward(g, x, 0.5),
    aten.hardshrink_backward.default: lambda g, x: aten.hardshrink_backward(g, x, 0.5),
    aten.sgn.default: lambda g, x: aten.sgn(x) + g,
}

for _op, _fn in ACTIVATIONS.items():

    @case(_op)
    def _activation(draw, fn=_fn):
        return fn, _grad_input(draw)


@case(aten.elu_backward.default)
def _elu_backward(draw):
    alpha, scale, input_scale = draw(st.sampled_from([(1.0, 1.0, 1.0), (1.3, 1.05, 0.7)]))
    is_result = draw(st.booleans())

    def fn(g, x):
        y = aten.elu(x, alpha, scale, input_scale) if is_result else x
        return aten.elu_backward(g, alpha, scale, input_scale, is_result, y)

    return fn, _grad_input(draw)


@case(aten.binary_cross_entropy_backward.default)
def _bce_backward(draw):
    reduction = draw(st.integers(0, 2))
    weighted = draw(st.booleans())
    g, x = _grad_input(draw)
    g = g if reduction == 0 else g.sum()

    def fn(g, x, w):
        p = x.sigmoid()
        return aten.binary_cross_entropy_backward(
            g, p, w.cos().abs(), w if weighted else None, reduction
        )

    return fn, (g, x, rand(tuple(x.shape)))


for _op in (aten.huber_loss_backward.default, aten.smooth_l1_loss_backward.default):

    @case(_op)
    def _regression_backward(draw, op=_op):
        reduction = draw(st.integers(0, 2))
        param = draw(st.sampled_from([0.5, 1.0, 2.0]))
        g, x = _grad_input(draw)
        g = g if reduction == 0 else g.sum()
        return (lambda g, x, t: op(g, x, t, reduction, param)), (g, x, rand(tuple(x.shape)) * 2)


# ------------------------------------------------------------------------- pooling backward


for _op, _nsp in ((aten.avg_pool2d_backward.default, 2), (aten.avg_pool3d_backward.default, 3)):

    @case(_op, examples=8)
    def _avg_pool_backward(draw, op=_op, nsp=_nsp):
        k = [draw(st.integers(1, 3)) for _ in range(nsp)]
        s = [draw(st.integers(1, 3)) for _ in range(nsp)]
        p = [draw(st.integers(0, kk // 2)) for kk in k]
        size = [draw(st.integers(kk, 6)) for kk in k]
        ceil, include = draw(st.booleans()), draw(st.booleans())
        override = draw(st.sampled_from([None, 5]))
        fwd = aten.avg_pool2d if nsp == 2 else aten.avg_pool3d
        x = rand((2, 2, *size))
        g = rand(tuple(fwd(x, k, s, p, ceil, include, override).shape))
        return (lambda g, x: op(g, x, k, s, p, ceil, include, override)), (g, x)


for _op, _nsp in (
    (aten._adaptive_avg_pool2d_backward.default, 2),
    (aten._adaptive_avg_pool3d_backward.default, 3),
):

    @case(_op, examples=8)
    def _adaptive_avg_pool_backward(draw, op=_op, nsp=_nsp):
        size = [draw(st.integers(1, 7 if nsp == 2 else 4)) for _ in range(nsp)]
        # at most 5 outputs a dim: at most 25 (2-D) window classes, within the lowering's 64
        # (CI's derandomized draw once asked for 7 -> 11, which the lowering refuses)
        outs = [draw(st.integers(1, min(2 * n, 5) if nsp == 2 else n + 1)) for n in size]
        return op, (rand((2, 2, *outs)), rand((2, 2, *size)))


# ------------------------------------------------------------------------------- searching


def _sorted_and_values(draw: Draw, batched: bool):
    n = draw(st.integers(0, 9))
    lead = (draw(st.integers(1, 3)),)
    seq = torch.randint(-5, 6, (*lead, n) if batched else (n,)).float().sort(-1)[0]
    return seq, torch.randint(-7, 8, (*lead, draw(st.integers(1, 4)))).float()


@case(aten.searchsorted.Tensor, examples=8)
def _searchsorted(draw):
    seq, x = _sorted_and_values(draw, draw(st.booleans()))
    right, out_int32 = draw(st.booleans()), draw(st.booleans())
    return (lambda s, x: torch.searchsorted(s, x, right=right, out_int32=out_int32)), (seq, x)


@case(aten.searchsorted.Scalar)
def _searchsorted_scalar(draw):
    seq, _ = _sorted_and_values(draw, False)
    v = draw(st.sampled_from([-6.0, 0.0, 0.5, 6.0]))
    side = draw(st.sampled_from(["left", "right"]))
    return (lambda s: torch.searchsorted(s, v, side=side)), (seq,)


@case(aten.bucketize.Tensor, examples=8)
def _bucketize(draw):
    seq, x = _sorted_and_values(draw, False)
    right = draw(st.booleans())
    return (lambda x, b: torch.bucketize(x, b, right=right)), (x, seq)


@case(aten.bucketize.Scalar)
def _bucketize_scalar(draw):
    seq, _ = _sorted_and_values(draw, False)
    v = draw(st.sampled_from([-6.0, 0.0, 0.5, 6.0]))
    return (lambda b: torch.bucketize(v, b) + 0), (seq,)


# ------------------------------------------------------------------------------ cdist backward


@case(aten._cdist_backward.default, examples=8)
def _cdist_backward(draw):
    p = draw(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")]))
    lead = draw(st.sampled_from([(), (2,)]))
    m = draw(st.integers(1, 3))
    x1 = rand((*lead, draw(st.integers(1, 3)), m))
    x2 = rand((*lead, draw(st.integers(1, 3)), m))
    x2[..., 0, :] = x1[..., 0, :]  # a zero distance
    dist = aten._cdist_forward(x1, x2, p, None)
    return (lambda g, a, b, d: aten._cdist_backward(g, a, b, p, d)), (
        rand(tuple(dist.shape)),
        x1,
        x2,
        dist,
    )


# ------------------------------------------------------------------- grid sampling backward


@case(aten.grid_sampler_2d_backward.default, examples=8)
def _grid_sampler_2d_backward(draw):
    h, w = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    oh, ow = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    mode, pad, align = draw(st.integers(0, 1)), draw(st.integers(0, 2)), draw(st.booleans())
    mask = [draw(st.booleans()), True]
    grid = rand((2, oh, ow, 2)) * 2.6 - 1.4  # some points outside [-1, 1]

    def fn(g, x, grid):
        return aten.grid_sampler_2d_backward(g, x, grid, mode, pad, align, mask)

    return fn, (rand((2, 2, oh, ow)), rand((2, 2, h, w)), grid)


# ------------------------------------------------------------- repeat_interleave with a tensor


@case(aten.repeat_interleave.Tensor, observe=True)
def _repeat_interleave(draw):
    n = draw(st.integers(1, 5))
    repeats = torch.tensor([draw(st.integers(0, 3)) for _ in range(n)])
    return (lambda x, r: torch.repeat_interleave(x, r, dim=0)), (rand((n, 2)), repeats)


# ------------------------------------------------------------------------- padding backward


for _nsp in (1, 2, 3):
    for _mode, _op in (
        ("reflect", getattr(aten, f"reflection_pad{_nsp}d_backward").default),
        ("replicate", getattr(aten, f"replication_pad{_nsp}d_backward").default),
    ):

        @case(_op)
        def _pad_backward(draw, op=_op, nsp=_nsp, mode=_mode):
            size = [draw(st.integers(2, 4)) for _ in range(nsp)]
            lo = -1 if mode == "replicate" else 0  # reflection refuses negative pads
            hi = min(size) - 1  # reflection needs pads below the size
            pad = [draw(st.integers(lo if k % 2 else 0, hi)) for k in range(2 * nsp)]
            x = rand((2, *size))
            fwd = getattr(aten, f"{'reflection' if mode == 'reflect' else 'replication'}_pad{nsp}d")
            return (lambda g, x: op(g, x, pad)), (rand(tuple(fwd(x, pad).shape)), x)


# ------------------------------------------------- max-pool, prelu, rrelu and views backward


for _op, _fwd, _nsp in (
    (aten.adaptive_max_pool2d_backward.default, aten.adaptive_max_pool2d, 2),
    (aten.adaptive_max_pool3d_backward.default, aten.adaptive_max_pool3d, 3),
):

    @case(_op)
    def _adaptive_max_pool_backward(draw, op=_op, fwd=_fwd, nsp=_nsp):
        size = [draw(st.integers(1, 4)) for _ in range(nsp)]
        outs = [draw(st.integers(1, n)) for n in size]
        x = rand((2, 2, *size))
        values, indices = fwd(x, outs)
        return (lambda g, x, i: op(g, x, i)), (rand(tuple(values.shape)), x, indices)


@case(aten._prelu_kernel_backward.default)
def _prelu_backward(draw):
    g, x = _grad_input(draw)
    w = rand((draw(st.sampled_from([1, x.shape[1]])),))
    return aten._prelu_kernel_backward, (g, x, w)


@case(aten.rrelu_with_noise_backward.default)
def _rrelu_backward(draw):
    g, x = _grad_input(draw)
    lower, upper = draw(st.sampled_from([(0.1, 0.3), (0.2, 0.2)]))
    training = draw(st.booleans())

    def fn(g, x, n):
        return aten.rrelu_with_noise_backward(g, x, n, lower, upper, training, False)

    return fn, (g, x, rand(tuple(x.shape)))


@case(aten.diagonal_backward.default)
def _diagonal_backward(draw):
    shp = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(2, 3)))]
    d1, d2 = draw(st.permutations(range(len(shp))))[:2]
    offset = draw(st.integers(-shp[d1], shp[d2]))
    g = torch.diagonal(torch.empty(shp), offset, d1, d2).shape
    return (lambda g: aten.diagonal_backward(g, shp, offset, d1, d2)), (rand(tuple(g)),)


@case(aten.unfold_backward.default)
def _unfold_backward(draw):
    shp = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 3)))]
    d = draw(st.integers(0, len(shp) - 1))
    shp[d] = draw(st.integers(1, 8))
    size, step = draw(st.integers(1, shp[d])), draw(st.integers(1, 3))
    g = torch.empty(shp).unfold(d, size, step).shape
    return (lambda g: aten.unfold_backward(g, shp, d, size, step)), (rand(tuple(g)),)


# ------------------------------------------------------------------------------- any / all


for _name in ("any", "all"):
    for _overload in ("default", "dim", "dims"):
        _op = getattr(getattr(aten, _name), _overload)

        @case(_op)
        def _logical(draw, op=_op, overload=_overload):
            shp = tuple(draw(st.integers(0 if draw(st.booleans()) else 1, 3)) for _ in range(2))
            x = (torch.rand(shp) > draw(st.sampled_from([0.0, 0.7, 1.0]))).float()
            keep = draw(st.booleans())
            if overload == "default":
                return op, (x,)
            if overload == "dim":
                d = draw(st.integers(-2, 1))
                return (lambda x: op(x, d, keep)), (x,)
            dims = draw(st.sampled_from([[0], [1], [0, 1], []]))
            return (lambda x: op(x, dims, keep)), (x,)


for _op in (aten._is_all_true.default, aten._is_any_true.default):

    @case(_op)
    def _is_true(draw, op=_op):
        """A bool tensor's all/any as a 0-d tensor (torch.distributions' argument checks)."""
        shp = tuple(draw(st.integers(0 if draw(st.booleans()) else 1, 3)) for _ in range(2))
        return op, (torch.rand(shp) > draw(st.sampled_from([0.0, 0.7, 1.0])),)
