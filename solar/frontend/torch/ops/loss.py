"""Losses that PyTorch records as one aten operator: ONE kernel each.

``reduction`` is ``0`` (none: the elementwise loss), ``1`` (mean) or ``2`` (sum); a reduced loss
is one statement that sums the elementwise loss straight into the 0-dim output (kernel-local
float32 accumulator for half types), then one divide for the mean. Eager PyTorch writes the
elementwise loss to DRAM and reduces it in a second kernel; charging one kernel keeps the
unfused bound below eager's runtime, only less tight.

Elementwise losses (``d = x - y``):

- ``mse_loss``: ``d^2``
- ``huber_loss(delta)``: ``|d| < delta ? d^2 / 2 : delta (|d| - delta / 2)``
- ``smooth_l1_loss(beta)``: ``|d| < beta ? d^2 / (2 beta) : |d| - beta / 2`` (beta 0: ``|d|``)
- ``soft_margin_loss``: ``log1p(exp(-y x))``
- ``binary_cross_entropy``: ``w ((y - 1) max(log1p(-x), -100) - y max(log x, -100))``
- ``binary_cross_entropy_with_logits``: ``w ((1 - y) x - (1 + (pw - 1) y) logsigmoid(x))``
- ``xlogy`` (KL divergence): ``isnan(y) ? nan : x == 0 ? 0 : x log y``

The other ``torch.nn`` losses arrive decomposed into elementwise ops, reductions and norms
(``l1_loss``, ``kl_div``, ``poisson_nll_loss``, ``hinge_embedding_loss``,
``margin_ranking_loss``, ``triplet_margin_loss``, ``cosine_embedding_loss``,
``cosine_similarity``), which is what eager runs. ``gaussian_nll_loss`` checks ``var >= 0`` on
the data (a data-dependent ``torch.any``), which a traced program cannot contain.

``xlogy`` is what ``F.kl_div`` with ``log_target=False`` records.

``multi_margin_loss`` (``x`` of shape ``(N, C)`` or ``(C,)``, ``target`` ``(N,)`` or 0-dim)
gathers the target-class score ``x[n, {y[n]}]`` through an indirect index and sums the hinge
over the other classes. The class ``c == y`` is excluded exactly by multiplying its term with a
0/1 selector read from a two-element kernel-local table through the (free) index arithmetic
``c != y`` (as :mod:`.nll` does)::

    sel[0] = 0; sel[1] = 1                                             (kernel-local)
    s[n]  = Σ_c max(0, (margin - x[n, {y}]) + x[n, c])^p · sel[{c != y}]
    none: out[n] = s[n] · w[{y}] / C      sum / mean: out = Σ_n s[n] · w[{y}] / C (/ N)

Per element: an add, a max (a square for ``p = 2``), the selector multiply and the sum's add;
``margin - x[n, y]`` is per row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from solar.frontend.lowering.pointwise import pointwise
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.activation import log_sigmoid
from solar.frontend.torch.ops.conventions import acc_dtype, dims_of, nest
from solar.frontend.torch.ops.indexing import index_load
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr, Index, Indirect, call

aten = torch.ops.aten

NONE, MEAN, SUM = 0, 1, 2


def loss(
    ctx: LoweringContext, build: Callable[..., Expr], operands: Sequence[object], reduction: int
) -> None:
    """The elementwise loss ``build(*operands)`` (broadcast), reduced as ``reduction`` says."""
    if reduction == NONE:
        pointwise(ctx, build, operands)
        return
    if reduction not in (MEAN, SUM):
        ctx.fail(f"has an unknown reduction {reduction!r}")
    out = ctx.out()
    shape = torch.broadcast_shapes(*(x.shape for x in operands if isinstance(x, T)))
    dims = dims_of(shape, "r")
    acc = acc_dtype(out.dtype)
    exprs = [ctx.operand(x, dims, acc) for x in operands]
    total = out if out.dtype == acc and reduction == SUM else ctx.local("sum", (), acc)
    ctx.statement(nest(dims, shape, True), total, [], build(*exprs), reduce="sum", dtype=acc)
    if total is out:
        return
    result: Expr = ctx.load(total, [])
    if reduction == MEAN:
        result = call("div", result, Const(shape.numel()))
    ctx.statement([], out, [], result, dtype=acc)


def _loss_op(build: Callable[..., Expr], n_operands: int = 2) -> Callable[..., None]:
    def lower(ctx: LoweringContext, *args: object) -> None:
        operands, reduction, static = args[:n_operands], args[n_operands], args[n_operands + 1 :]
        loss(ctx, lambda *e: build(*e, *static), operands, int(reduction))  # type: ignore[arg-type]

    return lower


def half(e: Expr) -> Expr:
    return call("mul", e, Const(0.5))


def huber(x: Expr, y: Expr, delta: float) -> Expr:
    d = call("abs", call("sub", x, y))
    linear = call("mul", call("sub", d, Const(0.5 * delta)), Const(delta))
    return call("where", call("lt", d, Const(delta)), half(call("square", d)), linear)


def smooth_l1(x: Expr, y: Expr, beta: float) -> Expr:
    d = call("abs", call("sub", x, y))
    if beta == 0:
        return d
    quadratic = call("mul", call("square", d), Const(0.5 / beta))
    return call("where", call("lt", d, Const(beta)), quadratic, call("sub", d, Const(0.5 * beta)))


def bce(x: Expr, y: Expr, w: Expr | None) -> Expr:
    """PyTorch's form: ``(y - 1) max(log1p(-x), -100) - y max(log x, -100)``, times ``w``."""
    log_x = call("maximum", call("log", x), Const(-100.0))
    log_1mx = call("maximum", call("log1p", call("neg", x)), Const(-100.0))
    e = call("sub", call("mul", call("sub", y, Const(1)), log_1mx), call("mul", y, log_x))
    return e if w is None else call("mul", e, w)


