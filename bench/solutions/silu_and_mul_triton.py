"""A Triton solution to ``examples/definitions/silu_and_mul_i14336.json``: ``y = silu(x[:, :I]) *
x[:, I:]``, one program per (row, block of columns), fp32 math, bf16 out. Imports without Triton
(``run`` then says that it needs it)."""

from __future__ import annotations

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the module still imports; run() needs Triton
    triton = None

BLOCK = 1024

if triton is not None:

    @triton.jit
    def _silu_and_mul(x_ptr, y_ptr, d, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = cols < d
        a = tl.load(x_ptr + row * 2 * d + cols, mask=mask).to(tl.float32)
        b = tl.load(x_ptr + row * 2 * d + d + cols, mask=mask).to(tl.float32)
        y = a / (1.0 + tl.exp(-a)) * b
        tl.store(y_ptr + row * d + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def run(x: torch.Tensor) -> torch.Tensor:
    if triton is None:
        raise RuntimeError("this solution needs Triton (pip install triton)")
    n, two_d = x.shape
    d = two_d // 2
    x = x.contiguous()
    y = torch.empty((n, d), dtype=x.dtype, device=x.device)
    _silu_and_mul[(n, triton.cdiv(d, BLOCK))](x, y, d, BLOCK=BLOCK)
    return y
