"""Sparse x dense products: ``torch.ops.solar.sparse_mm`` (:mod:`solar.frontend.torch.sparse`
traces every sparse tensor as its stored elements and every product with a dense matrix as
this one operator).

ONE kernel, as cuSPARSE's SpMM launches it: the output is written once (zeros), then every
stored element ``k`` adds its value times the dense row its column selects into the row it sits
in, for each of the ``N`` columns: ``out[{rows[k]}, n] += values[k] * dense[{cols[k]}, n]``.
Work: ``nnz·N`` multiplies and ``nnz·N`` adds (2·nnz·N flops, a multiply-add per element and
column, as a dense matmul is counted); reads: the values, both index vectors, and the dense
rows gathered through the column indices (at their provable minimum, :mod:`solar.ir.cost`).

``torch.ops.solar.sparse_csr_mm``, the product of a CSR tensor built from its row pointer, is
the same kernel reading the row pointer (``M + 1`` indices) instead of a row index per element:
each row's end marks the element after it and a running sum gives every element's row, on
chip (``M`` + ``nnz`` integer adds), as cuSPARSE's CSR SpMM reads the pointer.

Also ``aten._convert_indices_from_coo_to_csr`` (a CSR row pointer from sorted row indices, as
PyTorch Geometric's ``index2ptr`` builds one): marks and a running sum.
"""

from __future__ import annotations

import torch

from solar.frontend.torch import sparse  # noqa: F401  (defines torch.ops.solar.sparse_*mm)
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import nest
from solar.frontend.torch.ops.indexing import index_load, write
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Indirect, call


@lowering(torch.ops.solar.sparse_mm.default)
def sparse_mm(ctx: LoweringContext, rows: T, cols: T, values: T, dense: T, m: int) -> None:
    """``out = 0`` then ``out[{rows[k]}, n] += values[k] * dense[{cols[k]}, n]``."""
    _product(ctx, ctx.out(), rows, cols, values, dense)


def _product(ctx: LoweringContext, out: T, rows: T, cols: T, values: T, dense: T) -> None:
    ctx.statement(nest(["i", "n"], out.shape), out, ["i", "n"], Const(0))
    value = ctx.load(values, ["k"], out.dtype)
    gathered = ctx.load(dense, [Indirect(index_load(cols, ["k"])), "n"], out.dtype)
    dims = [("k", values.shape[0]), ("n", dense.shape[1])]
    target = [Indirect(index_load(rows, ["k"])), "n"]
    write(ctx, dims, out, target, call("mul", value, gathered), accumulate=True)


@lowering(torch.ops.aten._convert_indices_from_coo_to_csr.default)
def coo_to_csr(ctx: LoweringContext, index: T, size: int, out_int32: bool = False) -> None:
    """The row pointer of sorted row indices: ``out[r] = #{i : index[i] < r}`` for
    ``r <= size``: each index marks the slot after its row, then a running sum (as
    ``repeat_interleave`` counts its marks)."""
    out = ctx.out()
    marks = ctx.local("marks", (size + 1,), out.dtype)
    ctx.statement([("j", size + 1)], marks, ["j"], Const(0))
    after = Indirect(call("add", index_load(index, ["i"]), Const(1)))
    ctx.statement([("i", index.shape[0])], marks, [after], Const(1), reduce="sum", accumulate=True)
    ctx.statement([("j", size + 1)], out, ["j"], ctx.load(marks, ["j"]), reduce="sum", scan="j")


@lowering(torch.ops.solar.sparse_csr_mm.default)
def sparse_csr_mm(ctx: LoweringContext, crow: T, cols: T, values: T, dense: T) -> None:
    """``sparse_mm`` of a CSR tensor, in one kernel reading its row pointer: each row's end
    marks the element after it (kernel-local), a running sum gives each element's row, then
    the product as :func:`sparse_mm`."""
    out = ctx.out()
    m, nnz = crow.shape[0] - 1, cols.shape[0]
    marks = ctx.local("marks", (nnz + 1,), crow.dtype)
    ctx.statement([("k", nnz + 1)], marks, ["k"], Const(0))
    end = Indirect(index_load(crow, [Affine.build({"r": 1}, 1)]))
    ctx.statement([("r", m)], marks, [end], Const(1), reduce="sum", accumulate=True)
    rows = ctx.local("rows", (nnz,), crow.dtype)
    ctx.statement([("k", nnz)], rows, ["k"], ctx.load(marks, ["k"]), reduce="sum", scan="k")
    _product(ctx, out, rows, cols, values, dense)


@lowering(torch.ops.solar.sparse_sddmm.default)
def sparse_sddmm(ctx: LoweringContext, rows: T, cols: T, a: T, b: T) -> None:
    """The gradient of a sparse product's values, one sampled dot product per stored element
    (cuSPARSE's SDDMM): ``out[k] = sum_n a[{rows[k]}, n] * b[{cols[k]}, n]``. Both operands
    are gathers, so the work is counted, as every gather's, at its provable minimum
    (:mod:`solar.ir.cost`): every element may sit at one position, one dot product of
    ``2·N`` flops (the kernel runs ``nnz`` of them)."""
    out = ctx.out()
    left = ctx.load(a, [Indirect(index_load(rows, ["k"])), "n"], out.dtype)
    right = ctx.load(b, [Indirect(index_load(cols, ["k"])), "n"], out.dtype)
    dims = [("k", rows.shape[0]), ("n", a.shape[1], True)]  # n: the reduction
    ctx.statement(dims, out, ["k"], call("mul", left, right), reduce="sum")
