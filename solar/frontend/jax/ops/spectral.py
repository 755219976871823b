"""FFTs: the ``fft`` primitive (``jnp.fft.*``), one kernel as cuFFT runs it (an extern
statement built by :func:`solar.frontend.routines.fft`; counts in
:mod:`solar.ir.extern_spectral`). ``fft_type``: 0 FFT, 1 IFFT (scaled by 1/n), 2 RFFT, 3 IRFFT
(scaled by 1/n), over the last ``len(fft_lengths)`` axes."""

from __future__ import annotations

from math import prod

from solar.frontend.jax.lower import LoweringContext, V
from solar.frontend.jax.registry import lowering
from solar.frontend.routines import fft as fft_kernel

# fft_type -> (kind, forward, scaled by 1/n)
_TYPES = {0: ("c2c", True, False), 1: ("c2c", False, True), 2: ("r2c", True, False)}
_TYPES[3] = ("c2r", False, True)


@lowering("fft", kind="heavy")
def fft(ctx: LoweringContext, x: V, *, fft_type: object, fft_lengths) -> None:
    code = int(getattr(fft_type, "value", fft_type))
    kind, forward, scaled = _TYPES[code]
    out = ctx.out()
    axes = list(range(out.ndim - len(fft_lengths), out.ndim))
    n = prod(int(s) for s in fft_lengths)
    scale = 1.0 / n if scaled else 1.0
    fft_kernel(ctx, ctx.tensor(x), out, axes, kind, forward=forward, scale=scale)
