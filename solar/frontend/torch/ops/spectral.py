"""FFTs (``torch.fft.*``): ``aten._fft_r2c``, ``_fft_c2r``, ``_fft_c2c``, one kernel each as cuFFT
runs them (an extern statement, :mod:`solar.frontend.routines`; counts in
:mod:`solar.ir.extern_spectral`). ``normalization``: 0 none, 1 by 1/sqrt(n), 2 by 1/n, with n
the product of the transformed (signal) sizes."""

from __future__ import annotations

from math import prod, sqrt

import torch

from solar.frontend.routines import fft
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.registry import lowering

aten = torch.ops.aten


def _scale(normalization: int, n: int) -> float:
    return {0: 1.0, 1: 1.0 / sqrt(n), 2: 1.0 / n}[int(normalization)]


@lowering(aten._fft_r2c.default)
def fft_r2c(ctx: LoweringContext, x: T, dim, normalization: int, onesided: bool) -> None:
    n = prod(x.shape[d] for d in dim)
    fft(ctx, x, ctx.out(), dim, "r2c", scale=_scale(normalization, n))


@lowering(aten._fft_c2r.default)
def fft_c2r(ctx: LoweringContext, x: T, dim, normalization: int, last_dim_size: int) -> None:
    out = ctx.out()
    n = prod(out.shape[d] for d in dim)
    fft(ctx, x, out, dim, "c2r", forward=False, scale=_scale(normalization, n))


@lowering(aten._fft_c2c.default)
def fft_c2c(ctx: LoweringContext, x: T, dim, normalization: int, forward: bool) -> None:
    n = prod(x.shape[d] for d in dim)
    fft(ctx, x, ctx.out(), dim, "c2c", forward=forward, scale=_scale(normalization, n))
