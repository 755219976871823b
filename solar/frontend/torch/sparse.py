"""Sparse tensors (COO and CSR, 2-D) traced as their stored elements: indices and values.

PyTorch's fake tensors cannot build a CSR tensor, and a sparse layout reaches no lowering. While a
program is traced (and while it runs for ``observe=True``), :func:`sparse_tensors` makes every
sparse tensor the program builds a :class:`SparseMatrix`: a ``torch.Tensor`` of sparse layout
(``isinstance``, ``.layout``, ``.shape`` answer as PyTorch's do) holding three dense tensors,
the row and column index of each stored element and its value. Every operation on it is
written with dense operators the trace already lowers, so the observed run and the trace
take the same steps, and the number of stored elements (``nnz``), a data-dependent size, comes
from the operator that decides it (:mod:`solar.frontend.torch.sizes`: its smallest possible
value, or the observed one with ``observe=True``):

- ``coalesce``: the distinct (row, column) pairs are ``unique`` of ``row * columns + column``
  (at least one of a non-empty tensor), the values summed into them by ``index_add``;
- building from a dense tensor (``to_sparse``, ``to_sparse_csr``): ``nonzero`` (at least 0);
- sparse x sparse (``A @ B``): the products are the pairs of an element of ``A`` in column
  ``k`` and an element of ``B`` in row ``k`` (``repeat_interleave`` of the counts found by
  ``searchsorted`` on ``B``'s sorted rows, or read off ``B``'s row pointer; at least 0), each
  multiplied once, then coalesced: the result's elements are in row-major order (PyTorch's
  CPU kernel leaves a row's columns unsorted; consumers that sum or scatter agree);
- ``index_select`` along a dim: the same join of the dim's indices with the sorted index;
- sparse x dense (``torch.sparse.mm``, ``torch.mm``, ``@``, ``matmul``; dense x sparse through
  the transposes): ONE kernel, ``torch.ops.solar.sparse_mm``:
  ``out[row[k], n] += value[k] * dense[col[k], n]``, 2·nnz·N flops, reading the values, both
  indices and the dense rows it gathers (:mod:`solar.frontend.torch.ops.sparse`); of a CSR
  tensor built from a row pointer, ``solar.sparse_csr_mm``, reading the row pointer instead
  of a row per element (its rows are found on chip), as cuSPARSE does; with
  ``reduce="mean"`` (PyG's SAGE) as CUDA computes it: the sum over each row's elements;
- ``sum()``, ``to_dense``, ``t()``, ``indices``/``values``/``crow_indices``/``col_indices``,
  ``_nnz``, ``to_sparse_coo``.

Anything else applied to a sparse tensor stops with one line naming the operation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

import torch
from torch.overrides import TorchFunctionMode

from solar.frontend.torch.provenance import caller_source
from solar.frontend.torch.registry import UnsupportedOperatorError

NOTE = (
    "sparse tensors traced as their stored elements (row, column, value): the number stored "
    "after coalesce, a sparse product or to_sparse is the data-dependent size of the unique, "
    "repeat_interleave or nonzero it is computed by; a sparse x dense product is one kernel of "
    "2·nnz·N flops (a multiply-add per stored element and column, as dense matmuls are "
    "counted); coalesce and sparse x sparse products are counted as those dense operators "
    "(sort, search, gathers, a multiply per product, an add per element summed into its "
    "position), not as cuSPARSE's "
    "or thrust's kernels: their unfused kernel count follows this decomposition"
)

_LIB = torch.library.Library("solar", "FRAGMENT")  # noqa: TOR901
_LIB.define("sparse_mm(Tensor rows, Tensor cols, Tensor values, Tensor dense, SymInt m) -> Tensor")
_LIB.define("sparse_csr_mm(Tensor crow, Tensor cols, Tensor values, Tensor dense) -> Tensor")
_LIB.define("sparse_sddmm(Tensor rows, Tensor cols, Tensor a, Tensor b) -> Tensor")


def _row_of(crow: torch.Tensor, nnz: int) -> torch.Tensor:
    """The row of each stored element of a CSR tensor: its row pointer's gaps, repeated."""
    return torch.repeat_interleave(crow[1:] - crow[:-1], output_size=nnz).to(crow.dtype)


