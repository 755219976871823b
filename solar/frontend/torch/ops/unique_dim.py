"""``torch.unique(x, dim=d)`` (``aten.unique_dim``): the distinct slices of ``x`` along ``d``,
sorted lexicographically, with the inverse and counts when asked for. ONE kernel. The number
``m`` of distinct slices is data-dependent: traced at its smallest possible value (1 for a
non-empty ``x``) unless observed (:mod:`solar.frontend.torch.sizes`), and the report says so.

With ``n = x.shape[d]`` slices of ``K`` elements each (the other dims, row-major, as PyTorch
flattens them), CUDA's kernel sorts the slice indices with a lexicographic comparator, marks
where a slice differs from the one before, and gathers. Here, with the routines of
:mod:`solar.ir.extern` (no operation count provable for a sort, so 0; see there):

1. ``xs[s, c] = x[.., s, ..]``: ``x`` read once into kernel-local ``(n, K)``;
2. the lexicographic order, least significant column first: ``K`` stable sorts
   (``sort.indices``) of ``xs[perm[s], c]`` for ``c = K−1 .. 0``, each composing ``perm``;
3. ``ys = xs[perm]``; ``start[s] = 1`` where slice ``s`` of ``ys`` differs from slice ``s − 1``
   (``start[0] = 1``): the comparison is index arithmetic of a scatter of ones (counted 0,
   as the sort's comparisons: a short-circuiting compare needs between 1 and ``K`` per pair,
   so no per-element count is provable beyond one);
4. ``group = cumsum(start)`` (a scan: ``n − 1`` int adds); the ``m`` positions of the starts
   (``nonzero``, at the traced ``m``);
5. ``values[.., u, ..] = ys[pos[u], c]``; ``inverse[perm[s]] = group[s] − 1`` (``n``
   subtracts, then through the inverse permutation, so the write is affine);
   ``counts[u] = pos[u + 1] − pos[u]`` (``pos[m] = n``; ``m`` subtracts).

DRAM traffic is exact: ``x`` read once, each output written once.
"""

from __future__ import annotations

import math

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import norm_dim
from solar.frontend.torch.ops.dynamic import coordinates
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Index, Indirect, call

aten = torch.ops.aten
MAX_SLICE = 256  # elements per slice: one stable sort each, unrolled


def _gather_rows(ctx: LoweringContext, src: T, perm: T, stem: str) -> T:
    """``out[s, c] = src[perm[s], c]`` (kernel-local)."""
    n, k = src.shape
    out = ctx.local(stem, (n, k), src.dtype)
    row = Indirect(ctx.load(perm, ["s"]))
    ctx.statement([("s", n), ("c", k)], out, ["s", "c"], ctx.load(src, [row, "c"]))
    return out


def lexicographic_order(ctx: LoweringContext, xs: T) -> T:
    """The stable lexicographic order of the rows of ``xs`` (kernel-local int64 ``(n,)``):
    one stable sort per column, last column first."""
    n, k = xs.shape
    perm = ctx.local("perm0", (n,), "int64")
    ctx.statement([("s", n)], perm, ["s"], Index(Affine.of("s")))
    for c in reversed(range(k)):
        keys = ctx.local(f"keys{c}", (n,), xs.dtype)
        ctx.statement([("s", n)], keys, ["s"], ctx.load(xs, [Indirect(ctx.load(perm, ["s"])), c]))
        order = ctx.local(f"order{c}", (n,), "int64")
        attrs = {"descending": False, "stable": True}
        dims = [("p", n), ("r", n, True)]
        ctx.statement(
            dims, order, ["p"], ctx.load(keys, ["r"]), extern="sort.indices", extern_attrs=attrs
        )
        nxt = ctx.local(f"perm{k - c}", (n,), "int64")
        ctx.statement([("s", n)], nxt, ["s"], ctx.load(perm, [Indirect(ctx.load(order, ["s"]))]))
        perm = nxt
    return perm


