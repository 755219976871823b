"""Opaque library routines over rows: the table behind ``Statement.extern``.

Some operators are not loop nests of scalar operators but library algorithms whose work depends
on the data (sorting networks, radix sorts, selection): sort, argsort, topk, kthvalue, median,
and the selections whose output size is data-dependent (nonzero, unique, histc), each traced
at one chosen size (:mod:`solar.frontend.torch.sizes`; a run whose data has another size is
refused).
The IR states them as *extern* statements (see :class:`solar.ir.program.Statement`): the rows
they read and the outputs they write are ordinary affine accesses, so their DRAM traffic is
exact, and the routine itself is a row of this table: how to execute it (``fn`` maps a tensor
of rows ``(*batch, n)`` to ``(*batch, m)``) and the operations it provably needs.

The FFT and dense linear-algebra routines (:mod:`solar.ir.extern_spectral`,
:mod:`solar.ir.extern_linalg`) add their rows to the table: they carry their
published operation counts (see those modules) and say what the bound assumes of them in
:data:`ROUTINE_ASSUMPTIONS`.

Cost model (the compute lower bound) of the rows below: **zero operations** for every
selection routine. Reading
every key once and writing every output once is necessary, and is counted as DRAM traffic by
the accesses. No positive op count is provable for these routines on a GPU: a comparison
count (``n - 1`` for a selection, ``log2 n!`` for a sort) only binds comparison-based
algorithms, while radix sort and radix select move keys by digit through memory (histograms,
scatters), with a per-key instruction count that depends on the key width and the
implementation; and a fan-in argument over two-input operations fails for the 3-input
instructions (LOP3, FMA) and for combining done by the memory system (atomics). So an extern
node is bounded by its memory traffic (and by the compute of the elementwise expression that
feeds it, counted as usual). Adding a routine is adding a row.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from solar.ir import extern_linalg, extern_spectral
from solar.ir.extern_base import ExternOp


def _no_ops(n: int, m: int, rows: int, attrs: dict) -> dict[str, int]:
    return {}


def _sort(rows: torch.Tensor, descending: bool = False, stable: bool = False):
    return torch.sort(rows, dim=-1, descending=descending, stable=stable)


def _topk(rows: torch.Tensor, k: int, largest: bool = True, sorted: bool = True):  # noqa: A002
    return torch.topk(rows, k, dim=-1, largest=largest, sorted=sorted)


def _kthvalue(rows: torch.Tensor, k: int):
    return torch.kthvalue(rows, k, dim=-1, keepdim=True)


def _median(rows: torch.Tensor, ignore_nan: bool = False):
    f = torch.nanmedian if ignore_nan else torch.median
    return f(rows, dim=-1, keepdim=True)


def _randperm(rows: torch.Tensor) -> torch.Tensor:
    """``rows`` (positions ``0..n-1``) in the order of ``torch.randperm(n)`` drawn from the
    default generator: a re-seeded run matches the source's permutation."""
    n = rows.shape[-1]
    return rows[..., torch.randperm(n, device=rows.device)]


def _random_keys(n: int, m: int, rows: int, attrs: dict) -> dict[str, int]:
    """A random permutation draws one random key per element (>= 1 op each, see
    :data:`solar.ir.ops.SCALAR_OPS` ``random``); ordering the keys costs nothing provable."""
    return {"cuda_int32": n * rows}


def _pick(fn: Callable[..., object], which: int) -> Callable[..., torch.Tensor]:
    def run(rows: torch.Tensor, **attrs: object) -> torch.Tensor:
        return fn(rows, **attrs)[which]  # type: ignore[index]

    return run


class DataSizeMismatch(ValueError):
    """A data-dependent size of the data differs from the size the program was traced at."""


def _sized(what: str, got: int, size: int) -> None:
    if got != size:
        raise DataSizeMismatch(
            f"the data has {got} {what} where the trace took {size}: trace with "
            "observe=True on these inputs to use the sizes they produce"
        )


def _nonzero(rows: torch.Tensor, shape: tuple, coord: int, size: int) -> torch.Tensor:
    """Coordinate ``coord`` of the non-zero elements of the row viewed as ``shape``."""
    found = torch.nonzero(rows.reshape(shape))
    _sized("non-zero elements", found.shape[0], size)
    return found[:, coord]


