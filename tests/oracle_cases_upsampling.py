"""Oracle cases for the upsampling operators of real models: upsampling in every mode
(forward and backward), registered into :data:`oracle_cases_torch.CASES` (that module imports
this one at its end).

Upsampling is table-driven: one builder per (operator, spatial dims, align_corners?) draws
input sizes, output sizes (smaller, equal and larger: downsampling, identity, upsampling) and
the scale factors the caller may pass (None, or a factor that need not match the sizes, as
``recompute_scale_factor=False`` allows).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from oracle_cases_torch import Draw, case, rand

from solar.frontend.torch.ops.upsample import BACKWARD, FORWARD, VEC

aten = torch.ops.aten


def _scale(draw: Draw, size: int, out: int) -> float | None:
    return draw(st.sampled_from([None, out / size, 2.0, 1.5, 0.5]))


def _upsample_args(draw: Draw, nsp: int, has_align: bool):
    sizes = [draw(st.integers(1, 5)) for _ in range(nsp)]
    outs = [draw(st.integers(1, 2 * s + 2)) for s in sizes]
    scales = [_scale(draw, s, o) for s, o in zip(sizes, outs, strict=True)]
    align = [draw(st.booleans())] if has_align else []
    return sizes, outs, align, scales


for _op, (_mode, _nsp, _align) in FORWARD.items():

    def _forward(draw, op=_op, nsp=_nsp, has_align=_align):
        sizes, outs, align, scales = _upsample_args(draw, nsp, has_align)
        lead = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
        return (lambda x: op(x, outs, *align, *scales)), (rand((*lead, *sizes)),)

    case(_op, examples=6)(_forward)


for _op, (_mode, _nsp, _align) in BACKWARD.items():

    def _backward(draw, op=_op, nsp=_nsp, has_align=_align):
        sizes, outs, align, scales = _upsample_args(draw, nsp, has_align)
        lead = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
        return (
            (lambda g: op(g, outs, [*lead, *sizes], *align, *scales)),
            (rand((*lead, *outs)),),
        )

    case(_op, examples=6)(_backward)


# -------------------------------------------------------------------- im2col / col2im


def _fold_params(draw: Draw):
    k = [draw(st.integers(1, 3)) for _ in range(2)]
    d = [draw(st.integers(1, 2)) for _ in range(2)]
    p = [draw(st.integers(0, 1)) for _ in range(2)]
    s = [draw(st.integers(1, 2)) for _ in range(2)]
    size = [draw(st.integers(max(1, d[i] * (k[i] - 1) + 1 - 2 * p[i]), 6)) for i in range(2)]
    return size, k, d, p, s


@case(aten.im2col.default, examples=6)
def _im2col(draw):
    size, k, d, p, s = _fold_params(draw)
    lead = (2, 3) if draw(st.booleans()) else (3,)
    return (lambda x: aten.im2col(x, k, d, p, s)), (rand((*lead, *size)),)


@case(aten.col2im.default, examples=6)
def _col2im(draw):
    size, k, d, p, s = _fold_params(draw)
    blocks = [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    lead = (2,) if draw(st.booleans()) else ()
    cols = rand((*lead, 3 * k[0] * k[1], blocks[0] * blocks[1]))
    return (lambda c: aten.col2im(c, size, k, d, p, s)), (cols,)


# ------------------------------------------------------------ creation and elementwise


@case(aten.linspace.default)
def _linspace(draw):
    steps = draw(st.integers(1, 9))
    lo, hi = draw(st.sampled_from([(0.0, 1.0), (-1.3, 2.7), (5.0, -2.0)]))
    return (lambda x: aten.linspace(lo, hi, steps) + x), (rand((steps,)),)


@case(aten.logspace.default)
def _logspace(draw):
    steps = draw(st.integers(1, 9))
    base = draw(st.sampled_from([10.0, 2.0, 3.5]))
    return (lambda x: aten.logspace(-1.0, 1.5, steps, base) + x), (rand((steps,)),)


@case(aten.eye.default)
def _eye(draw):
    n = draw(st.integers(1, 5))
    return (lambda x: aten.eye(n) + x), (rand((n, n)),)


@case(aten.eye.m)
def _eye_m(draw):
    n, m = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    return (lambda x: aten.eye(n, m) + x), (rand((n, m)),)


@case(aten.erfinv.default)
def _erfinv(draw):
    shp = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    return (lambda x: aten.erfinv(x * 1.6 - 0.9)), (rand(shp),)


@case(aten.nan_to_num.default)
def _nan_to_num(draw):
    shp = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    args = draw(st.sampled_from([(), (1.0,), (0.0, 5.0, -5.0)]))
    x = rand(shp)
    x.view(-1)[0] = float("nan")
    return (lambda x: aten.nan_to_num(x, *args)), (x,)


@case(aten.native_dropout_backward.default)
def _dropout_backward(draw):
    shp = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    p = draw(st.sampled_from([0.1, 0.5]))
    return (lambda g, m: aten.native_dropout_backward(g, m, 1 / (1 - p))), (
        rand(shp),
        rand(shp, torch.bool),
    )


for _name in ("asinh", "acosh", "atanh", "log10"):
    _uop = getattr(aten, _name).default

    @case(_uop)
    def _unary(draw, op=_uop, name=_name):
        shp = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
        shift = {"acosh": 1.0, "atanh": -0.55}.get(name, 0.0)
        return (lambda x: op(x + shift)), (rand(shp),)


@case(aten.logical_xor.default)
def _logical_xor(draw):
    shp = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    return (lambda a, b: aten.logical_xor(a, b)), (rand(shp, torch.bool), rand(shp))


for _vec, _default in VEC.items():

    @case(_vec, pre_dispatch=True)  # CompositeImplicit: a dispatch mode decomposes it
    def _upsample_vec(draw, op=_vec, default=_default):
        _mode, nsp, has_align = FORWARD[default]
        sizes, outs, align, _ = _upsample_args(draw, nsp, has_align)
        use_size = draw(st.booleans())
        factors = None  # a factor whose output is empty is refused by PyTorch: not drawn
        if not use_size:
            factors = [
                draw(st.sampled_from([f for f in (0.5, 1.5, 2.0) if s * f >= 1])) for s in sizes
            ]
        return (lambda x: op(x, outs if use_size else None, *align, factors)), (
            rand((1, 2, *sizes)),
        )


@case(torch.ops.solar.sdpa_backward.default, examples=6)
def _sdpa_backward_dropout(draw):
    """Training-mode attention's backward: the keep mask regenerated in the kernel."""
    b, h, lq, lk, e, ev = (draw(st.integers(1, 3)) for _ in range(6))
    causal = draw(st.booleans())
    p = draw(st.sampled_from([0.1, 0.5]))
    q, k, v = rand((b, h, lq, e)), rand((b, h, lk, e)), rand((b, h, lk, ev))
    g, o = rand((b, h, lq, ev)), rand((b, h, lq, ev))

    def fn(g, q, k, v, o):
        return torch.ops.solar.sdpa_backward.default(g, q, k, v, o, None, p, causal, None, False)

    return fn, (g, q, k, v, o)