@lowering(aten.unique_dim.default)
def unique_dim(
    ctx: LoweringContext, x: T, dim: int, sorted=True, return_inverse=False, return_counts=False
) -> None:  # noqa: A002
    values, inverse, counts = ctx.outs()
    if x.ndim == 0:
        ctx.fail("of a 0-dim tensor is not supported (it has no dim to take slices along)")
    d = norm_dim(dim, x.ndim)
    n = x.shape[d]
    lead, rest = x.shape[:d], x.shape[d + 1 :]
    k = math.prod(lead) * math.prod(rest)
    m = values.shape[d]  # type: ignore[union-attr]
    if n == 0:
        return
    if k == 0:
        ctx.fail("with empty slices is not supported (PyTorch refuses it too)")
    if k > MAX_SLICE:
        ctx.fail(
            f"with slices of {k} elements is not supported (at most {MAX_SLICE}: one sort "
            "per element); pack each slice into fewer elements (an integer key) first"
        )
    other = [f"o{j}" for j in range(x.ndim - 1)]
    col = _column(other, (*lead, *rest))
    xs = ctx.local("slices", (n, k), x.dtype)
    ctx.statement(
        [("s", n), *zip(other, (*lead, *rest), strict=True)],
        xs,
        ["s", col],
        ctx.load(x, [*other[:d], "s", *other[d:]]),
    )
    perm = lexicographic_order(ctx, xs)
    ys = _gather_rows(ctx, xs, perm, "sorted")

    start = ctx.local("start", (n + 1,), "int64")  # slot n: the pairs that do not differ
    ctx.statement([("s", 1)], start, ["s"], Const(1))
    ctx.statement([("s", n - 1)], start, [Affine.of("s") + 1], Const(0))
    differs = call("ne", ctx.load(ys, [Affine.of("s") + 1, "c"]), ctx.load(ys, ["s", "c"]))
    at = Indirect(call("where", differs, Index(Affine.of("s") + 1), Const(n)))
    ctx.statement([("s", n - 1), ("c", k)], start, [at], Const(1))
    group = ctx.local("group", (n,), "int64")
    ctx.statement([("s", n)], group, ["s"], ctx.load(start, ["s"]), reduce="sum", scan="s")
    (pos,) = coordinates(ctx, ctx.load(start, ["r0"]), (n,), m)

    row = Indirect(ctx.load(pos, ["u"]))
    ctx.statement(
        [*zip(other[:d], lead, strict=True), ("u", m), *zip(other[d:], rest, strict=True)],
        values,  # type: ignore[arg-type]
        [*other[:d], "u", *other[d:]],
        ctx.load(ys, [row, col]),
    )
    if inverse is not None and inverse.numel == n:
        ctx.statement([("s", n)], group, ["s"], call("sub", ctx.load(group, ["s"]), Const(1)))
        back = ctx.local("inverse_perm", (n,), "int64")
        ctx.statement([("s", n)], back, [Indirect(ctx.load(perm, ["s"]))], Index(Affine.of("s")))
        slot = ctx.load(group, [Indirect(ctx.load(back, ["s"]))])
        ctx.statement([("s", n)], inverse, ["s"], slot)
    if counts is not None and counts.numel == m and m > 0:
        ends = ctx.local("ends", (m + 1,), "int64")
        ctx.statement([("u", m)], ends, ["u"], ctx.load(pos, ["u"]))
        ctx.statement([("u", 1)], ends, [m], Const(n))
        width = call("sub", ctx.load(ends, [Affine.of("u") + 1]), ctx.load(ends, ["u"]))
        ctx.statement([("u", m)], counts, ["u"], width)


def _column(names: list[str], shape: tuple[int, ...]) -> Affine:
    """The row-major flat position of ``names`` over ``shape``."""
    flat, stride = Affine(), 1
    for name, size in reversed(list(zip(names, shape, strict=True))):
        flat = flat + Affine.of(name) * stride
        stride *= size
    return flat
