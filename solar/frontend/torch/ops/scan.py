"""Scans (prefix reductions) along one dim: ONE kernel each, one ``scan`` statement per output.

``out[.., i, ..] = ⊕_{i' <= i} x[.., i', ..]`` is a :class:`~solar.ir.program.Scan` over the
output's dims (not a guarded reduction, which would count n²/2 combines): the cost is one
combine per element beyond the first of each row.

- ``cumsum`` / ``cumprod`` (``dtype``; half inputs accumulate in float32, integers in int64);
- ``logcumsumexp`` (combine: ``log(exp(a) + exp(b))``);
- ``cummax`` / ``cummin``: ``values`` is a max/min scan; ``indices`` the index of the last
  element attaining the running extremum, which is a max scan of
  ``where(x[i] == values[i], i, 0)`` (an element equal to the running extremum starts a new
  run of it). The comparison is written as index arithmetic, reading that value from a
  kernel-local iota ``io[i] = i`` at ``{where(x == values, i, 0)}``, so the two outputs cost
  one combine each per element beyond a row's first: each of those outputs needs at least
  one operation (a real kernel does a compare and two selects per combine). NaN inputs: the
  values propagate NaN as PyTorch does, the indices may differ.

Reverse (``flip`` + scan + ``flip``) and exclusive scans are index arithmetic around these.
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import acc_dtype, dims_of, nest, norm_dim
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.program import Statement
from solar.ir.scalar import Const, Expr, Index, Indirect, call

aten = torch.ops.aten


def statement(ctx: LoweringContext, dims, out: T, index, expr: Expr, **kw) -> Statement | None:
    """:meth:`LoweringContext.statement` (which forwards every keyword of
    :meth:`solar.ir.program.ProgramBuilder.statement`); kept for the modules importing it."""
    return ctx.statement(dims, out, index, expr, **kw)


SCANS = {
    aten.cumsum.default: "sum",
    aten.cumprod.default: "prod",
    aten.logcumsumexp.default: "logsumexp",
}


def _scan(ctx: LoweringContext, x: T, dim: int, out: T, reduce: str, compute: str) -> None:
    d = dims_of(out.shape)
    if x.ndim == 0:  # a one-element scan is a copy
        ctx.statement([], out, [], ctx.load(x, [], compute), dtype=compute)
        return
    k = norm_dim(dim, x.ndim)
    load = ctx.load(x, d, compute)
    ctx.statement(nest(d, out.shape), out, d, load, reduce=reduce, scan=d[k], dtype=compute)


@lowering(*SCANS)
def scan(ctx: LoweringContext, x: T, dim: int, *args: object) -> None:
    out = ctx.out()
    _scan(ctx, x, dim, out, SCANS[ctx.op], acc_dtype(out.dtype))


@lowering(aten.cummax.default, aten.cummin.default)
def cumulative_extremum(ctx: LoweringContext, x: T, dim: int) -> None:
    values, indices = ctx.out(0), ctx.out(1)
    op = "max" if ctx.op == aten.cummax.default else "min"
    _scan(ctx, x, dim, values, op, acc_dtype(x.dtype))
    d = dims_of(x.shape)
    if x.ndim == 0:
        ctx.statement([], indices, [], Const(0))
        return
    k = norm_dim(dim, x.ndim)
    n = x.shape[k]
    iota = ctx.local("iota", (n,), "int64")
    ctx.statement([("i", n)], iota, ["i"], Index(Affine.of("i")))
    hit = call("eq", ctx.load(x, d), ctx.load(values, d))
    last = ctx.load(iota, [Indirect(call("where", hit, Index(Affine.of(d[k])), Const(0)))])
    ctx.statement(nest(d, x.shape), indices, d, last, reduce="max", scan=d[k])
