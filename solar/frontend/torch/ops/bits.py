"""Bit manipulation and log-space sums: the operators references use to unpack narrow formats
(issue 20: ``float4_e2m1fn_x2`` data viewed as ``uint8``, then ``>>``, ``<<``, ``&``, ``|``) and
``torch.logaddexp``/``logaddexp2``. Rows of :mod:`solar.frontend.torch.ops.elementwise`'s table
(one statement per kernel); the scalar operators are rows of :data:`solar.ir.ops.SCALAR_OPS`
(a shift is one integer op, ``logaddexp`` 4 flops and 2 MUFU ops).

``Tensor.view(dtype)`` itself needs no lowering: it is a view that reinterprets its storage's
bytes (:class:`solar.ir.program.View`), declared like every other view.
"""

from __future__ import annotations

import torch

from solar.frontend.torch.ops.elementwise import Row, _row_lowering, fn
from solar.frontend.torch.registry import lowering

aten = torch.ops.aten

ROWS = [
    *(
        Row([op.Tensor, op.Tensor_Scalar, op.Scalar_Tensor], 2, fn(op.__name__))
        for op in (aten.bitwise_right_shift, aten.bitwise_left_shift)
    ),
    Row([aten.__rshift__.Tensor, aten.__rshift__.Scalar], 2, fn("bitwise_right_shift")),
    Row([aten.__lshift__.Tensor, aten.__lshift__.Scalar], 2, fn("bitwise_left_shift")),
    Row([aten.logaddexp.default], 2, fn("logaddexp")),
    Row([aten.logaddexp2.default], 2, fn("logaddexp2")),
]

for _row in ROWS:
    lowering(*_row.ops)(_row_lowering(_row))
