"""Dense linear algebra (``torch.linalg.*``): one kernel per operator, as cuSOLVER/cuBLAS run
them, built by :func:`solar.frontend.routines.linalg` (extern statements; classical operation
counts in :mod:`solar.ir.extern_linalg`). Every output the operator returns (factors, pivots,
``info``) is written by the routine, once."""

from __future__ import annotations

import torch

from solar.frontend.routines import Operand, linalg
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.registry import lowering

aten = torch.ops.aten


def _run(ctx: LoweringContext, routine: str, ops: list[Operand], parts, batch=None, **kw) -> None:
    outs = [(p, ctx.out(i) if p else None) for i, p in enumerate(parts)]
    a = ops[0].t
    shape = tuple(batch) if batch is not None else a.shape[:-2]
    linalg(ctx, routine, ops, outs, shape, dtype=a.dtype, **kw)


@lowering(aten.linalg_lu_factor_ex.default)
def lu_factor(ctx: LoweringContext, a: T, pivot: bool = True, check_errors=False) -> None:
    if not pivot:
        ctx.fail("without pivoting runs on CUDA only through a different routine; use pivot=True")
    _run(ctx, "lu", [Operand(a)], ["factors", "pivots", "info"])


@lowering(aten.linalg_cholesky_ex.default)
def cholesky(ctx: LoweringContext, a: T, upper: bool = False, check_errors=False) -> None:
    _run(ctx, "cholesky", [Operand(a)], ["factor", "info"], upper=bool(upper))


def _rhs(a: T, b: T) -> Operand:
    """A vector right-hand side when B has one dim less than A (torch.linalg.solve's rule)."""
    return Operand(b, vector=b.ndim == 1 or b.ndim == a.ndim - 1)


@lowering(aten._linalg_solve_ex.default)
def solve(ctx: LoweringContext, a: T, b: T, left: bool = True, check_errors=False) -> None:
    if not left:
        ctx.fail("with left=False (X A = B); transpose the system to solve A^T X^T = B^T")
    rhs = _rhs(a, b)
    batch = ctx.out(0).shape[: ctx.out(0).ndim - (1 if rhs.vector else 2)]
    _run(ctx, "solve", [Operand(a), rhs], ["x", "factors", "pivots", "info"], batch)


@lowering(aten.linalg_inv_ex.default)
def inv(ctx: LoweringContext, a: T, check_errors=False) -> None:
    _run(ctx, "inv", [Operand(a)], ["inverse", "info"])


@lowering(aten._linalg_det.default)
def det(ctx: LoweringContext, a: T) -> None:
    _run(ctx, "det", [Operand(a)], ["det", "factors", "pivots"])


@lowering(aten._linalg_slogdet.default)
def slogdet(ctx: LoweringContext, a: T) -> None:
    _run(ctx, "det", [Operand(a)], ["sign", "logabsdet", "factors", "pivots"])


@lowering(aten.linalg_qr.default)
def qr(ctx: LoweringContext, a: T, mode: str = "reduced") -> None:
    parts = ["q", "r"] if mode != "r" else [None, "r"]
    _run(ctx, "qr", [Operand(a)], parts, mode=str(mode), form_q=mode != "r")


@lowering(aten._linalg_eigh.default)
def eigh(ctx: LoweringContext, a: T, uplo: str = "L", compute_v: bool = True) -> None:
    parts = ["values", "vectors" if compute_v else None]
    _run(ctx, "eigh", [Operand(a)], parts, upper=uplo == "U", vectors=bool(compute_v))


@lowering(aten._linalg_svd.default)
def svd(ctx: LoweringContext, a: T, full_matrices=False, compute_uv=True, driver=None) -> None:
    parts = ["s", "u", "vh"] if compute_uv else ["s"]
    outs = [ctx.out(1), ctx.out(0), ctx.out(2)] if compute_uv else [ctx.out(1)]
    ops = [Operand(a)]
    linalg(
        ctx,
        "svd",
        ops,
        list(zip(parts, outs, strict=True)),
        a.shape[:-2],
        dtype=a.dtype,
        full_matrices=bool(full_matrices),
    )


@lowering(aten.linalg_solve_triangular.default)
def solve_triangular(ctx: LoweringContext, a: T, b: T, upper: bool, left=True, unit=False) -> None:
    if not left:
        ctx.fail("with left=False (X A = B); transpose the system to solve A^T X^T = B^T")
    attrs = {"upper": bool(upper), "unit": bool(unit)}
    _run(ctx, "triangular_solve", [Operand(a), Operand(b)], ["x"], ctx.out().shape[:-2], **attrs)


@lowering(aten.triangular_solve.default)
def triangular_solve(ctx: LoweringContext, b: T, a: T, upper=True, transpose=False, unit=False):
    attrs = {"upper": bool(upper), "unit": bool(unit), "transpose": bool(transpose)}
    batch = ctx.out().shape[:-2]
    _run(ctx, "triangular_solve", [Operand(a), Operand(b)], ["x", "coefficients"], batch, **attrs)


@lowering(aten._linalg_check_errors.default)
def check_errors(ctx: LoweringContext, info: T, api_name: str, is_matrix: bool) -> None:
    """The host's check of ``info`` (a copy of a few bytes to the host): no kernel, nothing
    charged (a lower bound)."""
