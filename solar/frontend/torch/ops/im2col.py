"""``F.unfold`` (``aten.im2col``) and ``F.fold`` (``aten.col2im``): ONE kernel each, as eager
launches them. ``Tensor.unfold`` is a view (no kernel).

- ``im2col``: ``cols[n, c·K + r·kw + s, p·OW + q] = X[n, c, sh·p + dh·r − ph, sw·q + dw·s − pw]``
  (K = kh·kw), 0 where the tap lies in the padding: the kernel writes every column element,
  the zeros first, then the taps inside the input (guards).
- ``col2im`` (its adjoint): ``Y = 0``, then per tap ``(r, s)`` one statement
  ``Y[n, c, sh·p + dh·r − ph, sw·q + dw·s − pw] += cols[n, c·K + r·kw + s, p·OW + q]`` over the
  blocks whose tap lies inside the output (a shifted range per tap); half precision sums in
  float32 on chip.
"""

from __future__ import annotations

import torch

from solar.algebra.size import integer
from solar.frontend.lowering.window import range_guard
from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conv import expand
from solar.frontend.torch.ops.conventions import acc_dtype, nest
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.program import Dim
from solar.ir.scalar import Const

aten = torch.ops.aten


def _params(kernel_size, dilation, padding, stride) -> list[list[int]]:
    return [
        expand(v, 2, w)
        for v, w in (
            (kernel_size, "kernel_size"),
            (dilation, "dilation"),
            (padding, "padding"),
            (stride, "stride"),
        )
    ]


def _blocks(size: int, k: int, d: int, pad: int, s: int) -> int:
    return (size + 2 * pad - d * (k - 1) - 1) // s + 1


@lowering(aten.im2col.default)
def im2col(ctx: LoweringContext, x: T, kernel_size, dilation, padding, stride) -> None:
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _params(kernel_size, dilation, padding, stride)
    out = ctx.out()
    batched = x.ndim == 4
    lead = [("n", x.shape[0])] if batched else []
    c, h, w = x.shape[-3:]
    oh, ow = _blocks(h, kh, dh, ph, sh), _blocks(w, kw, dw, pw, sw)
    o = [f"o{k}" for k in range(out.ndim)]
    ctx.statement(nest(o, out.shape), out, o, Const(0.0))
    dims = [*lead, ("c", c), ("r", kh), ("s", kw), ("p", oh), ("q", ow)]
    extents = {n: integer(e) for n, e in dims}
    rows, cols = (
        Affine.of("p") * sh + Affine.of("r") * dh - ph,
        Affine.of("q") * sw + Affine.of("s") * dw - pw,
    )
    guards = range_guard(rows, h, extents) + range_guard(cols, w, extents)
    n = ["n"] if batched else []
    row = Affine.of("c") * (kh * kw) + Affine.of("r") * kw + Affine.of("s")
    ctx.statement(
        dims,
        out,
        [*n, row, Affine.of("p") * ow + Affine.of("q")],
        ctx.load(x, [*n, "c", rows, cols]),
        guards=guards,
    )


def _inside(blocks: int, stride: int, offset: int, size: int) -> tuple[int, int] | None:
    """``(first, count)`` of the blocks ``p < blocks`` with ``0 <= stride·p + offset < size``."""
    ps = [p for p in range(blocks) if 0 <= stride * p + offset < size]
    return (ps[0], len(ps)) if ps else None


@lowering(aten.col2im.default)
def col2im(
    ctx: LoweringContext, cols: T, output_size, kernel_size, dilation, padding, stride
) -> None:
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _params(kernel_size, dilation, padding, stride)
    out = ctx.out()
    acc = acc_dtype(out.dtype)
    target = out if acc == out.dtype else ctx.local("acc", out.shape, acc)
    batched = out.ndim == 4
    c, h, w = out.shape[-3:]
    oh, ow = _blocks(h, kh, dh, ph, sh), _blocks(w, kw, dw, pw, sw)
    o = [f"o{k}" for k in range(out.ndim)]
    ctx.statement(nest(o, out.shape), target, o, Const(0.0))
    lead = [Dim("n", integer(out.shape[0]))] if batched else []
    n = ["n"] if batched else []
    for r in range(kh):
        rp = _inside(oh, sh, r * dh - ph, h)
        for s in range(kw):
            qp = _inside(ow, sw, s * dw - pw, w)
            if rp is None or qp is None:
                continue
            (p0, np_), (q0, nq) = rp, qp
            p, q = Affine.of("p") + p0, Affine.of("q") + q0
            row = Affine.of("c") * (kh * kw) + (r * kw + s)
            value = ctx.load(cols, [*n, row, p * ow + q], acc)
            ctx.statement(
                [*lead, Dim("c", integer(c)), Dim("p", np_), Dim("q", nq)],
                target,
                [*n, "c", p * sh + (r * dh - ph), q * sw + (s * dw - pw)],
                value,
                reduce="sum",
                accumulate=True,
                dtype=acc,
            )
    if target is not out:
        ctx.statement(nest(o, out.shape), out, o, cast(ctx.load(target, o), acc, out.dtype))
