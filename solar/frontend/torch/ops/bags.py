"""``F.embedding_bag`` / ``nn.EmbeddingBag`` (modes sum, mean and max; what autograd launches
for them is :mod:`.embedding_bag_backward`). The regular bags of a 2-D input
(:func:`regular_bags`, :func:`embedding_bag`) keep their affine nests. Bags of
data-dependent sizes, explicit ``offsets`` (a 1-D input): the bag of each id is data:

- ``bag[i] = #{1 <= b < B : offsets[b] <= i}`` (kernel-local), ATen's ``offset2bag``: a
  scatter-add of ones at the offsets (``B − 1`` int adds) and a prefix sum (``n − 1``);
- ``size[b] = end[b] − offsets[b]`` (``end``: the next offset, or ``n``);
- forward: ``out = 0``, ``out[{bag[i]}, d] += W[{ids[i]}, d]`` (``· psw[i]``), a scatter-add
  counted as every scatter (the rows hit at their provable minimum); mean then
  ``out[b, d] = size[b] > 0 ? sum[b, d] / size[b] : 0`` (empty bags give 0, as in PyTorch).

- mode max: a scatter-max and the arg-max ids (:func:`irregular_max`); its backward adds
  ``g[b, d]`` into row ``max_indices[b, d]`` of the non-empty bags.

``include_last_offset`` is refused (:data:`LAST_OFFSET`).
"""

from __future__ import annotations

import torch
import torch.fx as fx

from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.ops.indexing import index_load, write
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr, Index, Indirect, call

aten = torch.ops.aten
SUM, MEAN, MAX = 0, 1, 2


# ------------------------------------------------------------------------------ regular bags
LAST_OFFSET = (
    "with include_last_offset=True is not supported (PyTorch's CPU forward ends the last bag "
    "at the last offset, its backward at the last id); pass offsets without the end"
)


def regular_bags(ctx: LoweringContext, n: int, at: int = 2) -> int | None:
    """The bag length ``L`` when the offsets (argument ``at``) are ``arange(0, n, L)`` (what
    ``embedding_bag`` records for a 2-D input); None when the bags have data-dependent sizes
    (:func:`irregular_forward`)."""
    node = ctx.node.args[at] if len(ctx.node.args) > at else None
    if isinstance(node, fx.Node) and node.target == aten.arange.start_step:
        start, end, step = (list(node.args) + [1])[:3]
        if start == 0 and end == n and isinstance(step, int) and step > 0 and n % step == 0:
            return step
    return None


@lowering(aten._embedding_bag_forward_only.default, aten._embedding_bag.default)
def embedding_bag(
    ctx: LoweringContext,
    weight: T,
    ids: T,
    offsets: T,
    scale_grad_by_freq: bool,
    mode: int,
    sparse: bool,
    per_sample_weights: T | None,
    include_last_offset: bool,
    padding_idx: int = -1,
) -> None:
    """Regular bags of ``L`` ids: ``out[b, d] = ⊕_j weight[{ids[b*L + j]}, d]`` (sum, mean,
    max; ``per_sample_weights`` scale the rows of a sum). Outputs 1-3 (``offset2bag``,
    ``bag_size``, ``max_indices``) are backward bookkeeping: only ``max_indices`` of mode max
    is computed (the id of the first maximal row per bag and column). Explicit offsets (bags
    of data-dependent sizes): :func:`irregular_forward`."""
    if include_last_offset:
        ctx.fail(LAST_OFFSET)
    if padding_idx is not None and padding_idx >= 0:
        ctx.fail("with padding_idx is not supported")
    n = ids.numel
    L = regular_bags(ctx, n)
    if L is None:
        irregular_forward(ctx, weight, ids, offsets, int(mode), per_sample_weights)
        return
    out = ctx.out(0)
    B, D = out.shape
    bag = Affine.of("b") * L + Affine.of("j")
    dims = [("b", B), ("d", D), ("j", L, True)]
    row = ctx.load(weight, [Indirect(index_load(ids, [bag])), "d"], acc_dtype(out.dtype))
    if mode == 0:
        expr = row
        if per_sample_weights is not None:
            expr = call("mul", row, ctx.load(per_sample_weights, [bag], acc_dtype(out.dtype)))
        ctx.statement(dims, out, ["b", "d"], expr, reduce="sum", dtype=acc_dtype(out.dtype))
    elif mode == 1:
        acc = ctx.local("sum", out.shape, acc_dtype(out.dtype))
        ctx.statement(dims, acc, ["b", "d"], row, reduce="sum")
        mean = call("div", ctx.load(acc, ["b", "d"]), Const(L))
        ctx.statement([("b", B), ("d", D)], out, ["b", "d"], mean, dtype=acc.dtype)
    elif mode == 2:
        ctx.statement(dims, out, ["b", "d"], row, reduce="max", dtype=acc_dtype(out.dtype))
        first = ctx.local("argmax", out.shape, "int64")
        hit = call("eq", row, ctx.load(out, ["b", "d"], acc_dtype(out.dtype)))
        pos = call("where", hit, Index(Affine.of("j")), Const(L))
        ctx.statement(dims, first, ["b", "d"], pos, reduce="min")
        chosen = index_load(
            ids, [Indirect(call("add", Index(Affine.of("b") * L), ctx.load(first, ["b", "d"])))]
        )
        ctx.statement([("b", B), ("d", D)], ctx.out(3), ["b", "d"], chosen)
    else:
        ctx.fail(f"with mode {mode} is not supported")


