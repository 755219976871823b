"""Oracle cases for the narrow-format operators (issue 20: shifts, ``logaddexp``) and the in-place
view operators (``unsqueeze_``, ...), registered into :data:`oracle_cases_torch.CASES` (that
module imports this one at its end). Inputs are drawn through ``viewed`` (contiguous,
transposed, strided, broadcast) like the other elementwise cases; the shift cases also view
their storage as another integer type of the same size (``Tensor.view(dtype)``), which the
oracle enumerates like any view."""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from oracle_cases_torch import Draw, binary, case, rand, shape

aten = torch.ops.aten

for _op in (aten.bitwise_right_shift, aten.bitwise_left_shift):
    binary(_op.Tensor, dtype=torch.int32)
    binary(_op.Tensor_Scalar, dtype=torch.int32, scalar=st.sampled_from([1, 4]))
    binary(_op.Scalar_Tensor, dtype=torch.int32, scalar=3, swap=True)
for _op in (aten.__rshift__, aten.__lshift__):
    binary(_op.Tensor, dtype=torch.int32)
    binary(_op.Scalar, dtype=torch.int32, scalar=st.sampled_from([1, 4]))
binary(aten.logaddexp.default)
binary(aten.logaddexp2.default)


@case(aten.__rshift__.Scalar, examples=3)
def _unpack_fp4(draw: Draw):
    """FP4 pairs viewed as bytes, the high nibble shifted down and the low one masked."""
    x = torch.randint(0, 256, shape(draw), dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    return (lambda x: (x.view(torch.uint8) >> 4) | (x.view(torch.uint8) & 0xF)), (x,)


def _inplace_view(op, extra, ndim=(2, 3)):
    def build(draw: Draw):
        shp = shape(draw, *ndim)
        args = extra(draw, len(shp))
        return (lambda x: op(x * 2, *args) + 1), (rand(shp),)

    case(op)(build)


_dim = lambda n: st.integers(-n, n - 1)  # noqa: E731
_inplace_view(aten.unsqueeze_.default, lambda d, n: (d(st.integers(-n - 1, n)),))
_inplace_view(aten.squeeze_.default, lambda d, n: ())
_inplace_view(aten.squeeze_.dim, lambda d, n: (d(_dim(n)),))
_inplace_view(aten.squeeze_.dims, lambda d, n: ([d(_dim(n))],))
_inplace_view(aten.transpose_.default, lambda d, n: (d(_dim(n)), d(_dim(n))))
_inplace_view(aten.t_.default, lambda d, n: (), ndim=(2, 2))
