"""Dense linear algebra: the primitives ``lu``, ``cholesky``, ``triangular_solve``, ``qr``,
``eigh``, ``svd`` and ``lu_pivots_to_permutation`` (what ``jnp.linalg``/``jax.scipy.linalg``
emit), one kernel each as cuSOLVER/cuBLAS run them (:func:`solar.frontend.routines.linalg`;
classical counts in :mod:`solar.ir.extern_linalg`), and ``custom_linear_solve`` (the forward
solve is its ``solve`` jaxpr, lowered in place)."""

from __future__ import annotations

from solar.frontend.jax.lower import LoweringContext, V
from solar.frontend.jax.registry import lowering
from solar.frontend.layout import T
from solar.frontend.routines import Operand, linalg
from solar.ir.dtypes import is_complex


def _run(ctx: LoweringContext, routine: str, ops: list[Operand], parts, **attrs) -> None:
    a = ops[0].t
    if is_complex(a.dtype):
        ctx.fail(f"of a complex matrix ({a.dtype}) is not lowered; real matrices only")
    outs = [(p, ctx.out(i) if p else None) for i, p in enumerate(parts)]
    batch = a.shape[:-2]
    linalg(ctx, routine, ops, outs, batch, dtype=a.dtype, **attrs)


@lowering("lu", kind="heavy")
def lu(ctx: LoweringContext, a: V) -> None:
    _run(ctx, "lu", [Operand(ctx.tensor(a))], ["factors", "pivots0", "permutation"])


@lowering("cholesky", kind="heavy")
def cholesky(ctx: LoweringContext, a: V, **params: object) -> None:
    """The lower factor; XLA writes the upper triangle as it finds it (jnp masks it after)."""
    _run(ctx, "cholesky", [Operand(ctx.tensor(a))], ["factor"])


@lowering("triangular_solve", kind="heavy")
def triangular_solve(
    ctx: LoweringContext,
    a: V,
    b: V,
    *,
    left_side: bool,
    lower: bool,
    transpose_a: bool,
    conjugate_a: bool,
    unit_diagonal: bool,
) -> None:
    attrs = {
        "upper": not lower,
        "unit": bool(unit_diagonal),
        "transpose": bool(transpose_a) != (not left_side),
        "left": bool(left_side),
    }
    rhs = Operand(ctx.tensor(b), transposed=not left_side)
    _run(ctx, "triangular_solve", [Operand(ctx.tensor(a)), rhs], ["x"], **attrs)


@lowering("qr", kind="heavy")
def qr(ctx: LoweringContext, a: V, *, full_matrices: bool, pivoting=False, **params) -> None:
    if pivoting:
        ctx.fail("with column pivoting is not lowered; use pivoting=False")
    mode = "complete" if full_matrices else "reduced"
    _run(ctx, "qr", [Operand(ctx.tensor(a))], ["q", "r"], mode=mode)


@lowering("eigh", kind="heavy")
def eigh(ctx: LoweringContext, a: V, *, lower: bool, subset_by_index=None, **params) -> None:
    if subset_by_index is not None and tuple(subset_by_index) != (0, a.shape[-1]):
        ctx.fail("with subset_by_index is not lowered; compute every eigenpair")
    _run(ctx, "eigh", [Operand(ctx.tensor(a))], ["vectors", "values"], upper=not lower)


@lowering("svd", kind="heavy")
def svd(ctx: LoweringContext, a: V, *, full_matrices: bool, compute_uv: bool, **params) -> None:
    if params.get("subset_by_index") not in (None, (0, min(a.shape[-2:]))):
        ctx.fail("with subset_by_index is not lowered; compute every singular value")
    parts = ["s", "u", "vh"] if compute_uv else ["s"]
    _run(ctx, "svd", [Operand(ctx.tensor(a))], parts, full_matrices=bool(full_matrices))


@lowering("lu_pivots_to_permutation", kind="light")
def lu_pivots_to_permutation(ctx: LoweringContext, pivots: V, *, permutation_size: int) -> None:
    """The swaps applied in order (an extern routine over each row of pivots: data movement,
    no arithmetic)."""
    p = ctx.tensor(pivots)
    out = ctx.out()
    if permutation_size != p.shape[-1]:
        ctx.fail("with a permutation longer than its pivots is not lowered")
    _permutation(ctx, p, out)


def _permutation(ctx: LoweringContext, p: T, out: T) -> None:
    batch = out.shape[:-1]
    bd = [f"b{i}" for i in range(len(batch))]
    n = out.shape[-1]
    ctx.statement(
        [*zip(bd, batch), ("p", n), ("r", n, True)],
        out,
        [*bd, "p"],
        ctx.load(p, [*bd, "r"]),
        extern="linalg.pivots_to_permutation",
        extern_attrs={"m": n, "n": n},
    )


@lowering("custom_linear_solve", kind="control")
def custom_linear_solve(ctx: LoweringContext, *args: V, const_lengths, jaxprs) -> None:
    """The forward solve: the ``solve`` jaxpr on its constants and the right-hand side."""
    skip = const_lengths.matvec + const_lengths.vecmat
    consts = list(args[skip : skip + const_lengths.solve])
    rhs = list(args[sum(const_lengths) :])
    for i, v in enumerate(ctx.lower_jaxpr(jaxprs.solve, [*consts, *rhs])):
        ctx.bind_out(i, v)