def _sparse_mm_eager(rows, cols, values, dense, m):
    out = dense.new_zeros((m, dense.shape[1]), dtype=torch.result_type(values, dense))
    return out.index_add_(0, rows, values[:, None] * dense[cols])


def _sparse_mm_fake(rows, cols, values, dense, m):
    return dense.new_empty((m, dense.shape[1]), dtype=torch.result_type(values, dense))


def _sparse_csr_mm_eager(crow, cols, values, dense):
    rows = _row_of(crow, cols.shape[0])
    return _sparse_mm_eager(rows, cols, values, dense, crow.shape[0] - 1)


def _sparse_csr_mm_fake(crow, cols, values, dense):
    return _sparse_mm_fake(crow, cols, values, dense, crow.shape[0] - 1)


def _sparse_sddmm_eager(rows, cols, a, b):
    return (a[rows] * b[cols]).sum(-1)


def _sparse_sddmm_fake(rows, cols, a, b):
    return a.new_empty(rows.shape, dtype=torch.result_type(a, b))


for _name, _eager, _fake in (
    ("sparse_mm", _sparse_mm_eager, _sparse_mm_fake),
    ("sparse_csr_mm", _sparse_csr_mm_eager, _sparse_csr_mm_fake),
    ("sparse_sddmm", _sparse_sddmm_eager, _sparse_sddmm_fake),
):
    _LIB.impl(_name, _eager, "CompositeExplicitAutograd")
    torch.library.register_fake(f"solar::{_name}", _fake, lib=_LIB)


# -- gradients (a training step): A^T @ grad for the dense operand, one sampled product per
# stored element for the values (grad[row[k]] . dense[col[k]], cuSPARSE's SDDMM)
def _keep(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs[:4])


def _gradients(ctx, grad, rows, cols, values, dense):
    needs = ctx.needs_input_grad
    g_values = torch.ops.solar.sparse_sddmm(rows, cols, grad, dense) if needs[2] else None
    g_dense = (
        torch.ops.solar.sparse_mm(cols, rows, values, grad, dense.shape[0]) if needs[3] else None
    )
    return g_values, g_dense


def _sparse_mm_backward(ctx, grad):
    rows, cols, values, dense = ctx.saved_tensors
    return None, None, *_gradients(ctx, grad, rows, cols, values, dense), None


def _sparse_csr_mm_backward(ctx, grad):
    crow, cols, values, dense = ctx.saved_tensors
    rows = _row_of(crow, cols.shape[0])
    return None, None, *_gradients(ctx, grad, rows, cols, values, dense)


torch.library.register_autograd(
    "solar::sparse_mm", _sparse_mm_backward, setup_context=_keep, lib=_LIB
)
torch.library.register_autograd(
    "solar::sparse_csr_mm", _sparse_csr_mm_backward, setup_context=_keep, lib=_LIB
)


