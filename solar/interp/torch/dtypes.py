"""IR dtype names (:mod:`solar.ir.dtypes`) as torch dtypes."""

from __future__ import annotations

import torch


def torch_dtype(dtype: str) -> torch.dtype:
    """The torch dtype the executor stores an IR dtype in."""
    return getattr(torch, dtype)
