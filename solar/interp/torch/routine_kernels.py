"""The torch implementation of every extern routine (:data:`solar.ir.extern.EXTERN_OPS`): a
function mapping a tensor of rows ``(*batch, n)`` and the statement's attributes to the outputs
``(*batch, m)``. The selection routines are here; the FFTs and dense linear algebra in
:mod:`solar.interp.torch.science`."""

from __future__ import annotations

from collections.abc import Callable

import torch

from solar.interp.torch.science import SCIENCE_ROUTINES
from solar.ir.extern import EXTERN_OPS, DataSizeMismatch, extern_op


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


def _pick(fn: Callable[..., object], which: int) -> Callable[..., torch.Tensor]:
    def run(rows: torch.Tensor, **attrs: object) -> torch.Tensor:
        return fn(rows, **attrs)[which]  # type: ignore[index]

    return run


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


#: routine name -> fn(rows (*batch, n), **attrs) -> (*batch, m)
TORCH_ROUTINES: dict[str, Callable[..., torch.Tensor]] = {
    "sort.values": _pick(_sort, 0),
    "sort.indices": _pick(_sort, 1),
    "topk.values": _pick(_topk, 0),
    "topk.indices": _pick(_topk, 1),
    "kthvalue.values": _pick(_kthvalue, 0),
    "kthvalue.indices": _pick(_kthvalue, 1),
    "median.values": _pick(_median, 0),
    "median.indices": _pick(_median, 1),
    "randperm": _randperm,
    "nonzero": _nonzero,
    "nonzero.count": _count,
    "unique.values": lambda r, **a: _unique(r, 0, **a),
    "unique.inverse": lambda r, **a: _unique(r, 1, **a),
    "unique.counts": lambda r, **a: _unique(r, 2, **a),
    "histc": _histc,
    "nms": _nms,
    **SCIENCE_ROUTINES,
}


def torch_routine(name: str) -> Callable[..., torch.Tensor]:
    """The torch implementation of extern routine ``name`` (checked against the IR's table)."""
    extern_op(name)
    try:
        return TORCH_ROUTINES[name]
    except KeyError:
        raise ValueError(
            f"extern routine {name!r} has no torch implementation; add it to "
            "solar.interp.torch.routine_kernels.TORCH_ROUTINES"
        ) from None


_missing = set(EXTERN_OPS) ^ set(TORCH_ROUTINES)
if _missing:
    raise ImportError(f"extern routines without a torch implementation (or vice versa): {_missing}")
