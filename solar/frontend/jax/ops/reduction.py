"""Reductions (heavy: each a kernel, with elementwise producers and consumers fused in).

- ``reduce_sum/max/min/prod/and/or``: ``out[kept] op= x[kept, reduced]``.
- ``argmax/argmin``: the extremum into a kernel-local tensor, then the first index attaining it
  (``min`` over ``where(x == m, r, R)``).
- ``cumsum/cumprod/cummax/cummin/cumlogsumexp``: a :class:`~solar.ir.program.Scan` statement
  (one combine per element beyond a row's first); ``reverse`` reads and writes at ``n-1-i``.
- ``reduce_window_sum/max/min`` (pooling): ``out[o] op= x[s*o + d*w - lo]``, padding guarded.
- ``reduce``/``reduce_window`` with a jaxpr body: when the body is a single add/max/min/mul.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from solar.frontend.jax.lower import LoweringContext, V
from solar.frontend.jax.registry import lowering
from solar.frontend.layout import dims_of, nest
from solar.frontend.lowering.extern_rows import extern_rows
from solar.ir.affine import Affine
from solar.ir.program import Dim, Guard
from solar.ir.scalar import Const, Index, call

REDUCTIONS = {
    "reduce_sum": "sum",
    "reduce_max": "max",
    "reduce_min": "min",
    "reduce_prod": "prod",
    "reduce_and": "min",
    "reduce_or": "max",
}


class Nest:
    """Loop dims of reducing ``x`` over ``axes``: ``i<k>`` kept, ``r<k>`` reduced."""

    def __init__(self, x: V, axes: Sequence[int]) -> None:
        axes = {a % max(x.ndim, 1) for a in axes}
        self.names = [f"r{k}" if k in axes else f"i{k}" for k in range(x.ndim)]
        self.dims = [Dim(n, x.shape[k], k in axes) for k, n in enumerate(self.names)]
        self.out_index = [n for k, n in enumerate(self.names) if k not in axes]
        self.reduced = [self.names[k] for k in sorted(axes)]
        self.count = prod(x.shape[k] for k in axes)


@lowering(*REDUCTIONS, kind="heavy")
def reduce(ctx: LoweringContext, x: V, *, axes, **_: object) -> None:
    n = Nest(x, axes)
    out = ctx.out()
    ctx.statement(
        n.dims, out, n.out_index, ctx.operand_at(x, n.names, out.dtype), reduce=REDUCTIONS[ctx.prim]
    )


@lowering("argmax", "argmin", kind="heavy")
def argreduce(ctx: LoweringContext, x: V, *, axes, index_dtype=None, **_: object) -> None:
    op = "max" if ctx.prim == "argmax" else "min"
    n = Nest(x, axes)
    out = ctx.out()
    t = ctx.tensor(x)
    values = ctx.local("values", out.shape, t.dtype)
    ctx.statement(n.dims, values, n.out_index, ctx.load(t, n.names), reduce=op)
    coefs, stride = {}, 1
    for r in reversed(n.reduced):
        coefs[r] = stride
        stride *= x.shape[n.names.index(r)]
    hit = call("eq", ctx.load(t, n.names), ctx.load(values, n.out_index))
    first = call("where", hit, Index(Affine.build(coefs)), Const(n.count))
    ctx.statement(n.dims, out, n.out_index, first, reduce="min", dtype=t.dtype)


CUMULATIVE = {
    "cumsum": "sum",
    "cumprod": "prod",
    "cummax": "max",
    "cummin": "min",
    "cumlogsumexp": "logsumexp",
}


@lowering(*CUMULATIVE, kind="heavy")
def cumulative(ctx: LoweringContext, x: V, *, axis: int, reverse: bool = False, **_) -> None:
    """A ``scan`` statement along ``axis``; ``reverse`` reads and writes at ``n - 1 - i``."""
    out = ctx.out()
    axis %= x.ndim
    dims = dims_of(x.shape)
    n = x.shape[axis]
    index = [n - 1 - Affine.of(d) if reverse and k == axis else d for k, d in enumerate(dims)]
    ctx.statement(
        nest(dims, x.shape),
        out,
        index,
        ctx.operand_at(x, index, out.dtype),
        reduce=CUMULATIVE[ctx.prim],
        scan=dims[axis],
    )


WINDOWS = {"reduce_window_sum": "sum", "reduce_window_max": "max", "reduce_window_min": "min"}


def window_reduce(
    ctx: LoweringContext,
    x: V,
    op: str,
    window_dimensions,
    window_strides,
    padding,
    base_dilation,
    window_dilation,
) -> None:
    if any(int(b) != 1 for b in base_dilation or ()):
        ctx.fail("with base dilation is not supported")
    out = ctx.out()
    t = ctx.tensor(x)
    dil = window_dilation or (1,) * x.ndim
    par, red, index, guards = [], [], [], []
    for k in range(x.ndim):
        o, w = f"o{k}", f"w{k}"
        par.append(Dim(o, out.shape[k]))
        e = Affine.of(o) * int(window_strides[k]) - int(padding[k][0])
        if int(window_dimensions[k]) > 1:
            red.append(Dim(w, int(window_dimensions[k]), True))
            e = e + Affine.of(w) * int(dil[k])
        extents = {o: out.shape[k], w: int(window_dimensions[k])}
        lo, hi = e.bounds(extents)
        if lo < 0 or hi >= x.shape[k]:
            guards.append(Guard(e, 0, x.shape[k]))
        index.append(e)
    outi = [d.name for d in par]
    ctx.statement(par + red, out, outi, ctx.load(t, index, out.dtype), reduce=op, guards=guards)


@lowering(*WINDOWS, kind="heavy")
def reduce_window(
    ctx: LoweringContext,
    x: V,
    *,
    window_dimensions,
    window_strides,
    padding,
    base_dilation=None,
    window_dilation=None,
    **_: object,
) -> None:
    window_reduce(
        ctx,
        x,
        WINDOWS[ctx.prim],
        window_dimensions,
        window_strides,
        padding,
        base_dilation,
        window_dilation,
    )


MONOIDS = {"add": "sum", "max": "max", "min": "min", "mul": "prod", "and": "min", "or": "max"}


def monoid(ctx: LoweringContext, jaxpr: object) -> str:
    """The reduction operator of a body ``lambda a, b: op(a, b)``."""
    body = getattr(jaxpr, "jaxpr", jaxpr)
    eqns = body.eqns  # type: ignore[attr-defined]
    if len(eqns) == 1 and eqns[0].primitive.name in MONOIDS:
        return MONOIDS[eqns[0].primitive.name]
    ctx.fail("with a body other than one add/max/min/mul is not supported")


@lowering("reduce", kind="heavy")
def generic_reduce(ctx: LoweringContext, *args: V, computation=None, jaxpr=None, dimensions, **_):
    if len(args) != 2:
        ctx.fail("of several operands at once (a variadic reduce) is not supported")
    x, init = args
    op = monoid(ctx, jaxpr if jaxpr is not None else computation)
    n = Nest(x, dimensions)
    out = ctx.out()
    ctx.statement(n.dims, out, n.out_index, ctx.operand_at(x, n.names, out.dtype), reduce=op)
    _combine_init(ctx, out, op, init)


@lowering("reduce_window", kind="heavy")
def generic_reduce_window(ctx: LoweringContext, *args: V, jaxpr, consts=(), **params):
    if len(args) != 2:
        ctx.fail("of several operands at once is not supported")
    x, init = args
    op = monoid(ctx, jaxpr)
    window_reduce(
        ctx,
        x,
        op,
        params["window_dimensions"],
        params["window_strides"],
        params["padding"],
        params.get("base_dilation"),
        params.get("window_dilation"),
    )
    _combine_init(ctx, ctx.out(), op, init)


IDENTITIES = {"sum": (0,), "prod": (1,), "max": (float("-inf"), False), "min": (float("inf"), True)}


def _combine_init(ctx: LoweringContext, out, op: str, init: V) -> None:
    """Combine the init value into the result unless it is the operator's identity."""
    v = init.scalar()
    if v is not None and (v in IDENTITIES[op] or (op in ("max", "min") and _extreme(v, op))):
        return
    dims = dims_of(out.shape)
    fn = {"sum": "add", "prod": "mul", "max": "maximum", "min": "minimum"}[op]
    expr = call(fn, ctx.load(out, dims), ctx.operand(init, [], out.dtype))
    ctx.statement(nest(dims, out.shape), out, dims, expr)


