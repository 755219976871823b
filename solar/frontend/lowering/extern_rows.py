"""The extern row statements of sort, top-k and the selections (kthvalue, median), written once
for both frontends against the shared :class:`~solar.frontend.lowering.base.LoweringContext`.

A routine over rows (:mod:`solar.ir.extern`) is one extern statement per output: the batch
dims (the input's dims but the row's), the output position ``p < m`` and the row dims
(reduction dims ``r{k}``); it reads each row once and writes each output once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from solar.frontend.layout import T
from solar.ir.scalar import Expr

if TYPE_CHECKING:  # pragma: no cover
    from solar.frontend.lowering.base import LoweringContext


def extern_rows(
    ctx: LoweringContext,
    shape: Sequence[int],
    axes: Sequence[int] | None,
    load: Callable[[list[str]], Expr],
    outs: Sequence[tuple[str, T | None]],
    m: int,
    *,
    keepdim: bool = True,
    **attrs: object,
) -> None:
    """``out[.., p, ..] = routine(row)[p]`` for each ``(routine, out)`` of ``outs`` (None:
    not asked for) over the rows of an input of ``shape`` along ``axes`` (None: one row of all
    elements, written at ``p`` in every output dim). ``load(index)`` reads the input at loop
    dims ``index``; ``keepdim``: the outputs keep the row axes (at ``p``)."""
    ndim = len(shape)
    red = list(range(ndim)) if axes is None else sorted(axes)
    batch = [k for k in range(ndim) if k not in red]
    dims = [(f"i{k}", shape[k]) for k in batch] + [("p", m)]
    dims += [(f"r{k}", shape[k], True) for k in red] or [("r", 1, True)]
    row = load([f"r{k}" if k in red else f"i{k}" for k in range(ndim)])
    for routine, out in outs:
        if out is None:
            continue
        if axes is None or ndim == 0:
            index = ["p"] * out.ndim
        else:
            index = [("p" if k in red else f"i{k}") for k in range(ndim) if keepdim or k not in red]
        ctx.statement(dims, out, index, row, extern=routine, extern_attrs=attrs)
