"""``grid_sampler_2d_backward``: what autograd launches for ``F.grid_sample`` on 4-D inputs.
ONE kernel with both outputs, ATen's formulas (``GridSampler.cu``):

- input gradient: zeros, then every sample scatters ``g·weight`` into each of its corners
  inside the input (bilinear: the four corners, weights as in the forward; nearest: the
  nearest one)::

      gI[n, c, {iy_k}, {ix_k}] += w_k · g[n, c, h, w]      (0 for a corner outside)

- grid gradient (bilinear): with ``tx, ty`` the fractional parts of the source position and
  the corner values (0 outside)::

      gx = Σ_c g·((ne − nw)·(1 − ty) + (se − sw)·ty)
      gy = Σ_c g·((sw − nw)·(1 − tx) + (se − ne)·tx)

  times the derivative of the source index in the grid value: ``(size − 1)/2`` with
  ``align_corners``, ``size/2`` without, and for ``border`` padding 0 where the position was
  clipped, for ``reflection`` the reflection's sign (−1 on a mirrored pass) and 0 where the
  reflected position was clipped. Nearest sampling has a zero grid gradient (written). As on
  CUDA, the grid gradient is computed whatever ``output_mask`` says.
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.ops.grid_sample import (
    MODES,
    PADDING,
    _corner,
    _reflect,
    source_index,
)
from solar.frontend.torch.ops.indexing import write
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, Expr, Indirect, call

aten = torch.ops.aten
ZERO = Const(0.0)


def _unnormalized(v: Expr, size: int, align: bool) -> Expr:
    """The source position before clipping (to tell where ``border`` padding clipped it)."""
    return source_index(v, size, "zeros", align)


def _inside(v: Expr, size: int) -> Expr:
    """ATen's ``clip_coordinates_set_grad``: 1 strictly inside ``(0, size − 1)``, else 0."""
    return call("logical_and", call("gt", v, ZERO), call("lt", v, Const(float(size - 1))))


def _multiplier(v: Expr, size: int, padding: str, align: bool) -> Expr:
    """d(source index)/d(grid value): the unnormalization's scale, times for ``border`` the
    clip's derivative, for ``reflection`` the reflection's sign and the clip's derivative."""
    scale = Const((size - 1) / 2 if align else size / 2)
    if padding == "zeros":
        return scale
    e = _unnormalized(v, size, align)
    if padding == "border":
        return call("where", _inside(e, size), scale, ZERO)
    lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
    if lo2 == hi2:
        return ZERO
    low, span = lo2 / 2, (hi2 - lo2) / 2
    d = call("sub", e, Const(low))
    flips = call("floor", call("div", call("abs", d), Const(span)))
    same = call("eq", call("lt", d, ZERO), call("ne", call("remainder", flips, Const(2.0)), ZERO))
    reflected = _reflect(e, lo2, hi2)
    signed = call("where", same, scale, Const(-((size - 1) / 2 if align else size / 2)))
    return call("where", _inside(reflected, size), signed, ZERO)


@lowering(aten.grid_sampler_2d_backward.default)
def grid_sampler_2d_backward(
    ctx: LoweringContext,
    g: T,
    x: T,
    grid: T,
    interpolation: int,
    padding: int,
    align_corners: bool,
    output_mask,
) -> None:
    mode, pad = MODES[int(interpolation)], PADDING[int(padding)]
    want_input = bool(output_mask[0])  # CUDA computes the grid gradient whatever the mask
    if mode == "bicubic":
        ctx.fail("with mode='bicubic' is not supported; bilinear and nearest are")
    align = bool(align_corners)
    acc = acc_dtype(x.dtype)
    sizes = x.shape[2:]
    n, c = x.shape[0], x.shape[1]
    out_hw = g.shape[2:]
    sample = [("n", n), ("c", c), ("h", out_hw[0]), ("w", out_hw[1])]
    raw = [ctx.load(grid, ["n", "h", "w", 1 - d], acc) for d in range(2)]  # (y, x) values
    coords = [source_index(raw[d], sizes[d], pad, align) for d in range(2)]
    gv = ctx.load(g, ["n", "c", "h", "w"], acc)
    if mode == "nearest":
        corners = [[_corner(call("round", coords[d]), 0, sizes[d]) for d in range(2)]]
        weights: list[Expr] = [Const(1.0)]
    else:
        floors = [call("floor", e) for e in coords]
        frac = [call("sub", coords[d], floors[d]) for d in range(2)]
        corners, weights = [], []
        for oy, ox in ((0, 0), (0, 1), (1, 0), (1, 1)):  # nw, ne, sw, se
            corners.append([_corner(floors[0], oy, sizes[0]), _corner(floors[1], ox, sizes[1])])
            wy = frac[0] if oy else call("sub", Const(1.0), frac[0])
            wx = frac[1] if ox else call("sub", Const(1.0), frac[1])
            weights.append(call("mul", wy, wx))
    if want_input:
        gi = ctx.out(0)
        ctx.statement(
            [("n", n), ("c", c), ("y", sizes[0]), ("x", sizes[1])], gi, ["n", "c", "y", "x"], ZERO
        )
        for (cy, cx), w in zip(corners, weights, strict=True):
            ok = call("logical_and", cy[1], cx[1])
            value = call("where", ok, call("mul", w, gv), ZERO)
            index = ["n", "c", Indirect(cy[0]), Indirect(cx[0])]
            write(ctx, sample, gi, index, value, reduce="sum", accumulate=True, dtype=acc)
    gg = ctx.out(1)
    cells = [("n", n), ("h", out_hw[0]), ("w", out_hw[1])]
    if mode == "nearest":
        ctx.statement([*cells, ("k", 2)], gg, ["n", "h", "w", "k"], ZERO)
        return

    def val(k: int) -> Expr:
        (iy, oky), (ix, okx) = corners[k]
        v = ctx.load(x, ["n", "c", Indirect(iy), Indirect(ix)], acc)
        return call("where", call("logical_and", oky, okx), v, ZERO)

    nw, ne, sw, se = (val(k) for k in range(4))
    ty, tx = frac
    one = Const(1.0)
    parts = {  # grid channel 0 is x (the width), 1 is y
        0: (call("sub", ne, nw), call("sub", one, ty), call("sub", se, sw), ty),
        1: (call("sub", sw, nw), call("sub", one, tx), call("sub", se, ne), tx),
    }
    for k, (a, wa, b, wb) in parts.items():
        total = ctx.local(f"g{k}", (n, *out_hw), acc)
        term = call("mul", gv, call("add", call("mul", a, wa), call("mul", b, wb)))
        ctx.statement([*cells, ("c", c, True)], total, ["n", "h", "w"], term, reduce="sum")
        mult = _multiplier(raw[1 - k], sizes[1 - k], pad, align)
        scaled = call("mul", ctx.load(total, ["n", "h", "w"]), mult)
        ctx.statement(cells, gg, ["n", "h", "w", k], cast(scaled, acc, gg.dtype), dtype=acc)
