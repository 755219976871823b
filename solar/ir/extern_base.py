"""The row type of the extern routine table (:data:`solar.ir.extern.EXTERN_OPS`): a routine's
name and the operations it provably needs. Pure data: how to run a routine is an interpreter's
(:data:`solar.interp.torch.routine_kernels.TORCH_ROUTINES`). Its own module so that the routine
families (:mod:`solar.ir.extern_spectral`, :mod:`solar.ir.extern_linalg`) and the table import
it without a cycle."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ExternOp:
    name: str
    # ops(n, m, rows, attrs) -> {op class: count}: the provable minimum (see solar.ir.extern)
    ops: Callable[[int, int, int, dict], dict[str, int]]
    doc: str = ""
