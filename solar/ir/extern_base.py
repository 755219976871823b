"""The row type of the extern routine table (:data:`solar.ir.extern.EXTERN_OPS`): how to
execute a routine over rows and the operations it provably needs. Its own module so that the
routine families (:mod:`solar.ir.extern_spectral`, :mod:`solar.ir.extern_linalg`) and the
table import it without a cycle."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ExternOp:
    name: str
    fn: Callable[..., torch.Tensor]  # fn(rows (*batch, n), **attrs) -> (*batch, m)
    # ops(n, m, rows, attrs) -> {op class: count}: the provable minimum (see solar.ir.extern)
    ops: Callable[[int, int, int, dict], dict[str, int]]
    doc: str = ""
