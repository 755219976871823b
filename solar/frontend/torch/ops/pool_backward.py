"""Backward of average pooling: ``avg_pool{2,3}d_backward`` and
``_adaptive_avg_pool{2,3}d_backward``. ONE kernel each, one divide and one add per (input
element, window covering it) pair, as CUDA's kernels do.

- ``avg_pool``: a gather, as CUDA runs it (each input element sums the shares of the windows
  covering it). As in a transposed convolution (:func:`..conv.tap_progression`), the input
  positions ``o = s·q + rho`` of one residue ``rho`` mod the stride are covered by the windows
  ``p = q + base − t`` (``t < count``)::

      gI[n, c, s·q + rho] = Σ_t g[n, c, q + base − t] / divisor(q + base − t)   where (p in bounds)

  with the forward's divisor (:func:`..pool.avg_divisor`); a residue no window reaches is
  written zero.
- ``_adaptive_avg_pool``: zeros, then every tap of every window class of the forward
  (:func:`..pool.window_classes`) adds its output's gradient over the window size into the
  input position it read (windows overlap where the input size is not a multiple of the
  output size; a statement's writes are kept distinct by cutting such a class's taps into
  runs of its window spacing). CUDA divides by the window's height and width separately:
  one divide more per pair than counted here.
"""

from __future__ import annotations

import itertools
from math import prod

import torch

from solar.frontend.lowering.window import range_guard
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conv import (
    OUT_NAMES,
    TAP_NAMES,
    Loops,
    _never,
    tap_progression,
)
from solar.frontend.torch.ops.conventions import acc_dtype, dims_of, nest
from solar.frontend.torch.ops.pool import (
    MAX_WINDOW_CLASSES,
    Window,
    WindowClass,
    avg_divisor,
    lead_loops,
    pool_params,
    window_classes,
)
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, call

aten = torch.ops.aten


def _zero(ctx: LoweringContext, out: T, loops: Loops, index) -> None:
    ctx.statement(loops.parallel, out, index, Const(0.0))


AVG_POOL_BACKWARD = {aten.avg_pool2d_backward.default: 2, aten.avg_pool3d_backward.default: 3}


@lowering(*AVG_POOL_BACKWARD)
def avg_pool_backward(
    ctx: LoweringContext,
    g: T,
    x: T,
    kernel_size,
    stride,
    padding,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None = None,
) -> None:
    nsp = AVG_POOL_BACKWARD[ctx.op]
    kernel, stride, padding, _ = pool_params(nsp, kernel_size, stride, padding)
    out, acc = ctx.out(), acc_dtype(x.dtype)
    sizes, pooled = x.shape[-nsp:], g.shape[-nsp:]
    for rhos in itertools.product(*(range(min(s, n)) for s, n in zip(stride, sizes))):
        progs = [
            tap_progression(rho, s, 1, pad, k)
            for rho, s, pad, k in zip(rhos, stride, padding, kernel, strict=True)
        ]
        loops = Loops()
        lead = lead_loops(loops, x, nsp)
        qs = [
            loops.add(n, -(-(size - rho) // s))
            for n, size, rho, s in zip(OUT_NAMES[nsp], sizes, rhos, stride, strict=True)
        ]
        in_index = [*lead, *(s * q + rho for q, s, rho in zip(qs, stride, rhos, strict=True))]
        if None in progs:  # no window covers these input positions
            _zero(ctx, out, loops, in_index)
            continue
        ts = [loops.add(n, pr[2], True) for n, pr in zip(TAP_NAMES[nsp], progs, strict=True)]
        ext = loops.extents()
        ps = [q + pr[3] - pr[4] * t for q, t, pr in zip(qs, ts, progs, strict=True)]
        guards = [gd for p, n in zip(ps, pooled, strict=True) for gd in range_guard(p, n, ext)]
        if any(_never(gd, ext) for gd in guards):
            _zero(ctx, out, loops, in_index)
            continue
        w = Window(loops, lead, [*lead, *ps], in_index[len(lead) :], guards)
        divisor = avg_divisor(w, x, g, kernel, stride, padding, count_include_pad, divisor_override)
        share = call("div", ctx.load(g, w.out_index, acc), divisor)
        ctx.statement(loops.dims, out, in_index, share, reduce="sum", guards=guards, dtype=acc)


ADAPTIVE_AVG_POOL_BACKWARD = {
    aten._adaptive_avg_pool2d_backward.default: 2,
    aten._adaptive_avg_pool3d_backward.default: 3,
}


@lowering(*ADAPTIVE_AVG_POOL_BACKWARD)
def adaptive_avg_pool_backward(ctx: LoweringContext, g: T, x: T) -> None:
    nsp = ADAPTIVE_AVG_POOL_BACKWARD[ctx.op]
    out, acc = ctx.out(), acc_dtype(x.dtype)
    d = dims_of(out.shape)
    ctx.statement(nest(d, out.shape), out, d, Const(0.0))
    per_dim = [
        [(wc, chunk) for wc in window_classes(n, int(o)) for chunk in _chunks(wc)]
        for n, o in zip(x.shape[-nsp:], g.shape[-nsp:], strict=True)
    ]
    if prod(len(c) for c in per_dim) > MAX_WINDOW_CLASSES:
        ctx.fail(
            f"to output size {tuple(g.shape[-nsp:])} needs more than {MAX_WINDOW_CLASSES} "
            "affine window classes (an input size divisible by the output size needs one)"
        )
    for combo in itertools.product(*per_dim):
        loops = Loops()
        lead = lead_loops(loops, x, nsp)
        js = [  # windows repeated in place (more outputs than inputs) sum over j
            loops.add(n, wc.count, wc.in_step == 0)
            for n, (wc, _) in zip(OUT_NAMES[nsp], combo, strict=True)
        ]
        rs = [loops.add(n, c[1]) for n, (_, c) in zip(TAP_NAMES[nsp], combo, strict=True)]
        pooled = [wc.first + wc.out_step * j for j, (wc, _) in zip(js, combo, strict=True)]
        spatial = [
            wc.start + wc.in_step * j + c[0] + r
            for j, r, (wc, c) in zip(js, rs, combo, strict=True)
        ]
        taps = Const(prod(wc.size for wc, _ in combo))
        share = call("div", ctx.load(g, [*lead, *pooled], acc), taps)
        ctx.statement(
            loops.dims, out, [*lead, *spatial], share, reduce="sum", accumulate=True, dtype=acc
        )


def _chunks(wc: WindowClass) -> list[tuple[int, int]]:
    """The taps of a window class cut into runs ``[first, first + length)`` along which the
    writes ``start + in_step·j + r`` of one statement are distinct (overlapping windows
    accumulate from separate statements)."""
    step = wc.in_step
    if wc.count == 1 or step == 0 or step >= wc.size:
        return [(0, wc.size)]
    return [(c, min(step, wc.size - c)) for c in range(0, wc.size, step)]
