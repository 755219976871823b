"""Pooling: ONE kernel per operator, as eager launches it.

Windows are affine in the output position: tap ``r`` of output ``p`` reads input
``s·p + d·r − pad``; taps outside the input (padding, ``ceil_mode`` overhang) are cut away by
guards, so they contribute nothing: max pooling pads with −inf semantics, never zeros.

- ``max_pool{2,3}d_with_indices`` (``F.max_pool1d/2d/3d`` and ``nn.MaxPool*`` all reach them)::

      V[n,c,p,q] max= X[n,c,sh·p+dh·r−ph, sw·q+dw·s−pw]          where (in bounds)
      I[n,c,p,q] min= (X[...] == V[n,c,p,q] ? flat input position : H·W)   where (in bounds)

  the index is the first occurrence of the maximum in the window (the smallest flat position
  within the spatial plane), as PyTorch resolves ties. (Not modelled: the index of a NaN
  maximum, and windows lying wholly in the padding, which need dilation and a size-1 input.)
- ``avg_pool{2,3}d`` (``F.avg_pool1d`` arrives as ``avg_pool2d``): a guarded window sum, then
  one divide per output. The divisor is ``divisor_override``, or the product over spatial dims
  of the window's tap count, which is a constant where uniform and otherwise an exact
  piecewise-affine function of the output position (``min``/``max`` of ``Index`` terms):
  ``min(k, H + 2·pad − s·p)`` with ``count_include_pad``, ``min(s·p − pad + k, H) −
  max(s·p − pad, 0)`` without.
- ``_adaptive_avg_pool{2,3}d``, ``adaptive_max_pool{2,3}d``: output ``i`` of a dim pools
  ``[floor(i·In/Out), ceil((i+1)·In/Out))``, which is not affine in ``i`` unless
  ``In % Out == 0``. Each dim's outputs are split into classes whose windows have one size and
  start on an arithmetic progression (runs of consecutive outputs, or the residue classes
  modulo ``Out / gcd(In, Out)``, whichever are fewer); each combination of classes is one
  statement (two for the divide or the indices). More than :data:`MAX_WINDOW_CLASSES`
  combinations is an error.

Half-precision averages accumulate in float32, as PyTorch does.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from math import gcd, prod

import torch

from solar.algebra.size import Size
from solar.frontend.lowering.window import window
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conv import OUT_NAMES, TAP_NAMES, Loops, expand
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.program import Guard
from solar.ir.scalar import Const, Expr, Index, call

aten = torch.ops.aten

# Most window classes (combinations over the non-uniform dims) an adaptive pool may need.
MAX_WINDOW_CLASSES = 64


@dataclass
class Window:
    """The loop nest of one pooling statement: dims, the input and output indices, guards."""

    loops: Loops
    lead: list[Affine]  # batch/channel indices
    out_index: list[Affine]
    in_spatial: list[Affine]
    guards: list[Guard]

    @property
    def in_index(self) -> list[Affine]:
        return [*self.lead, *self.in_spatial]


def lead_loops(loops: Loops, x: T, nsp: int) -> list[Affine]:
    lead = x.ndim - nsp  # (N, C) or, unbatched, (C,)
    names = ["n", "c"][2 - lead :] if lead <= 2 else [f"i{k}" for k in range(lead)]
    return [loops.add(nm, e) for nm, e in zip(names, x.shape[: x.ndim - nsp], strict=True)]


def sliding_window(x: T, out: T, kernel: Sequence[int], stride, padding, dilation) -> Window:
    nsp = len(kernel)
    loops = Loops()
    lead = lead_loops(loops, x, nsp)
    ps = [loops.add(n, e) for n, e in zip(OUT_NAMES[nsp], out.shape[-nsp:], strict=True)]
    rs = [loops.add(n, e, True) for n, e in zip(TAP_NAMES[nsp], kernel, strict=True)]
    spatial, guards = window(ps, rs, stride, dilation, padding, x.shape[-nsp:], loops.extents())
    return Window(loops, lead, [*lead, *ps], spatial, guards)


def pool_params(nsp: int, kernel_size, stride, padding, dilation=1):
    kernel = expand(kernel_size, nsp, "kernel_size")
    stride = kernel if not stride else expand(stride, nsp, "stride")
    return kernel, stride, expand(padding, nsp, "padding"), expand(dilation, nsp, "dilation")


def flat_position(x: T, spatial: Sequence[Affine]) -> Affine:
    """Row-major position of ``spatial`` within the input's spatial plane (volume)."""
    flat, stride = Affine(), 1
    for e, n in reversed(list(zip(spatial, x.shape[len(x.shape) - len(spatial) :], strict=True))):
        flat = flat + e * stride
        stride *= n
    return flat