# ------------------------------------------------------------------------ grid sampling


for _op, _nsp in ((aten.grid_sampler_2d.default, 2), (aten.grid_sampler_3d.default, 3)):

    @case(_op, examples=8)
    def _grid_sampler(draw, op=_op, nsp=_nsp):
        sizes = [draw(st.integers(1, 4)) for _ in range(nsp)]
        outs = [draw(st.integers(1, 3)) for _ in range(nsp)]
        mode, pad, align = draw(st.integers(0, 1)), draw(st.integers(0, 2)), draw(st.booleans())
        grid = rand((2, *outs, nsp)) * 2.6 - 1.4  # some points outside [-1, 1]
        return (lambda x, g: op(x, g, mode, pad, align)), (rand((2, 2, *sizes)), grid)


@case(aten.affine_grid_generator.default)
def _affine_grid(draw):
    nsp = draw(st.integers(2, 3))
    size = [2, 3, *(draw(st.integers(1, 4)) for _ in range(nsp))]
    align = draw(st.booleans())
    theta = rand((2, nsp, nsp + 1))
    return (lambda t: aten.affine_grid_generator(t, size, align)), (theta,)


@case(aten.native_group_norm_backward.default, examples=8)
def _group_norm_backward(draw):
    n, groups, per = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    c = groups * per
    spatial = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2))))
    shp = (n, c, *spatial)
    hxw = 1
    for s in spatial:
        hxw *= s
    affine = draw(st.booleans())
    mask = [draw(st.booleans()), affine and draw(st.booleans()), affine and draw(st.booleans())]
    x, w = rand(shp), rand((c,))
    _, mean, rstd = aten.native_group_norm(x, w if affine else None, None, n, c, hxw, groups, 1e-5)

    def fn(dy, x, mean, rstd, w):
        weight = w if affine else None
        return aten.native_group_norm_backward(dy, x, mean, rstd, weight, n, c, hxw, groups, mask)

    return fn, (rand(shp), x, mean, rstd, w)


@case(aten._cdist_forward.default, examples=8)
def _cdist(draw):
    p = draw(st.sampled_from([0.0, 1.0, 2.0, 3.0, float("inf")]))
    m = draw(st.integers(1, 3))
    lead = draw(st.sampled_from([((), ()), ((2,), (2,)), ((2, 1), (3,))]))
    a = rand((*lead[0], draw(st.integers(1, 3)), m))
    b = rand((*lead[1], draw(st.integers(1, 3)), m))
    return (lambda a, b: aten._cdist_forward(a, b, p, None)), (a, b)


@case(aten.cudnn_grid_sampler.default, examples=4)
def _cudnn_grid_sampler(draw):
    """CUDA's 4-D bilinear, zero-padded, align_corners sampler (cuDNN)."""
    h, w = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    grid = rand((2, draw(st.integers(1, 3)), draw(st.integers(1, 3)), 2)) * 2.6 - 1.4
    return aten.cudnn_grid_sampler, (rand((2, 2, h, w)), grid)


import oracle_cases_backward  # noqa: E402,F401  (backward operators, slices, searching)
import oracle_cases_pdist_masked_unique  # noqa: E402,F401  (pdist, masked_scatter, unique_dim, ...)