def bce_with_logits(x: Expr, y: Expr, w: Expr | None, pos_weight: Expr | None) -> Expr:
    """``(1 - y) x - log_weight * logsigmoid(x)``, ``log_weight = 1 + (pos_weight - 1) y``."""
    ls = log_sigmoid(x)
    if pos_weight is not None:
        log_weight = call("add", call("mul", call("sub", pos_weight, Const(1)), y), Const(1))
        ls = call("mul", ls, log_weight)
    e = call("sub", call("mul", call("sub", Const(1), y), x), ls)
    return e if w is None else call("mul", e, w)


lowering(aten.mse_loss.default)(_loss_op(lambda x, y: call("square", call("sub", x, y))))
lowering(aten.huber_loss.default)(_loss_op(huber))
lowering(aten.smooth_l1_loss.default)(_loss_op(smooth_l1))
lowering(aten.soft_margin_loss.default)(
    _loss_op(lambda x, y: call("log1p", call("exp", call("neg", call("mul", y, x)))))
)


@lowering(aten.binary_cross_entropy.default)
def binary_cross_entropy(ctx: LoweringContext, x: T, y: T, weight, reduction: int = MEAN):
    loss(ctx, bce, [x, y, weight], int(reduction))


@lowering(aten.binary_cross_entropy_with_logits.default)
def binary_cross_entropy_with_logits(
    ctx: LoweringContext, x: T, y: T, weight, pos_weight, reduction: int = MEAN
):
    loss(ctx, bce_with_logits, [x, y, weight, pos_weight], int(reduction))


def xlogy_expr(x: Expr, y: Expr) -> Expr:
    product = call("where", call("eq", x, Const(0)), Const(0.0), call("mul", x, call("log", y)))
    return call("where", call("ne", y, y), y, product)


def xlogy(ctx: LoweringContext, x: object, y: object) -> None:
    """``xlogy(x, y)``: one elementwise kernel (``x`` or ``y`` may be a Python number)."""
    pointwise(ctx, xlogy_expr, [x, y])


XLOGY_OPS = (aten.xlogy.Tensor, aten.xlogy.Scalar_Self, aten.xlogy.Scalar_Other)


def register_xlogy() -> None:
    """Register :func:`xlogy` for ``aten.xlogy`` (``F.kl_div(..., log_target=False)``)."""
    lowering(*XLOGY_OPS)(xlogy)


register_xlogy()


@lowering(aten.multi_margin_loss.default)
def multi_margin_loss(
    ctx: LoweringContext,
    x: T,
    target: T,
    p: int = 1,
    margin: float = 1,
    weight: T | None = None,
    reduction: int = MEAN,
) -> None:
    if p not in (1, 2):
        ctx.fail(f"with p={p} (PyTorch supports 1 and 2)")
    if x.ndim not in (1, 2) or target.ndim != x.ndim - 1:
        ctx.fail(f"with input {x.shape} and target {target.shape}")
    if x.numel == 0:
        ctx.fail("on an empty input is not supported")
    out = ctx.out()
    acc = acc_dtype(x.dtype)
    classes = x.shape[-1]
    n = dims_of(target.shape, "n")
    rows = nest(n, target.shape)
    y = index_load(target, n)
    picked = ctx.load(x, [*n, Indirect(y)], acc)
    sel = ctx.local("select", (2,), acc)
    ctx.statement([], sel, [0], Const(0.0))
    ctx.statement([], sel, [1], Const(1.0))
    other = ctx.load(sel, [Indirect(call("ne", Index(Affine.of("c")), y))])
    hinge = call(
        "maximum",
        call("add", call("sub", Const(margin), picked), ctx.load(x, [*n, "c"], acc)),
        Const(0.0),
    )
    if p == 2:
        hinge = call("square", hinge)
    s = ctx.local("sum", target.shape, acc)
    term = call("mul", hinge, other)
    ctx.statement([*rows, ("c", classes, True)], s, n, term, reduce="sum")
    row: Expr = ctx.load(s, n)
    if weight is not None:
        row = call("mul", row, ctx.load(weight, [Indirect(y)], acc))
    if reduction == NONE:  # (a 1-dim input's loss is 0-dim in eager, (1,) in torch's meta)
        index = [*n, *[0] * (out.ndim - len(n))]
        ctx.statement(rows, out, index, call("div", row, Const(classes)), dtype=acc)
        return
    if reduction not in (MEAN, SUM):
        ctx.fail(f"has an unknown reduction {reduction!r}")
    total = ctx.local("total", (), acc)
    ctx.statement(nest(n, target.shape, True), total, [], row, reduce="sum")
    count = classes * (target.numel if reduction == MEAN else 1)
    ctx.statement([], out, [], call("div", ctx.load(total, []), Const(count)), dtype=acc)