class SparseMatrix(torch.Tensor):
    """A 2-D sparse tensor (COO or CSR layout) held as ``rows``, ``cols`` and ``values`` of its
    stored elements (CSR: in row order). A CSR tensor built from a row pointer keeps it
    (``crow``) and makes ``rows`` only where an operation needs them, as PyTorch converts."""

    cols: torch.Tensor
    vals: torch.Tensor
    crow: torch.Tensor | None
    coalesced: bool
    _rows: torch.Tensor | None
    _layout: torch.layout

    @staticmethod
    def __new__(cls, rows, cols, values, size, layout=torch.sparse_coo, coalesced=False, crow=None):
        size = tuple(int(s) for s in size)
        out = torch.Tensor._make_wrapper_subclass(
            cls, size, dtype=values.dtype, device=values.device, layout=layout
        )
        out._rows, out.cols, out.vals, out.coalesced = rows, cols, values, coalesced
        out.crow = crow
        out._layout = layout  # (PyTorch answers .layout of a CSR wrapper with an error)
        return out

    def __init__(self, *args, **kwargs) -> None:  # everything is set in __new__
        super().__init__()

    @property
    def rows(self) -> torch.Tensor:
        """The row of each stored element (of a row pointer: computed once, on first use)."""
        if self._rows is None:
            self._rows = _row_of(self.crow, self.nnz)  # type: ignore[arg-type]
        return self._rows

    @property
    def nnz(self) -> int:
        return self.cols.shape[0]

    @property
    def size2(self) -> tuple[int, int]:
        with torch._C.DisableTorchFunctionSubclass():
            return tuple(self.shape)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"SparseMatrix({self.size2}, nnz={self.nnz}, layout={self._layout})"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return _apply(func, args, kwargs or {})

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise _unsupported(func)


TRACED = (
    "coalesce, to_sparse/to_sparse_csr/to_sparse_coo, to_dense, t, indices/values/crow_indices/"
    "col_indices, sparse x dense and sparse x sparse products, index_select, sum()"
)


def _refuse(what: str, why: str = "") -> UnsupportedOperatorError:
    """One line naming the operation on a sparse tensor that is not traced, and the way out."""
    return UnsupportedOperatorError(
        what,
        caller_source(3),
        why
        or f"is not traced on sparse tensors (traced: {TRACED}); call .to_dense() first, "
        "or bound the program on the indices and values",
    )


def _unsupported(func: object) -> UnsupportedOperatorError:
    return _refuse(f"{getattr(func, '__name__', func)} of a sparse tensor")


