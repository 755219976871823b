"""Grouped GEMM (``torch._grouped_mm``): the experts of a mixture-of-experts layer, ONE kernel
as CUDA runs it.

- ``x (S, K) @ w (G, K, N)`` with ``offs (G,)`` (cumulative row ends): rows
  ``[offs[g-1], offs[g])`` of ``x`` are multiplied by expert ``g``'s matrix. The split of the
  ``S`` rows over the ``G`` groups is data (the router's choice): it is taken from the trace's
  :class:`~solar.frontend.torch.sizes.Routing` (or observed), and each non-empty group is one
  affine contraction over its rows. The flops, ``2 S K N``, do not depend on the split; the
  weights read (``K N`` per group with rows) do. Rows past ``offs[-1]`` are not computed.
- ``x (K, S) @ w (S, N)`` with ``offs``: the weight gradient of the first form (autograd's
  ``x.T @ grad``), ``out[g] = x[:, rows of g] @ w[rows of g, :]`` (zeros for a group with no
  rows), one contraction per group, the same split.
- ``x (G, M, K) @ w (G, K, N)`` without ``offs``: a batched product.
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.registry import lowering
from solar.frontend.torch.sizes import fewest_groups
from solar.ir.affine import Affine
from solar.ir.scalar import call

aten = torch.ops.aten


@lowering(aten._grouped_mm.default)
def grouped_mm(
    ctx: LoweringContext,
    x: T,
    w: T,
    offs: T | None = None,
    bias: T | None = None,
    out_dtype: object = None,
) -> None:
    out = ctx.out()
    if bias is not None:
        ctx.fail("with bias= is not supported (add the bias after the grouped GEMM)")
    compute = acc_dtype(out.dtype) if out.dtype in ("bfloat16", "float16") else out.dtype
    precision = ctx.policy.matmul(out.dtype)
    if offs is None:
        if x.ndim != 3 or w.ndim != 3:
            ctx.fail(f"without offs needs 3-D operands, not {x.shape} and {w.shape}")
        product = call(
            "mul", ctx.load(x, ["g", "m", "k"], compute), ctx.load(w, ["g", "k", "n"], compute)
        )
        dims = [("g", x.shape[0]), ("m", x.shape[1]), ("n", w.shape[2]), ("k", x.shape[2], True)]
        ctx.statement(
            dims, out, ["g", "m", "n"], product, reduce="sum", precision=precision, dtype=compute
        )
        return
    if x.ndim == 2 and w.ndim == 2:
        _weight_gradient(ctx, x, w, offs, out, compute, precision)
        return
    if x.ndim != 2 or w.ndim != 3:
        ctx.fail(
            f"with offs is supported for x (rows, K) @ w (groups, K, N) and x (K, rows) @ "
            f"w (rows, N), not {x.shape} @ {w.shape}"
        )
    rows, groups = x.shape[0], w.shape[0]
    counts = _counts(ctx, rows, groups)
    start = 0
    for g, c in enumerate(counts):
        if c > 0:
            s = Affine.build({"s": 1}, start)
            product = call(
                "mul", ctx.load(x, [s, "k"], compute), ctx.load(w, [g, "k", "n"], compute)
            )
            dims = [("s", c), ("n", w.shape[2]), ("k", x.shape[1], True)]
            ctx.statement(
                dims, out, [s, "n"], product, reduce="sum", precision=precision, dtype=compute
            )
        start += c


def _counts(ctx: LoweringContext, rows: int, groups: int) -> list[int]:
    """Rows per group: the routing's split (or the observed one)."""
    offs_node = ctx.node.args[2] if len(ctx.node.args) > 2 else ctx.node.kwargs.get("offs")
    return ctx.sizes.groups("aten._grouped_mm", rows, groups, fewest_groups(offs_node), ctx.source)


def _weight_gradient(ctx, x: T, w: T, offs: T, out: T, compute: str, precision) -> None:
    """``out[g] = x[:, rows of g] @ w[rows of g, :]``: the experts' weight gradient (``x`` the
    transposed activations, ``w`` the output gradient); an expert with no rows gets zeros."""
    k, rows, n = x.shape[0], x.shape[1], w.shape[1]
    start = 0
    for g, c in enumerate(_counts(ctx, rows, offs.shape[0])):
        s = Affine.build({"s": 1}, start)
        product = call("mul", ctx.load(x, ["k", s], compute), ctx.load(w, [s, "n"], compute))
        dims = [("k", k), ("n", n), ("s", c, True)]  # no rows: the sum of nothing, zeros
        ctx.statement(
            dims, out, [g, "k", "n"], product, reduce="sum", precision=precision, dtype=compute
        )
        start += c
