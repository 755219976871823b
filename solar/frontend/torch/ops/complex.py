"""Complex numbers (issue 24): construction, parts and magnitudes of complex tensors.

Complex tensors are IR tensors of dtype complex64/complex128; the arithmetic rows of
:mod:`solar.frontend.torch.ops.elementwise` (add, mul, div, ...) and the contractions take them
as they are, counted in real operations (:data:`solar.ir.ops.COMPLEX_COST`). This module holds
the operators whose operands and result differ in kind:

- ``polar(abs, angle)``, ``complex(real, imag)``: real to complex;
- ``abs``, ``angle`` of a complex tensor: complex to real (``abs`` of a real tensor stays
  the elementwise row);
- ``_conj_physical`` (``torch.conj_physical``): the conjugate, materialised (a sign flip: free).

``view_as_real``/``view_as_complex`` (and ``Tensor.view(dtype)``) need no lowering here: they
are views that reinterpret their storage's bytes (:class:`solar.ir.program.View`), declared like
every view. ``real``/``imag`` views are lazy in PyTorch too: they trace as ``view_as_real`` and a
select.
"""

from __future__ import annotations

import torch

from solar.frontend.lowering.pointwise import pointwise
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.elementwise import ROWS, _row_lowering
from solar.frontend.torch.registry import lowering
from solar.ir.dtypes import is_complex
from solar.ir.scalar import call

aten = torch.ops.aten


@lowering(aten.polar.default)
def polar(ctx: LoweringContext, r: T, theta: T) -> None:
    part = "float64" if ctx.out().dtype == "complex128" else "float32"
    pointwise(ctx, lambda a, b: call("polar", a, b), [r, theta], compute=part)


@lowering(aten.complex.default)
def complex_(ctx: LoweringContext, re: T, im: T) -> None:
    part = "float64" if ctx.out().dtype == "complex128" else "float32"
    pointwise(ctx, lambda a, b: call("complex", a, b), [re, im], compute=part)


_REAL_ROW = {op: row for row in ROWS for op in row.ops}


def _magnitude(name: str, op: object):
    def lower(ctx: LoweringContext, x: T) -> None:
        if not is_complex(x.dtype):
            if op in _REAL_ROW:
                return _row_lowering(_REAL_ROW[op])(ctx, x)
            ctx.fail(f"of a real tensor ({x.dtype}) is not lowered")
        pointwise(ctx, lambda e: call(name, e), [x], compute=x.dtype)

    return lower


# replaces elementwise.py's abs (real operands), which it defers to
lowering(aten.abs.default, replace=True)(_magnitude("abs", aten.abs.default))
lowering(aten.angle.default)(_magnitude("angle", aten.angle.default))


@lowering(aten._conj_physical.default)
def conj_physical(ctx: LoweringContext, x: T) -> None:
    pointwise(ctx, lambda e: call("conj", e), [x], compute=x.dtype)
