"""Helpers shared by the PyTorch operator families: reduced dims arguments and PyTorch's type
promotion. The elementwise statements are the lowering library's
(:mod:`solar.frontend.lowering.pointwise`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from solar.frontend.layout import (  # noqa: F401  (re-exported for the op families)
    HALF,
    T,
    acc_dtype,
    broadcast_index,
    dims_of,
    nest,
    norm_dim,
)
from solar.interp.torch.dtypes import torch_dtype
from solar.ir.dtypes import from_torch


def norm_dims(dims: int | Sequence[int] | None, ndim: int) -> list[int]:
    """Reduced dims: None or ``[]`` mean all of them."""
    if dims is None or (not isinstance(dims, int) and len(dims) == 0):
        return list(range(ndim))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({norm_dim(d, ndim) for d in dims if ndim > 0})


def result_dtype(*operands: object) -> str:
    """PyTorch's type promotion of tensor and scalar operands (dimensioned tensors outrank
    0-dim ones, which outrank Python scalars, within a category)."""
    vals = [
        torch.empty((1,) * min(x.ndim, 1), dtype=torch_dtype(x.dtype), device="meta")
        if isinstance(x, T)
        else x
        for x in operands
        if x is not None
    ]
    if len(vals) == 1:
        v = vals[0]
        return from_torch(v.dtype if isinstance(v, torch.Tensor) else torch.tensor(v).dtype)
    dtype = torch.result_type(vals[0], vals[1])
    for v in vals[2:]:
        dtype = torch.result_type(torch.empty((1,), dtype=dtype, device="meta"), v)
    return from_torch(dtype)
