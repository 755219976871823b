"""``torch.pdist``: ``_pdist_forward`` and the ``_pdist_backward`` autograd launches for it.

``x`` is ``(n, m)``; the output lists the ``N = n(n−1)/2`` pairs ``i < j`` row by row
(``q = i·n − i(i+1)/2 + j − i − 1``), a position quadratic in ``i``, which no affine index
writes. So each kernel computes over the pairs in an ``(i, j)`` nest guarded to ``j > i``
(affine reads of ``x``, each pair's work once) into kernel-local storage, and moves between
that and the packed vector with one statement over ``q`` whose ``(i, j)`` is index arithmetic,
ATen's CUDA formula (free; exact in float64): ``i = ⌊n₂ − √(n₂² − 1 − 2q)⌋`` with
``n₂ = n − ½``, ``j = q − n·i + i(i+1)/2 + i + 1``. DRAM traffic is therefore exact: ``x``
and the packed vectors are read with affine indices, only kernel-locals are addressed
indirectly.

- forward: ``d[i, j] = ⊕_k term(|x[i, k] − x[j, k]|)`` (``j > i``; the p-distance terms and
  root of ``torch.cdist``), ``d[i, j] = root(d[i, j])`` (``j > i``), ``out[q] = d[i(q), j(q)]``;
- backward (ATen's CUDA kernel and buffer): ``G``, ``D`` unpack ``grad`` and ``pdist`` to
  ``(n, n)``; for ``j > i``, ``B[j−1, i, c] = f(x[i, c] − x[j, c], G[i, j], D[i, j])`` (the
  ``_cdist_backward`` term) and ``B[i, j, c] = −B[j−1, i, c]``, which fills the
  ``(n−1, n, m)`` buffer once; ``gx[i, c] = Σ_r B[r, i, c]``. ``p = 0``: zeros.
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.cdist_backward import grad_term
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.ops.norms import distance_term, finish_distance
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.program import Guard
from solar.ir.scalar import Const, Expr, Index, Indirect, call

aten = torch.ops.aten
F64 = "float64"


def pair_rows(n: int, q: str) -> tuple[Indirect, Indirect]:
    """``(i, j)`` of packed pair ``q`` (a loop dim) among ``n`` rows, as index arithmetic."""
    n2 = n - 0.5
    qf = call("cast", Index(Affine.of(q)), dtype=F64)
    root = call("sqrt", call("sub", Const(n2 * n2 - 1.0), call("mul", Const(2.0), qf)))
    i = call("floor", call("sub", Const(n2), root))
    tri = call("div", call("mul", i, call("add", i, Const(1.0))), Const(2.0))
    j = call("add", call("sub", qf, call("mul", Const(float(n)), i)), tri)
    j = call("add", j, call("add", i, Const(1.0)))
    return (
        Indirect(call("cast", i, dtype="int64")),
        Indirect(call("cast", j, dtype="int64")),
    )


def upper(n: int) -> list[Guard]:
    """``j > i``: the pairs, each once."""
    return [Guard(Affine.of("j") - Affine.of("i"), 1, n)]


@lowering(aten._pdist_forward.default)
def pdist(ctx: LoweringContext, x: T, p: float = 2.0) -> None:
    out = ctx.out()
    n, m = x.shape
    if out.numel == 0:
        return
    p = float(p)
    acc = acc_dtype(out.dtype)
    diff = call("abs", call("sub", ctx.load(x, ["i", "k"], acc), ctx.load(x, ["j", "k"], acc)))
    term, reduce, finish = distance_term(diff, p, acc)
    d = ctx.local("dist", (n, n), acc)
    dims = [("i", n), ("j", n), ("k", m, True)]
    ctx.statement(dims, d, ["i", "j"], term, reduce=reduce, guards=upper(n), dtype=acc)
    if finish is not None:  # the root once per pair, on chip (not behind an indirect load)
        root = finish_distance(ctx.load(d, ["i", "j"]), finish, p)
        ctx.statement([("i", n), ("j", n)], d, ["i", "j"], root, guards=upper(n))
    i, j = pair_rows(n, "q")
    total = cast(ctx.load(d, [i, j]), acc, out.dtype)
    ctx.statement([("q", out.numel)], out, ["q"], total, dtype=acc)


@lowering(aten._pdist_backward.default)
def pdist_backward(ctx: LoweringContext, g: T, x: T, p: float, dist: T) -> None:
    out = ctx.out()
    n, m = x.shape
    rows = [("i", n), ("c", m)]
    p = float(p)
    if p == 0 or n < 2:
        ctx.statement(rows, out, ["i", "c"], Const(0.0))
        return
    acc = acc_dtype(out.dtype)
    q = [("q", g.numel)]
    i, j = pair_rows(n, "q")
    unpacked = []
    for t, stem in ((g, "grad"), (dist, "dist")):
        full = ctx.local(stem, (n, n), acc)
        ctx.statement(q, full, [i, j], ctx.load(t, ["q"], acc), dtype=acc)
        unpacked.append(full)
    # the pairs as (i, r = j − 1), i <= r: every index in range without the guard
    j1 = Affine.of("r") + 1
    d = call("sub", ctx.load(x, ["i", "c"], acc), ctx.load(x, [j1, "c"], acc))
    term: Expr = grad_term(d, *(ctx.load(t, ["i", j1]) for t in unpacked), p)
    buf = ctx.local("buffer", (n - 1, n, m), acc)
    pairs = [("i", n - 1), ("r", n - 1), ("c", m)]
    tri = [Guard(Affine.of("r") - Affine.of("i"), 0, n)]
    ctx.statement(pairs, buf, ["r", "i", "c"], term, guards=tri, dtype=acc)
    neg = call("neg", ctx.load(buf, ["r", "i", "c"]))
    ctx.statement(pairs, buf, ["i", j1, "c"], neg, guards=tri, dtype=acc)
    target = out if acc == out.dtype else ctx.local("acc", out.shape, acc)
    total = ctx.load(buf, ["r", "i", "c"])
    ctx.statement([*rows, ("r", n - 1, True)], target, ["i", "c"], total, reduce="sum", dtype=acc)
    if target is not out:
        ctx.statement(rows, out, ["i", "c"], cast(ctx.load(target, ["i", "c"]), acc, out.dtype))
