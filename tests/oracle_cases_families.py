"""Oracle cases for the operators of model families met in libraries outside the suite
(weight norm of audio encoders, spectral norm's ``vdot``, the sparse adjacency of graph
networks: ``solar.sparse_mm`` and the CSR row pointer), registered into
:data:`oracle_cases_torch.CASES` (that module imports this one at its end)."""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from oracle_cases_torch import case, rand, shape

import solar.frontend.torch.sparse  # noqa: F401  (defines torch.ops.solar.sparse_mm)

aten = torch.ops.aten


@case(aten._weight_norm_interface.default)
def _weight_norm(draw):
    shp = shape(draw, 2, 3)  # ATen's kernel: 2 dims or more, the first or the last one
    d = draw(st.sampled_from([0, len(shp) - 1]))
    g_shape = tuple(n if k == d else 1 for k, n in enumerate(shp))
    return (lambda v, g: aten._weight_norm_interface.default(v, g, d)), (rand(shp), rand(g_shape))


@case(aten._weight_norm_interface_backward.default)
def _weight_norm_backward(draw):
    shp = shape(draw, 2, 3)
    d = draw(st.sampled_from([0, len(shp) - 1]))
    g_shape = tuple(n if k == d else 1 for k, n in enumerate(shp))
    v, g = rand(shp), rand(g_shape)
    norm = aten._weight_norm_interface.default(v, g, d)[1]

    def fn(grad, v, g, norm):
        return aten._weight_norm_interface_backward.default(grad, v, g, norm, d)

    return fn, (rand(shp), v, g, norm)


@case(aten.vdot.default)
def _vdot(draw):
    n = draw(st.integers(1, 6))
    dtype = draw(st.sampled_from([torch.float32, torch.complex64]))
    a, b = torch.randn(n, dtype=dtype), torch.randn(n, dtype=dtype)
    return (lambda a, b: aten.vdot.default(a, b)), (a, b)


@case(torch.ops.solar.sparse_mm.default)
def _sparse_mm(draw):
    """A sparse x dense product: stored elements anywhere (duplicates too), an empty one now
    and then."""
    m, k, n, nnz = (draw(st.integers(lo, 4)) for lo in (1, 1, 1, 0))
    rows, cols = torch.randint(0, m, (nnz,)), torch.randint(0, k, (nnz,))

    def fn(rows, cols, values, dense):
        return torch.ops.solar.sparse_mm(rows, cols, values, dense, m)

    return fn, (rows, cols, rand((nnz,)), rand((k, n)))


@case(aten._convert_indices_from_coo_to_csr.default)
def _coo_to_csr(draw):
    size, nnz = draw(st.integers(1, 5)), draw(st.integers(0, 6))
    rows = torch.randint(0, size, (nnz,)).sort()[0]
    int32 = draw(st.booleans())
    return (lambda r: aten._convert_indices_from_coo_to_csr.default(r, size, out_int32=int32)), (
        rows,
    )


@case(torch.ops.solar.sparse_csr_mm.default)
def _sparse_csr_mm(draw):
    """A CSR product read through its row pointer (empty rows and an empty tensor too)."""
    m, k, n, nnz = (draw(st.integers(lo, 4)) for lo in (1, 1, 1, 0))
    crow = torch.cat(
        [
            torch.zeros(1, dtype=torch.long),
            torch.randint(0, m, (nnz,)).bincount(minlength=m).cumsum(0),
        ]
    )

    def fn(crow, cols, values, dense):
        return torch.ops.solar.sparse_csr_mm(crow, cols, values, dense)

    return fn, (crow, torch.randint(0, k, (nnz,)), rand((nnz,)), rand((k, n)))


@case(torch.ops.solar.sparse_sddmm.default)
def _sparse_sddmm(draw):
    """The values' gradient of a sparse product: one sampled dot product per element."""
    m, k, n, nnz = (draw(st.integers(lo, 4)) for lo in (1, 1, 1, 0))
    rows, cols = torch.randint(0, m, (nnz,)), torch.randint(0, k, (nnz,))
    fn = torch.ops.solar.sparse_sddmm
    return (lambda r, c, a, b: fn(r, c, a, b)), (rows, cols, rand((m, n)), rand((k, n)))