def _count(rows: torch.Tensor) -> torch.Tensor:
    return torch.count_nonzero(rows, dim=-1).unsqueeze(-1)


def _unique(rows: torch.Tensor, which: int, consecutive: bool, size: int, sorted=True):  # noqa: A002
    if consecutive:
        res = torch.unique_consecutive(rows, return_inverse=True, return_counts=True)
    else:
        res = torch._unique2(rows, sorted=sorted, return_inverse=True, return_counts=True)
    _sized("distinct values", res[0].shape[0], size)
    return res[which]


def _histc(rows: torch.Tensor, bins: int, lo: float, hi: float) -> torch.Tensor:
    return torch.histc(rows, bins=bins, min=lo, max=hi)


def _nms(rows: torch.Tensor, iou: float, size: int) -> torch.Tensor:
    """Positions kept by non-maximum suppression of boxes ``(n, 4)`` already in decreasing
    score order (the row, flattened)."""
    boxes = rows.reshape(-1, 4)
    order = -torch.arange(boxes.shape[0], dtype=boxes.dtype, device=boxes.device)
    kept = torch.ops.torchvision.nms(boxes, order, iou)
    _sized("boxes kept", kept.shape[0], size)
    return kept


_ROWS = [
    ExternOp("sort.values", _pick(_sort, 0), _no_ops, "rows sorted (descending, stable)"),
    ExternOp("sort.indices", _pick(_sort, 1), _no_ops, "positions of the sorted values"),
    ExternOp("topk.values", _pick(_topk, 0), _no_ops, "k largest/smallest (k, largest, sorted)"),
    ExternOp("topk.indices", _pick(_topk, 1), _no_ops, "positions of the top k"),
    ExternOp("kthvalue.values", _pick(_kthvalue, 0), _no_ops, "k-th smallest (k), one per row"),
    ExternOp("kthvalue.indices", _pick(_kthvalue, 1), _no_ops, "position of the k-th smallest"),
    ExternOp("median.values", _pick(_median, 0), _no_ops, "lower median (ignore_nan)"),
    ExternOp("median.indices", _pick(_median, 1), _no_ops, "position of the lower median"),
    ExternOp("randperm", _randperm, _random_keys, "a random permutation of the row (n keys)"),
    ExternOp("nonzero", _nonzero, _no_ops, "one coordinate of the non-zero elements (shape)"),
    ExternOp("nonzero.count", _count, _no_ops, "how many elements are non-zero"),
    ExternOp("unique.values", lambda r, **a: _unique(r, 0, **a), _no_ops, "distinct values"),
    ExternOp("unique.inverse", lambda r, **a: _unique(r, 1, **a), _no_ops, "each value's slot"),
    ExternOp("unique.counts", lambda r, **a: _unique(r, 2, **a), _no_ops, "each value's count"),
    ExternOp("histc", _histc, _no_ops, "counts of the row in equal bins of [lo, hi]"),
    ExternOp("nms", _nms, _no_ops, "boxes kept by NMS, of boxes sorted by score (iou)"),
]

_ROWS += extern_spectral.ROWS + extern_linalg.ROWS

EXTERN_OPS: dict[str, ExternOp] = {op.name: op for op in _ROWS}

# What the bound assumes when a program runs a routine (the Bound's assumptions): routine name
# or prefix ("fft.") -> the sentence, from the routine families.
ROUTINE_ASSUMPTIONS: dict[str, str] = {**extern_spectral.ASSUMPTIONS, **extern_linalg.ASSUMPTIONS}


def routine_assumptions(names: set[str]) -> list[str]:
    """The assumptions of the routines ``names`` (by exact name or prefix), each once."""
    out: list[str] = []
    for key, text in ROUTINE_ASSUMPTIONS.items():
        hit = key in names or (key.endswith(".") and any(n.startswith(key) for n in names))
        if hit and text not in out:
            out.append(text)
    return out


def extern_op(name: str) -> ExternOp:
    try:
        return EXTERN_OPS[name]
    except KeyError:
        raise ValueError(
            f"extern routine {name!r} is not in solar.ir.extern.EXTERN_OPS; add a row there"
        ) from None
