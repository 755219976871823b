"""``torch.searchsorted`` / ``torch.bucketize``: for every value ``x``, the number of sorted
boundaries ``b`` with ``b < x`` (``right``: ``b <= x``). ONE kernel, exact values.

Counted as a branchless binary search (Shar's): with ``n`` boundaries and ``i`` the largest
power of two ``<= n``, the first step compares ``b[i − 1]`` and starts the position at
``n + 1 − i`` or 0; each further step ``h = i/2, i/4, .., 1`` compares ``b[pos + h − 1]`` and
adds ``h``. That is ``⌊log2 n⌋ + 1 = ⌈log2(n + 1)⌉`` comparisons per value: the depth of an
optimal comparison tree over the ``n + 1`` outcomes, and the iteration count of CUDA's
``lower_bound``/``upper_bound`` loop in its worst case (a warp runs its slowest lane). Each step
is one statement over the values (an indirect load of the boundary, a compare, a select and an
add); the position lives on chip. A linear count (``n`` comparisons per value) would charge
more than the real kernel does, so it is not used.
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import dims_of, nest, result_dtype
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, Expr, Indirect, call

aten = torch.ops.aten


def search(ctx: LoweringContext, seq: T, x: T | float, right: bool) -> None:
    """``out[.., m] = #{j : seq[.., j] < x[.., m]}`` (``<=`` when ``right``); ``seq`` is 1-D or
    has the leading dims of ``x``."""
    out = ctx.out()
    n = seq.shape[-1]
    dims = dims_of(out.shape)
    loops = nest(dims, out.shape)
    if n == 0:
        ctx.statement(loops, out, dims, Const(0))
        return
    compute = result_dtype(seq, x)
    value = ctx.load(x, dims, compute) if isinstance(x, T) else Const(x)
    lead = dims[:-1] if seq.ndim > 1 else []
    test = "le" if right else "lt"

    def below(at: Expr) -> Expr:  # seq[.., at] < x (or <=)
        return call(test, ctx.load(seq, [*lead, Indirect(at)], compute), value)

    n = int(n)  # the step count is log2 of it: a symbolic n is specialized (int() says so)
    i = 1 << (n.bit_length() - 1)  # the largest power of two <= n
    pos = ctx.local("pos", out.shape, "int64")

    def emit(e: Expr, last: bool) -> None:
        target = out if last else pos
        ctx.statement(loops, target, dims, cast(e, "int64", target.dtype))

    h = i // 2
    emit(call("where", below(Const(i - 1)), Const(n + 1 - i), Const(0)), h == 0)
    while h:
        at = ctx.load(pos, dims)
        jump = call(
            "where", below(call("add", at, Const(h - 1)) if h > 1 else at), Const(h), Const(0)
        )
        h //= 2
        emit(call("add", at, jump), h == 0)


@lowering(aten.searchsorted.Tensor, aten.searchsorted.Scalar)
def searchsorted(
    ctx: LoweringContext, seq: T, x, out_int32=False, right=False, side=None, sorter=None
) -> None:
    if sorter is not None:
        ctx.fail("with sorter= is not supported: pass the sorted sequence (seq.gather(-1, sorter))")
    search(ctx, seq, x, bool(right) or side == "right")


@lowering(aten.bucketize.Tensor, aten.bucketize.Scalar)
def bucketize(ctx: LoweringContext, x, boundaries: T, out_int32=False, right=False) -> None:
    search(ctx, boundaries, x, bool(right))