def _extreme(v: object, op: str) -> bool:
    import numpy as np

    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return f == (-np.inf if op == "max" else np.inf) or (isinstance(v, int) and abs(v) >= 2**31 - 1)


# ------------------------------------------------------------------------- sort and top_k
def _extern_rows(
    ctx: LoweringContext, x: V, axis: int, routine: str, out, m: int, **attrs: object
) -> None:
    """``out[.., p, ..] = routine(row)[p]`` for the rows of ``x`` along ``axis``
    (:func:`~solar.frontend.lowering.extern_rows.extern_rows`; a known ``x`` is read as
    constants)."""
    load = lambda index: ctx.operand_at(x, index, None)  # noqa: E731
    extern_rows(ctx, x.shape, [axis], load, [(routine, out)], m, **attrs)


@lowering("sort", kind="heavy")
def sort(ctx: LoweringContext, *ops: V, dimension: int, is_stable: bool, num_keys: int, **_):
    """Sort along ``dimension`` by the first operand (an extern ``sort`` statement); the
    other operands follow the permutation (the sorted positions, gathered). An operand that
    is an iota along the dimension (``argsort``) is the permutation itself."""
    from solar.ir.scalar import Indirect, Load

    if num_keys != 1:
        ctx.fail(f"with {num_keys} sort keys is not supported (one key only)")
    x = ops[0]
    axis = dimension % x.ndim
    n = x.shape[axis]
    _extern_rows(ctx, x, axis, "sort.values", ctx.out(0), n, stable=bool(is_stable))
    if len(ops) == 1:
        return
    perm = ctx.local("perm", x.shape, "int64")
    _extern_rows(ctx, x, axis, "sort.indices", perm, n, stable=bool(is_stable))
    dims = dims_of(x.shape)
    for k, v in enumerate(ops[1:], start=1):
        out = ctx.out(k)
        if _is_iota(v, axis):
            expr = ctx.load(perm, dims, out.dtype)
        else:
            src = [Indirect(Load(perm.name, tuple(Affine.of(d) for d in dims))) if j == axis
                   else d for j, d in enumerate(dims)]  # fmt: skip
            expr = ctx.load(ctx.tensor(v), src, out.dtype)
        ctx.statement(nest(dims, x.shape), out, dims, expr)


def _is_iota(v: V, axis: int) -> bool:
    import numpy as np

    if v.known is None:
        return False
    shape = [1] * v.ndim
    shape[axis] = v.shape[axis]
    ramp = np.arange(v.shape[axis]).reshape(shape)
    return bool(np.array_equal(np.broadcast_to(ramp, v.shape), v.known))


@lowering("top_k", kind="heavy")
def top_k(ctx: LoweringContext, x: V, *args: V, k: int | None = None, axis: int = -1, **_):
    """The ``k`` largest along the last axis, sorted: extern ``topk`` statements."""
    if k is None:
        k = ctx.out_avals[0][0][axis]
    axis %= x.ndim
    attrs = dict(k=int(k), largest=True, sorted=True)
    _extern_rows(ctx, x, axis, "topk.values", ctx.out(0), int(k), **attrs)
    _extern_rows(ctx, x, axis, "topk.indices", ctx.out(1), int(k), **attrs)
