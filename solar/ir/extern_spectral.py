"""FFT routines of the extern table (issue 24): one row per transform kind, as cuFFT runs them.

An FFT statement is an extern statement (:class:`solar.ir.program.Extern`) whose row dims are
the transformed axes, in axis order: the row is the ``(*shape)`` block of one transform,
flattened row-major; the output position spans the transformed block of the output, also
flattened. ``extern_attrs``: ``shape`` (the input sizes of the transformed axes), ``out_shape``
(the output's), ``forward`` (the sign of the exponent), ``scale`` (the factor torch applies to
every output: 1, 1/n or 1/sqrt(n)) and ``dtype`` (the real dtype of the arithmetic).

Cost model (the compute term): the fewest real operations of the best *known* algorithm of
a stated family for that length, not a proven minimum (no nontrivial lower bound on the
operation count of the DFT is known): :mod:`solar.ir.fft_counts`. A complex transform of
length n = 2^k costs the split-radix count ``4 n log2 n - 6 n + 8`` (Yavne 1968; Duhamel &
Hollmann 1984; Johnson & Frigo's tangent FFT is smaller from n = 64 on and not used, see
docs/counting.md); other lengths the minimum over Winograd's 3-, 5-, 7- and 9-point modules
(and the tabulated 11-, 13-, 17- and 19-point ones), the direct odd-length DFT with conjugate
pairs, Cooley-Tukey mixed radix (twiddles counted exactly), Good-Thomas prime factor, Rader and
Bluestein, by a dynamic program over the divisors of n. A real-input (or real-output)
transform costs ``C(n)/2 - 2 floor((n-1)/2)``: the real-data split radix
``2 n log2 n - 4 n + 6`` (Sorensen, Jones, Heideman & Burrus 1987) for n = 2^k, the real-data
versions of the other algorithms (an estimate where the plan uses a tabulated Winograd module,
Rader, Bluestein or an even-length Cooley-Tukey split). An n-dimensional transform is counted
row-column: the 1-D count of each axis times the number of 1-D transforms along it (with the
real transform on the last axis for ``rfftn``/``irfftn``). The scaling by 1/n (``norm``)
folds into the last stage's twiddles: 0.
The DRAM term is the statement's accesses: every input and output element once.
"""

from __future__ import annotations

import math

from solar.ir.extern_base import ExternOp
from solar.ir.fft_counts import complex_dft_flops, real_dft_flops

ASSUMPTIONS: dict[str, str] = {}  # merged into solar.ir.extern.ROUTINE_ASSUMPTIONS

_CLASS = {"float32": "cuda_fp32", "float64": "cuda_fp64"}


def complex_fft_flops(n: int) -> int:
    """Real flops of one complex n-point DFT: the cheapest plan of :mod:`solar.ir.fft_counts`
    (split radix ``4 n log2 n - 6 n + 8`` for powers of two)."""
    if n <= 1:
        return 0
    n = int(n)  # the plan of a symbolic length has no closed formula: specialized
    return complex_dft_flops(n)


def real_fft_flops(n: int) -> int:
    """Real flops of one real-input n-point DFT (or its inverse, complex-to-real):
    ``C(n)/2 - 2 floor((n-1)/2)`` (``2 n log2 n - 4 n + 6`` for powers of two)."""
    if n <= 1:
        return 0
    n = int(n)  # see complex_fft_flops
    return real_dft_flops(n)


def fftn_flops(kind: str, shape: tuple[int, ...], out_shape: tuple[int, ...]) -> int:
    """Real flops of one ``kind`` transform ("c2c", "r2c", "c2r") of the block ``shape``
    (input sizes) to ``out_shape``, row-column."""
    if kind == "c2c":
        total = math.prod(shape)
        return sum(total // n * complex_fft_flops(n) for n in shape)
    # r2c: the real transform along the last axis, then complex ones over the half spectrum
    # c2r: the complex inverse ones over the half spectrum first, then the real one
    real_shape = shape if kind == "r2c" else out_shape
    half_shape = out_shape if kind == "r2c" else shape
    n = real_shape[-1]
    count = math.prod(real_shape) // n * real_fft_flops(n)
    half = math.prod(half_shape)
    count += sum(half // m * complex_fft_flops(m) for m in half_shape[:-1])
    return count


def _fft_ops(kind: str):
    def ops(n: int, m: int, rows: int, attrs: dict) -> dict[str, int]:
        shape, out_shape = tuple(attrs["shape"]), tuple(attrs["out_shape"])
        cls = _CLASS.get(str(attrs.get("dtype", "float32")), "cuda_fp32")
        return {cls: rows * fftn_flops(kind, shape, out_shape)}

    return ops


ROWS = [
    ExternOp("fft.c2c", _fft_ops("c2c"), "complex n-d DFT (forward, scale)"),
    ExternOp("fft.r2c", _fft_ops("r2c"), "real-input n-d DFT, half spectrum"),
    ExternOp("fft.c2r", _fft_ops("c2r"), "half spectrum to real n-d signal"),
]
ASSUMPTIONS["fft."] = (
    "FFTs: one cuFFT kernel each, inputs and outputs once through DRAM; compute = the best "
    "known algorithm's operation count, not a proven minimum: split radix 4n log2 n - 6n + 8 "
    "real flops per complex n-point transform for n = 2^k, otherwise the cheapest of Winograd "
    "modules (3, 5, 7, 9; 11, 13, 17, 19 as tabulated), the direct odd-length DFT, Cooley-Tukey "
    "mixed radix, Good-Thomas prime factor, Rader and Bluestein; real-data transforms "
    "C(n)/2 - 2 floor((n-1)/2) (the real-data split radix 2n log2 n - 4n + 6 for n = 2^k; an "
    "estimate for plans with a tabulated module, Rader, Bluestein or an even Cooley-Tukey "
    "split); row-column for n-d"
)
