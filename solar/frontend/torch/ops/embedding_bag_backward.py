"""What autograd launches for ``nn.EmbeddingBag`` / ``F.embedding_bag`` (dense weight
gradient). ONE kernel each. Regular bags (``L`` ids per bag, offsets ``arange(0, n, L)``,
:func:`.bags.regular_bags`) in the nests below; explicit offsets (bags of data-dependent
sizes) the same with ``b·L + j`` replaced by id ``i`` and ``b`` by its bag ``{bag[i]}``, ``L``
by ``size[bag[i]]`` (recomputed from the offsets, :mod:`.bags`), and max skipping empty bags:

- ``_embedding_bag_backward`` (its CPU and CUDA kernels call ``_embedding_bag_dense_backward``
  inside, which a trace therefore never records): ``gW = 0``, then
  - sum: ``gW[{ids[b·L + j]}, d] += g[b, d]`` (``· psw[b·L + j]`` with per-sample weights),
  - mean: ``gW[{ids[b·L + j]}, d] += g[b, d] / L``,
  - max: ``gW[{max_indices[b, d]}, d] += g[b, d]`` (the forward's output 3);
  scatter-adds, counted as every scatter is (:mod:`solar.ir.cost`: the rows hit taken at their
  provable minimum);
- ``_embedding_bag_per_sample_weights_backward`` (mode sum):
  ``gpsw[b·L + j] = Σ_d g[b, d] · W[{ids[b·L + j]}, d]``.

``offset2bag`` and ``bag_size`` (the forward's bookkeeping) are not read: with regular bags
they are ``i // L`` and ``L``; with explicit offsets they are recomputed from the offsets.
``scale_grad_by_freq``, ``padding_idx``, ``sparse`` are refused (as the forward refuses
``padding_idx``).
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.bags import LAST_OFFSET, bag_rows, bag_sizes, regular_bags
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.ops.indexing import index_load, write
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr, Indirect, call

aten = torch.ops.aten
SUM, MEAN, MAX = 0, 1, 2


def _refuse(ctx: LoweringContext, scale_grad_by_freq: bool, padding_idx: int | None) -> None:
    if scale_grad_by_freq:
        ctx.fail("with scale_grad_by_freq=True is not supported")
    if padding_idx is not None and padding_idx >= 0:
        ctx.fail("with padding_idx is not supported")


def dense_backward(
    ctx: LoweringContext,
    g: T,
    ids: T,
    offsets: T,
    max_indices: T | None,
    mode: int,
    psw: T | None,
) -> None:
    out = ctx.out()
    nw, dim = out.shape
    n, bags = ids.numel, g.shape[0]
    L = regular_bags(ctx, n)
    acc = acc_dtype(out.dtype)
    if L is None and offsets.numel > bags:  # include_last_offset
        ctx.fail(LAST_OFFSET)
    if mode == MAX and L is None and n > 0 and bags > 0:  # explicit offsets
        irregular_max_backward(ctx, g, ids, offsets, max_indices, acc)
        return
    ctx.statement([("v", nw), ("d", dim)], out, ["v", "d"], Const(0.0))
    if n == 0 or bags == 0:
        return
    if mode == MAX:  # regular bags
        assert max_indices is not None
        value: Expr = ctx.load(g, ["b", "d"], acc)
        dims, target = [("b", bags), ("d", dim)], Indirect(index_load(max_indices, ["b", "d"]))
    elif L is not None:
        pos = Affine.of("b") * L + Affine.of("j")
        value = ctx.load(g, ["b", "d"], acc)
        if mode == MEAN:
            value = call("div", value, Const(float(L)))
        elif psw is not None:
            value = call("mul", value, ctx.load(psw, [pos], acc))
        dims, target = [("b", bags), ("j", L), ("d", dim)], Indirect(index_load(ids, [pos]))
    else:  # explicit offsets: each id's bag is data (bags.py)
        bag = Indirect(ctx.load(bag_rows(ctx, offsets, n, bags), ["i"]))
        value = ctx.load(g, [bag, "d"], acc)
        if mode == MEAN:
            size = bag_sizes(ctx, offsets, n, bags)
            value = call("div", value, ctx.load(size, [bag], acc))
        elif psw is not None:
            value = call("mul", value, ctx.load(psw, ["i"], acc))
        dims, target = [("i", n), ("d", dim)], Indirect(index_load(ids, ["i"]))
    write(ctx, dims, out, [target, "d"], value, reduce="sum", accumulate=True, dtype=acc)


def irregular_max_backward(
    ctx: LoweringContext, g: T, ids: T, offsets: T, max_indices: T, acc: str
) -> None:
    """``gW[{max_indices[b, d]}, d] += g[b, d]`` for the non-empty bags: an empty bag's
    gradient goes to a spare row of a kernel-local copy (index arithmetic), copied out."""
    out = ctx.out()
    nw, dim = out.shape
    bags = g.shape[0]
    grad_w = ctx.local("grad_weight", (nw + 1, dim), out.dtype)
    ctx.statement([("v", nw + 1), ("d", dim)], grad_w, ["v", "d"], Const(0.0))
    filled = call("gt", ctx.load(bag_sizes(ctx, offsets, ids.numel, bags), ["b"]), Const(0))
    row = Indirect(call("where", filled, index_load(max_indices, ["b", "d"]), Const(nw)))
    value = ctx.load(g, ["b", "d"], acc)
    dims = [("b", bags), ("d", dim)]
    ctx.statement(dims, grad_w, [row, "d"], value, reduce="sum", accumulate=True, dtype=acc)
    ctx.statement([("v", nw), ("d", dim)], out, ["v", "d"], ctx.load(grad_w, ["v", "d"]))


@lowering(aten._embedding_bag_backward.default)
def embedding_bag_backward(
    ctx: LoweringContext,
    g: T,
    ids: T,
    offsets: T,
    offset2bag: T,
    bag_size: T,
    max_indices: T,
    num_weights: int,
    scale_grad_by_freq: bool,
    mode: int,
    sparse: bool,
    per_sample_weights: T | None,
    padding_idx: int = -1,
) -> None:
    if sparse:
        ctx.fail("with sparse=True (a sparse gradient) is not supported")
    _refuse(ctx, scale_grad_by_freq, padding_idx)
    dense_backward(ctx, g, ids, offsets, max_indices, int(mode), per_sample_weights)


@lowering(aten._embedding_bag_per_sample_weights_backward.default)
def per_sample_weights_backward(
    ctx: LoweringContext,
    g: T,
    weight: T,
    ids: T,
    offsets: T,
    offset2bag: T,
    mode: int,
    padding_idx: int = -1,
) -> None:
    _refuse(ctx, False, padding_idx)
    if int(mode) != SUM:
        ctx.fail("in a mode other than sum is not supported (PyTorch allows only sum)")
    out = ctx.out()
    n, bags, dim = ids.numel, g.shape[0], g.shape[1]
    if n == 0:
        return
    L = regular_bags(ctx, n, at=3)
    acc = acc_dtype(out.dtype)
    if L is not None:
        pos: object = Affine.of("b") * L + Affine.of("j")
        dims = [("b", bags), ("j", L), ("d", dim, True)]
        bag: object = "b"
    elif offsets.numel > bags:  # include_last_offset
        ctx.fail(LAST_OFFSET)
    else:  # explicit offsets: each id's bag is data (bags.py)
        pos, dims = "i", [("i", n), ("d", dim, True)]
        bag = Indirect(ctx.load(bag_rows(ctx, offsets, n, bags), ["i"]))
    row = ctx.load(weight, [Indirect(index_load(ids, [pos])), "d"], acc)
    term = call("mul", ctx.load(g, [bag, "d"], acc), row)
    ctx.statement(dims, out, [pos], term, reduce="sum", dtype=acc)