def max_with_indices(
    ctx: LoweringContext, x: T, windows: Sequence[Window], values: T, indices: T
) -> None:
    """``values max= x[window]`` for every window class, then ``indices min= (x == max ?
    position : plane)`` (all values first, so the index pass reads finished maxima)."""
    for w in windows:
        load = ctx.load(x, w.in_index)
        ctx.statement(w.loops.dims, values, w.out_index, load, reduce="max", guards=w.guards)
    plane = prod(x.shape[x.ndim - len(windows[0].in_spatial) :])
    for w in windows:
        hit = call("eq", ctx.load(x, w.in_index), ctx.load(values, w.out_index))
        first = call("where", hit, Index(flat_position(x, w.in_spatial)), Const(plane))
        ctx.statement(
            w.loops.dims, indices, w.out_index, first, reduce="min", guards=w.guards, dtype=x.dtype
        )


MAX_POOLS = {
    aten.max_pool2d_with_indices.default: 2,
    aten.max_pool3d_with_indices.default: 3,
}


@lowering(*MAX_POOLS)
def max_pool(
    ctx: LoweringContext, x: T, kernel_size, stride, padding, dilation, ceil_mode: bool
) -> None:
    nsp = MAX_POOLS[ctx.op]
    kernel, stride, padding, dilation = pool_params(nsp, kernel_size, stride, padding, dilation)
    values, indices = ctx.out(0), ctx.out(1)
    w = sliding_window(x, values, kernel, stride, padding, dilation)
    max_with_indices(ctx, x, [w], values, indices)


AVG_POOLS = {aten.avg_pool2d.default: 2, aten.avg_pool3d.default: 3}