def bag_rows(ctx: LoweringContext, offsets: T, n: int, bags: int) -> T:
    """The bag of each of the ``n`` ids (kernel-local int64 ``(n,)``)."""
    marks = ctx.local("marks", (n + 1,), "int64")
    ctx.statement([("i", n + 1)], marks, ["i"], Const(0))
    if bags > 1:
        start = Indirect(index_load(offsets, [Affine.of("b") + 1]))
        ctx.statement([("b", bags - 1)], marks, [start], Const(1), reduce="sum", accumulate=True)
    bag = ctx.local("bag", (n,), "int64")
    ctx.statement([("i", n)], bag, ["i"], ctx.load(marks, ["i"]), reduce="sum", scan="i")
    return bag


def bag_sizes(ctx: LoweringContext, offsets: T, n: int, bags: int) -> T:
    """``size[b]`` (kernel-local int64 ``(bags,)``): the next offset, or ``n`` for the last
    bag (see :func:`bag_rows`), minus the bag's offset."""
    size = ctx.local("size", (bags,), "int64")
    nxt = Affine.of("b") + 1
    width = call("sub", index_load(offsets, [nxt]), index_load(offsets, ["b"]))
    ctx.statement([("b", bags - 1)], size, ["b"], width)
    last = Affine.of("b") + (bags - 1)
    tail = call("sub", Const(n), index_load(offsets, [last]))
    ctx.statement([("b", 1)], size, [last], tail)
    return size


def irregular_forward(
    ctx: LoweringContext, weight: T, ids: T, offsets: T, mode: int, psw: T | None
) -> None:
    """``_embedding_bag`` with explicit offsets, modes sum and mean (outputs 1-3, ATen's
    backward bookkeeping, are not computed: the backward recomputes what it needs)."""
    if mode == MAX:
        irregular_max(ctx, weight, ids, offsets)
        return
    out = ctx.out(0)
    bags, dim = out.shape
    n = ids.numel
    acc = acc_dtype(out.dtype)
    rows = [("b", bags), ("d", dim)]
    total = out if mode == SUM and acc == out.dtype else ctx.local("sum", out.shape, acc)
    ctx.statement(rows, total, ["b", "d"], Const(0.0))
    if n == 0 or bags == 0:
        if total is not out:
            ctx.statement(rows, out, ["b", "d"], Const(0.0))
        return
    bag = bag_rows(ctx, offsets, n, bags)
    row: Expr = ctx.load(weight, [Indirect(index_load(ids, ["i"])), "d"], acc)
    if psw is not None:
        row = call("mul", row, ctx.load(psw, ["i"], acc))
    target = [Indirect(ctx.load(bag, ["i"])), "d"]
    write(ctx, [("i", n), ("d", dim)], total, target, row, reduce="sum", accumulate=True)
    if mode == MEAN:
        size = bag_sizes(ctx, offsets, n, bags)
        count = ctx.load(size, ["b"], acc)
        mean = call("div", ctx.load(total, ["b", "d"]), count)
        value = call("where", call("gt", ctx.load(size, ["b"]), Const(0)), mean, Const(0.0))
        ctx.statement(rows, out, ["b", "d"], cast(value, acc, out.dtype), dtype=acc)
    elif total is not out:
        ctx.statement(rows, out, ["b", "d"], cast(ctx.load(total, ["b", "d"]), acc, out.dtype))


def irregular_max(ctx: LoweringContext, weight: T, ids: T, offsets: T) -> None:
    """Mode max with explicit offsets: ``mx = −inf``, ``mx[{bag[i]}, d] max= W[{ids[i]}, d]``
    (a scatter-max); ``out = size > 0 ? mx : 0``; output 3 (``max_indices``, what the
    backward reads) the id of the first maximal row, ``first[{bag[i]}, d] min= (row is the
    max ? i : n)``, 0 for an empty bag (as PyTorch's CPU kernel leaves it)."""
    out, max_indices = ctx.out(0), ctx.out(3)
    bags, dim = out.shape
    n = ids.numel
    acc = acc_dtype(out.dtype)
    rows = [("b", bags), ("d", dim)]
    if n == 0 or bags == 0:
        ctx.statement(rows, out, ["b", "d"], Const(0.0))
        ctx.statement(rows, max_indices, ["b", "d"], Const(0))
        return
    bag = Indirect(ctx.load(bag_rows(ctx, offsets, n, bags), ["i"]))
    mx = ctx.local("max", out.shape, acc)
    ctx.statement(rows, mx, ["b", "d"], Const(float("-inf")))
    row: Expr = ctx.load(weight, [Indirect(index_load(ids, ["i"])), "d"], acc)
    pairs = [("i", n), ("d", dim)]
    ctx.statement(pairs, mx, [bag, "d"], row, reduce="max", accumulate=True)
    filled = call("gt", ctx.load(bag_sizes(ctx, offsets, n, bags), ["b"]), Const(0))
    value = call("where", filled, ctx.load(mx, ["b", "d"]), Const(0.0))
    ctx.statement(rows, out, ["b", "d"], cast(value, acc, out.dtype), dtype=acc)
    first = ctx.local("argmax", out.shape, "int64")
    ctx.statement(rows, first, ["b", "d"], Const(n))
    hit = call("eq", row, ctx.load(mx, [bag, "d"]))
    pos = call("where", hit, Index(Affine.of("i")), Const(n))
    ctx.statement(pairs, first, [bag, "d"], pos, reduce="min", accumulate=True)
    at = Indirect(call("minimum", ctx.load(first, ["b", "d"]), Const(n - 1)))
    chosen = call("where", filled, index_load(ids, [at]), Const(0))
    ctx.statement(rows, max_indices, ["b", "d"], chosen)