def dense_outputs(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The traced program's output tensors, refusing a sparse one in one line."""
    if any(isinstance(t, SparseMatrix) for t in outputs):
        raise UnsupportedOperatorError(
            "a sparse tensor returned by the program",
            "",
            "cannot be an output of the trace: return .to_dense(), or .indices() and .values()",
        )
    return outputs


# ------------------------------------------------------------------------------ building
def _coo(indices, values, size=None, *, is_coalesced=None, dtype=None, **_: object) -> SparseMatrix:
    if indices.dim() != 2 or indices.shape[0] != 2:
        raise _refuse(
            f"torch.sparse_coo_tensor of {indices.shape[0]} sparse dims",
            "is not traced: only 2-D sparse matrices are (indices of shape [2, nnz])",
        )
    if size is None:
        raise _refuse(
            "torch.sparse_coo_tensor without a size",
            "reads its size from the indices' values: pass size=",
        )
    values = values if dtype is None else values.to(dtype)
    return SparseMatrix(indices[0], indices[1], values, size, coalesced=bool(is_coalesced))


def _csr(crow_indices, col_indices, values, size=None, *, dtype=None, **_: object) -> SparseMatrix:
    if size is None:
        raise _refuse(
            "torch.sparse_csr_tensor without a size",
            "reads its size from the indices' values: pass size=",
        )
    values = values if dtype is None else values.to(dtype)
    return SparseMatrix(None, col_indices, values, size, torch.sparse_csr, crow=crow_indices)


def _from_dense(x: torch.Tensor, layout: torch.layout = torch.sparse_coo) -> SparseMatrix:
    if x.dim() != 2:
        raise _refuse(
            f"to_sparse of a {x.dim()}-D tensor", "is not traced: only 2-D sparse matrices are"
        )
    where = torch.nonzero(x)
    rows, cols = where[:, 0], where[:, 1]
    return SparseMatrix(rows, cols, x[rows, cols], tuple(x.shape), layout, coalesced=True)


def _to_layout(s: SparseMatrix, layout: torch.layout) -> SparseMatrix:
    if layout is s._layout:
        return s
    if layout is torch.sparse_coo:
        return SparseMatrix(s.rows, s.cols, s.vals, s.size2, layout, s.coalesced)
    if layout is not torch.sparse_csr:
        raise _refuse(f"to_sparse(layout={layout})", "is not traced: COO and CSR are")
    c = _coalesce(s)
    return SparseMatrix(c.rows, c.cols, c.vals, c.size2, torch.sparse_csr, True)


# ------------------------------------------------------------------------------ operations
def _coalesce(s: SparseMatrix) -> SparseMatrix:
    """Distinct (row, column) pairs in row-major order, duplicates summed."""
    if s.coalesced:
        return s
    n_cols = s.size2[1]
    keys, inverse = torch.unique(s.rows * n_cols + s.cols, sorted=True, return_inverse=True)
    values = s.vals.new_zeros((keys.shape[0], *s.vals.shape[1:]))
    values = values.index_add(0, inverse, s.vals)
    return SparseMatrix(keys // n_cols, keys % n_cols, values, s.size2, s._layout, True)


def _declare_coalesced(s: SparseMatrix, coalesced: bool) -> SparseMatrix:
    """``_coalesced_(flag)``: the caller vouches for (or withdraws) the order; nothing runs."""
    s.coalesced = bool(coalesced)
    return s


def _join(keys: torch.Tensor, probes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every pair (i, j) with ``probes[i] == keys[j]``: the probe positions and the key
    positions, from a stable sort of the keys and two binary searches per probe."""
    sorted_keys, order = torch.sort(keys, stable=True)
    lo = torch.searchsorted(sorted_keys, probes)
    counts = torch.searchsorted(sorted_keys, probes, right=True) - lo
    probe, at = _pairs(lo, counts)
    return probe, order[at]


def _pairs(lo: torch.Tensor, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Probe ``i`` matched with the ``counts[i]`` keys from ``lo[i]`` on: (probe, key) per pair;
    their number is the data-dependent size of ``repeat_interleave``."""
    probe = torch.repeat_interleave(counts)
    starts = torch.cumsum(counts, 0) - counts
    within = torch.arange(probe.shape[0], device=lo.device) - starts[probe]
    return probe, lo[probe] + within


def _spspmm(a: SparseMatrix, b: SparseMatrix) -> SparseMatrix:
    """``a @ b``: one product per pair (element of ``a`` in column k, element of ``b`` in row
    k), summed per (row, column) by coalescing. Row k of a CSR ``b`` built from a row pointer
    is the pointer's range: no sort, no search."""
    if b._rows is None:
        lo = b.crow[a.cols]  # type: ignore[index]
        ia, ib = _pairs(lo, b.crow[a.cols + 1] - lo)  # type: ignore[index]
    else:
        ia, ib = _join(b.rows, a.cols)
    product = SparseMatrix(
        a.rows[ia], b.cols[ib], a.vals[ia] * b.vals[ib], (a.size2[0], b.size2[1]), a._layout
    )
    return _coalesce(product)


def _spmm(s: SparseMatrix, dense: torch.Tensor) -> torch.Tensor:
    """Sparse x dense in one kernel (``torch.ops.solar.sparse_mm``)."""
    if dense.dim() == 1:
        return _spmm(s, dense[:, None])[:, 0]
    if dense.dim() != 2 or s.vals.dim() != 1:
        raise _refuse(
            "a sparse product with a batched dense operand or hybrid values",
            "is not traced: a 2-D sparse matrix with scalar values times a matrix or vector is",
        )
    if s._rows is None:  # a CSR tensor's own row pointer, as cuSPARSE reads it
        return torch.ops.solar.sparse_csr_mm(s.crow, s.cols, s.vals, dense)
    return torch.ops.solar.sparse_mm(s.rows, s.cols, s.vals, dense, s.size2[0])


def _t(s: SparseMatrix) -> SparseMatrix:
    m, n = s.size2
    return SparseMatrix(s.cols, s.rows, s.vals, (n, m))


def _matmul(a: object, b: object, reduce: str = "sum") -> object:
    if reduce != "sum":
        return _reduced(a, b, reduce)
    if isinstance(a, SparseMatrix) and isinstance(b, SparseMatrix):
        return _spspmm(a, b)
    if isinstance(a, SparseMatrix):
        return _spmm(a, b)  # type: ignore[arg-type]
    if b.dim() == 1:  # type: ignore[union-attr]
        return _spmm(_t(b), a)  # type: ignore[arg-type]
    return _spmm(_t(b), a.t()).t()  # type: ignore[arg-type, union-attr]


def _reduced(a: object, b: object, reduce: str) -> torch.Tensor:
    """``torch.sparse.mm(a, b, "mean")``, as CUDA computes it (PyTorch's reducing kernel is
    CPU-only; PyG divides the sum by the row degrees there): the product, then each row
    divided by its number of stored elements (at least 1)."""
    if reduce != "mean" or not isinstance(a, SparseMatrix) or isinstance(b, SparseMatrix):
        raise _refuse(
            f"torch.sparse.mm(sparse, dense, reduce={reduce!r})",
            "is not traced (CUDA has no such kernel): 'sum' and 'mean' are",
        )
    ones = a.vals.new_ones(a.nnz)
    degree = a.vals.new_zeros(a.size2[0]).index_add(0, a.rows, ones)
    out = _spmm(a, b)  # type: ignore[arg-type]
    return out / degree.clamp(min=1).reshape((-1,) + (1,) * (out.dim() - 1))


def _index_select(s: SparseMatrix, dim: int, index: torch.Tensor) -> SparseMatrix:
    """The elements whose index along ``dim`` is in ``index``, renumbered by its position
    (one element per match: a repeated index repeats them)."""
    along = s.rows if dim % 2 == 0 else s.cols
    pos, at = _join(index, along)
    kept_rows, kept_cols = s.rows[pos], s.cols[pos]
    size = list(s.size2)
    size[dim % 2] = index.shape[0]
    if dim % 2 == 0:
        return SparseMatrix(at, kept_cols, s.vals[pos], size)
    return SparseMatrix(kept_rows, at, s.vals[pos], size)


def _to_dense(s: SparseMatrix) -> torch.Tensor:
    out = s.vals.new_zeros(s.size2)
    return out.index_put((s.rows, s.cols), s.vals, accumulate=True)


def _sum(s: SparseMatrix, dim=None, keepdim=False, dtype=None) -> torch.Tensor:
    if dim is not None:
        raise _refuse(
            "sum over a dim of a sparse tensor",
            "is not traced (sum() of all elements is): sum .to_dense() instead",
        )
    return s.vals.sum(dtype=dtype)


def _indices(s: SparseMatrix) -> torch.Tensor:
    if s._layout is not torch.sparse_coo:
        raise _refuse("indices() of a CSR tensor", "is PyTorch's error too: .to_sparse_coo()")
    return torch.stack([s.rows, s.cols])


def _crow(s: SparseMatrix) -> torch.Tensor:
    if s._layout is not torch.sparse_csr:
        raise _refuse("crow_indices() of a COO tensor", "is PyTorch's error too: .to_sparse_csr()")
    if s.crow is not None:
        return s.crow
    int32 = s.rows.dtype == torch.int32
    return torch._convert_indices_from_coo_to_csr(s.rows, s.size2[0], out_int32=int32)


def _to_sparse(x: object, *args: object, layout=None, **kwargs: object) -> object:
    if isinstance(x, SparseMatrix):
        return _to_layout(x, layout or torch.sparse_coo)
    if args or kwargs:
        raise _refuse(
            "to_sparse with sparse_dim or blocksize", "is not traced: 2-D COO and CSR are"
        )
    return _from_dense(x, layout or torch.sparse_coo)  # type: ignore[arg-type]


T = torch.Tensor
_to_coo = partial(_to_sparse, layout=torch.sparse_coo)
_to_csr = partial(_to_sparse, layout=torch.sparse_csr)
METHODS: dict[object, Callable[..., object]] = {
    T.coalesce: _coalesce,
    T.is_coalesced: lambda s: s.coalesced,
    T._coalesced_: _declare_coalesced,
    T._nnz: lambda s: s.nnz,
    T.indices: _indices,
    T._indices: _indices,
    T.values: lambda s: s.vals,
    T._values: lambda s: s.vals,
    T.crow_indices: _crow,
    T.col_indices: lambda s: s.cols,
    T.to_dense: _to_dense,
    T.detach: lambda s: s,  # (no gradient flows through a trace)
    T.t: _t,
    torch.t: _t,
    T.sum: _sum,
    torch.sum: _sum,
    torch.sparse.sum: _sum,
    torch._sparse_sum: _sum,
    T.index_select: _index_select,
    torch.index_select: _index_select,
    T.to_sparse: _to_sparse,
    T.to_sparse_coo: _to_coo,
    T.to_sparse_csr: _to_csr,
    T.matmul: _matmul,
    T.__matmul__: _matmul,
    T.__rmatmul__: lambda a, b: _matmul(b, a),
    T.mm: _matmul,
    torch.mm: _matmul,
    torch.matmul: _matmul,
    torch.sparse.mm: _matmul,
    torch.spmm: _matmul,
}
#: what a sparse tensor answers as PyTorch's own does (and every attribute): size, dim, len
PLAIN = {T.size, T.dim, T.__len__}
#: functions that build a sparse tensor from dense ones
BUILDERS: dict[object, Callable[..., object]] = {
    torch.sparse_coo_tensor: _coo,
    torch.sparse_csr_tensor: _csr,
    T.to_sparse: _to_sparse,
    T.to_sparse_coo: _to_coo,
    T.to_sparse_csr: _to_csr,
}


def _is_sparse(x: object) -> bool:
    return isinstance(x, SparseMatrix)


def _apply(func: object, args: tuple, kwargs: dict) -> object:
    """``func`` on arguments of which one is a :class:`SparseMatrix`."""
    owner = getattr(func, "__self__", None)  # an attribute's getter: its descriptor
    if owner is T.layout:
        return args[0]._layout
    if owner in (T.is_sparse, T.is_sparse_csr):
        return args[0]._layout is (torch.sparse_coo if owner is T.is_sparse else torch.sparse_csr)
    if func in PLAIN or getattr(func, "__name__", "") == "__get__":  # attributes
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)
    handler = METHODS.get(func)  # type: ignore[arg-type]
    if handler is None:
        raise _unsupported(func)
    return handler(*args, **kwargs)


class _SparseMode(TorchFunctionMode):
    """Builds :class:`SparseMatrix` where the program builds a sparse tensor, and applies the
    operations of :data:`METHODS` to them (the first one adds :data:`NOTE` to ``notes``)."""

    def __init__(self, notes: list[str] | None) -> None:
        super().__init__()
        self.notes = notes

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves = [*args, *kwargs.values()]
        leaves += [x for a in args if isinstance(a, (list, tuple)) for x in a]
        if any(_is_sparse(x) for x in leaves):
            return _apply(func, args, kwargs)
        build = BUILDERS.get(func)  # type: ignore[arg-type]
        if build is not None and not any(
            isinstance(x, torch.Tensor) and x.layout != torch.strided for x in leaves
        ):  # (a real sparse tensor, made before the mode, stays PyTorch's)
            if self.notes is not None:
                self.notes.append(NOTE)
            return build(*args, **kwargs)
        return func(*args, **kwargs)


@contextmanager
def sparse_tensors(sizes: object = None) -> Iterator[None]:
    """While active, the program's sparse tensors are :class:`SparseMatrix` es (``sizes``: the
    trace's :class:`~solar.frontend.torch.sizes.SizePolicy`, whose report gets :data:`NOTE`)."""
    with _SparseMode(getattr(sizes, "notes_once", None)):
        yield
