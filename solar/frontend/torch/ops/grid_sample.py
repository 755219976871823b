"""``F.grid_sample`` (``aten.grid_sampler_2d``/``3d``) and ``F.affine_grid``
(``aten.affine_grid_generator``): ONE kernel each, as eager launches them.

Grid sampling reads the input at positions computed from the grid's values: a data-dependent
gather (:class:`~solar.ir.scalar.Indirect` entries, counted at their provable minimum like
every gather, see docs/counting.md). Per output ``[n, c, h, w]`` the grid point
``(gx, gy) = grid[n, h, w]`` is unnormalized (``((g + 1)/2)·(size − 1)`` with
``align_corners``, ``((g + 1)·size − 1)/2`` without), then clipped (``border``) or reflected
and clipped (``reflection``), as ATen's ``grid_sampler_compute_source_index``:

- ``bilinear``: the four corners around it, each weighted by the opposite sub-rectangle's
  area; a corner outside the input contributes 0 (its load is clamped into range and its
  weight masked, so nothing outside the input is read);
- ``nearest``: the corner nearest (ties to even, ``nearbyint``), 0 outside.

``bicubic`` sampling is refused. The affine grid is
``grid[n, h, w, k] = θ[n, k, 0]·x_w + θ[n, k, 1]·y_h + θ[n, k, 2]``, with ``x_w``, ``y_h`` the
``linspace(−1, 1)`` base coordinates (scaled by ``(size − 1)/size`` without ``align_corners``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import torch

from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr, Index, Indirect, call

aten = torch.ops.aten

MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _clip(e: Expr, size: int) -> Expr:
    return call("minimum", call("maximum", e, Const(0.0)), Const(float(size - 1)))


def _reflect(e: Expr, twice_low: int, twice_high: int) -> Expr:
    """ATen's ``reflect_coordinates``: reflect ``e`` into ``[low, high]`` (halves given)."""
    if twice_low == twice_high:
        return Const(0.0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    e = call("abs", call("sub", e, Const(low)))
    extra = call("fmod", e, Const(span))
    flips = call("floor", call("div", e, Const(span)))
    even = call("eq", call("remainder", flips, Const(2.0)), Const(0.0))
    return call(
        "where",
        even,
        call("add", extra, Const(low)),
        call("add", call("sub", Const(span), extra), Const(low)),
    )


def source_index(g: Expr, size: int, padding: str, align: bool) -> Expr:
    """``grid_sampler_compute_source_index`` of one grid coordinate."""
    if align:
        e = call("mul", call("div", call("add", g, Const(1.0)), Const(2.0)), Const(float(size - 1)))
    else:
        e = call(
            "div",
            call("sub", call("mul", call("add", g, Const(1.0)), Const(float(size))), Const(1.0)),
            Const(2.0),
        )
    if padding == "border":
        return _clip(e, size)
    if padding == "reflection":
        e = _reflect(e, 0, 2 * (size - 1)) if align else _reflect(e, -1, 2 * size - 1)
        return _clip(e, size)
    return e


def _corner(base: Expr, offset: int, size: int) -> tuple[Expr, Expr]:
    """The clamped integer index of ``floor + offset`` and whether it lies inside."""
    pos = call("add", base, Const(float(offset))) if offset else base
    inside = call(
        "logical_and", call("ge", pos, Const(0.0)), call("le", pos, Const(float(size - 1)))
    )
    return cast(_clip(pos, size), "float32", "int64"), inside


def _sample(
    ctx: LoweringContext,
    x: T,
    lead: list[str],
    coords: list[Expr],
    sizes: Sequence[int],
    mode: str,
    acc: str,
) -> Expr:
    """Σ over the corners of the cell around ``coords`` (input dims in order) of weight·x."""
    nd = len(coords)
    if mode == "nearest":
        idx, inside = zip(*(_corner(call("round", c), 0, n) for c, n in zip(coords, sizes)))
        ok = inside[0]
        for i in inside[1:]:
            ok = call("logical_and", ok, i)
        value = ctx.load(x, [*lead, *(Indirect(i) for i in idx)], acc)
        return call("where", ok, value, Const(0.0))
    floors = [call("floor", c) for c in coords]
    total: Expr | None = None
    for corner in range(2**nd):
        offs = [(corner >> (nd - 1 - d)) & 1 for d in range(nd)]
        weight: Expr | None = None
        idx, ok = [], None
        for c, f, o, n in zip(coords, floors, offs, sizes, strict=True):
            # the weight of the upper corner is c − floor, of the lower floor + 1 − c
            w = call("sub", c, f) if o else call("sub", call("add", f, Const(1.0)), c)
            weight = w if weight is None else call("mul", weight, w)
            i, inside = _corner(f, o, n)
            idx.append(Indirect(i))
            ok = inside if ok is None else call("logical_and", ok, inside)
        assert weight is not None and ok is not None
        value = ctx.load(x, [*lead, *idx], acc)
        term = call("where", ok, call("mul", value, weight), Const(0.0))
        total = term if total is None else call("add", total, term)
    assert total is not None
    return total


@lowering(aten.grid_sampler_2d.default, aten.grid_sampler_3d.default)
def grid_sampler(
    ctx: LoweringContext, x: T, grid: T, interpolation: int, padding: int, align_corners: bool
) -> None:
    mode, pad = MODES[int(interpolation)], PADDING[int(padding)]
    if mode == "bicubic":
        ctx.fail("with mode='bicubic' is not supported; bilinear and nearest are")
    out = ctx.out()
    nsp = x.ndim - 2
    acc = acc_dtype(out.dtype)
    sp = ["d", "h", "w"][3 - nsp :]
    dims = [("n", out.shape[0]), ("c", out.shape[1]), *zip(sp, out.shape[2:], strict=True)]
    sizes = x.shape[2:]
    # grid[..., 0] indexes the last input dim (x = width), grid[..., 1] the one before, ...
    coords = [
        source_index(
            ctx.load(grid, ["n", *sp, nsp - 1 - d], acc), sizes[d], pad, bool(align_corners)
        )
        for d in range(nsp)
    ]
    value = _sample(ctx, x, ["n", "c"], coords, sizes, mode, acc)
    ctx.statement(dims, out, ["n", "c", *sp], cast(value, acc, out.dtype), dtype=acc)


def _cudnn_grid_sampler_fake(x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """Its output shape, so that a CUDA program's trace runs on fake tensors of a CPU-only
    PyTorch too (which registers no kernel for this CUDA-only operator)."""
    return x.new_empty((x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]))


if not torch._C._dispatch_has_kernel_for_dispatch_key("aten::cudnn_grid_sampler", "Meta"):
    with contextlib.suppress(RuntimeError):  # a fake kernel exists already
        torch.library.register_fake("aten::cudnn_grid_sampler")(_cudnn_grid_sampler_fake)


@lowering(aten.cudnn_grid_sampler.default)
def cudnn_grid_sampler(ctx: LoweringContext, x: T, grid: T) -> None:
    """cuDNN's sampler, which CUDA's ``grid_sampler_2d`` dispatches to for 4-D inputs when
    cuDNN accepts them: bilinear, zero padding, ``align_corners=True`` (the only mode it is
    called for)."""
    grid_sampler(ctx, x, grid, 0, 0, True)


def _base(i: str, size: int, align: bool, acc: str) -> Expr:
    """``linspace(−1, 1, size)[i]`` (times ``(size − 1)/size`` without ``align_corners``), with
    ATen's two-sided linspace arithmetic."""
    if size <= 1:
        return Const(0.0)
    step = 2.0 / (size - 1)
    half = size // 2
    fi = cast(Index(Affine.of(i)), "int64", acc)
    rev = cast(Index(Affine.of(size - 1) - Affine.of(i)), "int64", acc)
    low = call("add", Const(-1.0), call("mul", Const(step), fi))
    high = call("sub", Const(1.0), call("mul", Const(step), rev))
    e = call("where", call("lt", Index(Affine.of(i)), Const(half)), low, high)
    return e if align else call("mul", e, Const((size - 1) / size))


@lowering(aten.affine_grid_generator.default)
def affine_grid(ctx: LoweringContext, theta: T, size, align_corners: bool) -> None:
    out = ctx.out()
    acc = acc_dtype(out.dtype)
    nsp = len(size) - 2
    sp = ["d", "h", "w"][3 - nsp :]
    coords = [_base(s, int(n), bool(align_corners), acc) for s, n in zip(sp, size[2:], strict=True)]
    base = list(reversed(coords))  # (x_w, y_h[, z_d])
    for k in range(nsp):
        e: Expr = ctx.load(theta, ["n", k, nsp], acc)
        for m, b in enumerate(base):
            e = call("add", call("mul", b, ctx.load(theta, ["n", k, m], acc)), e)
        dims = [("n", out.shape[0]), *zip(sp, out.shape[1:-1], strict=True)]
        ctx.statement(dims, out, ["n", *sp, k], cast(e, acc, out.dtype), dtype=acc)