def window_starts(extent: int, stride: int, pad: int) -> tuple[list[int], bool]:
    """The first input position ``stride·i − pad`` of each output ``i < extent``, or of its
    border outputs only when ``extent`` is a symbolic size and the border leaves an interior,
    and whether it left one. With ``b = ceil(pad / stride) + 1``, every output
    ``b <= i < extent − b`` has its whole window inside the input (``0 < stride·i − pad`` and,
    from PyTorch's output size with or without ``ceil_mode``, ``stride·i − pad + k <= size``),
    so its tap count is the kernel's with or without padding counted."""
    b = -(-pad // stride) + 1
    if not isinstance(extent, Size) or extent <= 2 * b:
        return [stride * i - pad for i in range(int(extent))], False
    border = [*range(b), *(extent - b + i for i in range(b))]
    return [stride * i - pad for i in border], True


def tap_count(
    p: Affine, extent: int, size: int, kernel: int, stride: int, pad: int, include_pad: bool
) -> Expr | int:
    """Taps PyTorch divides by along one dim, for output ``p < extent``: an int where it is
    the same for every output, else an expression of ``p``."""
    start, interior = window_starts(extent, stride, pad)
    if include_pad:
        counts = [min(s + kernel, size + pad) - s for s in start]
        if len({*counts, *([kernel] if interior else [])}) == 1:
            return counts[0]
        return call("minimum", Index(size + 2 * pad - stride * p), Const(kernel))
    counts = [min(s + kernel, size) - max(s, 0) for s in start]
    if len({*counts, *([kernel] if interior else [])}) == 1:
        return counts[0]
    lo = stride * p - pad
    lo_e: Expr = Index(lo) if start[0] >= 0 else call("maximum", Index(lo), Const(0))
    hi_e: Expr = Index(lo + kernel)
    if start[-1] + kernel > size:
        hi_e = call("minimum", hi_e, Const(size))
    return call("sub", hi_e, lo_e)


@lowering(*AVG_POOLS)
def avg_pool(
    ctx: LoweringContext,
    x: T,
    kernel_size,
    stride,
    padding,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None = None,
) -> None:
    nsp = AVG_POOLS[ctx.op]
    kernel, stride, padding, _ = pool_params(nsp, kernel_size, stride, padding)
    out = ctx.out()
    w = sliding_window(x, out, kernel, stride, padding, [1] * nsp)
    acc = out if acc_dtype(out.dtype) == out.dtype else ctx.local("sum", out.shape, "float32")
    ctx.statement(
        w.loops.dims,
        acc,
        w.out_index,
        ctx.load(x, w.in_index, acc.dtype),
        reduce="sum",
        guards=w.guards,
    )
    divisor = avg_divisor(w, x, out, kernel, stride, padding, count_include_pad, divisor_override)
    mean = call("div", ctx.load(acc, w.out_index), divisor)
    ctx.statement(w.loops.parallel, out, w.out_index, mean, dtype=acc.dtype)


def avg_divisor(
    w: Window, x: T, out: T, kernel, stride, padding, include_pad: bool, override
) -> Expr:
    """What PyTorch divides the window sum of output ``w.out_index`` by: ``divisor_override``,
    or the product over spatial dims of the window's tap count (see :func:`tap_count`)."""
    if override:
        return Const(int(override))
    nsp = len(kernel)
    ps = w.out_index[len(w.lead) :]
    counts = [
        tap_count(p, e, n, k, s, pad, bool(include_pad))
        for p, e, n, k, s, pad in zip(
            ps, out.shape[-nsp:], x.shape[-nsp:], kernel, stride, padding, strict=True
        )
    ]
    divisor: Expr = Const(prod(c for c in counts if isinstance(c, int)))
    for c in counts:
        if not isinstance(c, int):
            divisor = c if divisor == Const(1) else call("mul", divisor, c)
    return divisor


# ------------------------------------------------------------------------- adaptive pooling


@dataclass(frozen=True)
class WindowClass:
    """Outputs ``first + out_step·j`` (``j < count``) pooling the windows
    ``[start + in_step·j, start + in_step·j + size)`` of one input dim."""

    first: int
    out_step: int
    count: int
    start: int
    in_step: int
    size: int


def adaptive_windows(size: int, out: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each output's window, as PyTorch computes them."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _runs(windows: list[tuple[int, int]]) -> list[WindowClass]:
    """Maximal runs of consecutive outputs with one window size and evenly spaced starts."""
    runs: list[WindowClass] = []
    for i, (a, b) in enumerate(windows):
        if runs:
            last = runs[-1]
            step = a - last.start if last.count == 1 else last.in_step
            end = last.start + last.in_step * (last.count - 1)
            if last.size == b - a and a - end == step:
                runs[-1] = WindowClass(last.first, 1, last.count + 1, last.start, step, last.size)
                continue
        runs.append(WindowClass(i, 1, 1, a, 0, b - a))
    return runs


def _residues(size: int, out: int, windows: list[tuple[int, int]]) -> list[WindowClass]:
    """Residue classes of outputs modulo ``period = out / gcd(size, out)``: windows repeat
    shifted by ``size / gcd`` every period."""
    g = gcd(size, out)
    period = out // g
    return [
        WindowClass(v, period, g, windows[v][0], size // g, windows[v][1] - windows[v][0])
        for v in range(period)
    ]


def window_classes(size: int, out: int) -> list[WindowClass]:
    """The fewer of the two exact partitions of a dim's outputs into affine window classes."""
    windows = adaptive_windows(size, out)
    runs, residues = _runs(windows), _residues(size, out, windows)
    return runs if len(runs) <= len(residues) else residues


def adaptive_nests(ctx: LoweringContext, x: T, out_size: Sequence[int]) -> list[Window]:
    nsp = len(out_size)
    per_dim = [window_classes(n, o) for n, o in zip(x.shape[-nsp:], out_size, strict=True)]
    combos = list(itertools.product(*per_dim))
    if len(combos) > MAX_WINDOW_CLASSES:
        shape = "x".join(map(str, x.shape[-nsp:]))
        ctx.fail(
            f"pools {shape} to output size {tuple(out_size)}: its windows need "
            f"{len(combos)} affine classes, more than the {MAX_WINDOW_CLASSES} supported "
            f"(an input size divisible by the output size needs one)"
        )
    nests = []
    for combo in combos:
        loops = Loops()
        lead = lead_loops(loops, x, nsp)
        js = [loops.add(n, wc.count) for n, wc in zip(OUT_NAMES[nsp], combo, strict=True)]
        rs = [loops.add(n, wc.size, True) for n, wc in zip(TAP_NAMES[nsp], combo, strict=True)]
        out_index = [*lead, *(wc.first + wc.out_step * j for j, wc in zip(js, combo))]
        spatial = [wc.start + wc.in_step * j + r for j, r, wc in zip(js, rs, combo)]
        nests.append(Window(loops, lead, out_index, spatial, []))
    return nests


ADAPTIVE_AVG_POOLS = {aten._adaptive_avg_pool2d.default: 2, aten._adaptive_avg_pool3d.default: 3}


@lowering(*ADAPTIVE_AVG_POOLS)
def adaptive_avg_pool(ctx: LoweringContext, x: T, output_size) -> None:
    out = ctx.out()
    nsp = ADAPTIVE_AVG_POOLS[ctx.op]
    size = [int(o) for o in out.shape[-nsp:]]
    acc = ctx.local("sum", out.shape, acc_dtype(out.dtype))  # window sums stay on chip
    windows = adaptive_nests(ctx, x, size)
    for w in windows:
        load = ctx.load(x, w.in_index, acc.dtype)
        ctx.statement(w.loops.dims, acc, w.out_index, load, reduce="sum")
    for w in windows:
        taps = prod(d.extent for d in w.loops.dims if d.reduction)
        mean = call("div", ctx.load(acc, w.out_index), Const(taps))
        ctx.statement(w.loops.parallel, out, w.out_index, mean, dtype=acc.dtype)


ADAPTIVE_MAX_POOLS = {aten.adaptive_max_pool2d.default: 2, aten.adaptive_max_pool3d.default: 3}


@lowering(*ADAPTIVE_MAX_POOLS)
def adaptive_max_pool(ctx: LoweringContext, x: T, output_size) -> None:
    values, indices = ctx.out(0), ctx.out(1)
    nsp = ADAPTIVE_MAX_POOLS[ctx.op]
    windows = adaptive_nests(ctx, x, [int(o) for o in values.shape[-nsp:]])
    max_with_indices(ctx, x, windows, values, indices)
