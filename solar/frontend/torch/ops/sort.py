"""Sorting and selection: ``extern`` statements (opaque library routines over rows, see
:mod:`solar.ir.extern`). ONE kernel per operator, one statement per output.

- ``sort`` (``descending``, ``stable``; ``argsort`` and ``msort`` record it): values and indices;
- ``topk`` (``k``, ``largest``, ``sorted``);
- ``kthvalue`` (``k``, ``keepdim``), ``median`` / ``nanmedian`` (with ``dim``: values and
  indices; without: the lower median of all elements).

Each reads its rows once and writes its outputs once (exact DRAM traffic); the routine's own
compute lower bound is 0 (see :mod:`solar.ir.extern` for why nothing more is provable).
"""

from __future__ import annotations

import torch

from solar.frontend.lowering.extern_rows import extern_rows
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import norm_dim
from solar.frontend.torch.registry import lowering

aten = torch.ops.aten


def _rows(
    ctx: LoweringContext,
    x: T,
    dim: int | None,
    routine: str,
    outs: list[T | None],
    m: int,
    keepdim: bool,
    **attrs: object,
) -> None:
    """The values and indices of ``routine`` over the rows of ``x`` along ``dim`` (every dim
    when None): :func:`~solar.frontend.lowering.extern_rows.extern_rows`."""
    axes = None if dim is None else [norm_dim(dim, x.ndim)] if x.ndim else []
    named = [(f"{routine}.{which}", out) for which, out in zip(("values", "indices"), outs)]
    load = lambda index: ctx.load(x, index)  # noqa: E731
    extern_rows(ctx, x.shape, axes, load, named, m, keepdim=keepdim, **attrs)


def _n(x: T, dim: int) -> int:
    return x.shape[norm_dim(dim, x.ndim)] if x.ndim else 1


@lowering(aten.sort.default)
def sort(ctx: LoweringContext, x: T, dim: int = -1, descending: bool = False) -> None:
    outs = [ctx.out(0), ctx.out(1)]
    _rows(ctx, x, dim, "sort", outs, _n(x, dim), True, descending=bool(descending), stable=False)


@lowering(aten.sort.stable)
def sort_stable(
    ctx: LoweringContext, x: T, stable, dim: int = -1, descending: bool = False
) -> None:
    outs = [ctx.out(0), ctx.out(1)]
    attrs = {"descending": bool(descending), "stable": bool(stable)}
    _rows(ctx, x, dim, "sort", outs, _n(x, dim), True, **attrs)


@lowering(aten.topk.default)
def topk(ctx: LoweringContext, x: T, k: int, dim: int = -1, largest=True, sorted=True) -> None:  # noqa: A002
    outs = [ctx.out(0), ctx.out(1)]
    attrs = {"k": int(k), "largest": bool(largest), "sorted": bool(sorted)}
    _rows(ctx, x, dim, "topk", outs, int(k), True, **attrs)


@lowering(aten.kthvalue.default)
def kthvalue(ctx: LoweringContext, x: T, k: int, dim: int = -1, keepdim: bool = False) -> None:
    _rows(ctx, x, dim, "kthvalue", [ctx.out(0), ctx.out(1)], 1, bool(keepdim), k=int(k))


@lowering(aten.median.dim, aten.nanmedian.dim)
def median_dim(ctx: LoweringContext, x: T, dim: int, keepdim: bool = False) -> None:
    nan = ctx.op == aten.nanmedian.dim
    outs = [ctx.out(0), ctx.out(1)]
    _rows(ctx, x, dim, "median", outs, 1, bool(keepdim), ignore_nan=nan)


@lowering(aten.median.default, aten.nanmedian.default)
def median_all(ctx: LoweringContext, x: T) -> None:
    nan = ctx.op == aten.nanmedian.default
    _rows(ctx, x, None, "median", [ctx.out(0), None], 1, False, ignore_nan=nan)
