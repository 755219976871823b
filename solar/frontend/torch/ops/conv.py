"""Convolutions: ONE kernel per ``aten.convolution``, as cuDNN launches it.

``F.conv1d/2d/3d``, ``F.conv_transpose1d/2d/3d`` and the ``nn.Conv*`` modules all reach
``aten.convolution.default`` (``padding='same'`` with an even effective kernel adds a separate
``constant_pad_nd`` first, as eager does). Groups split the channels affinely (input channel
``g·C/G + c``, output channel ``g·K/G + k``); dims of extent 1 are left out of the nest.

A direct convolution is one contraction, padding expressed as guards on the input index::

    for n, g, k, p, q | c, r, s:
      O[n,gK+k,p,q] += I[n,gC+c, sh·p+dh·r−ph, sw·q+dw·s−pw] * W[gK+k,c,r,s]
        where 0 <= sh·p+dh·r−ph < H, 0 <= sw·q+dw·s−pw < W

A transposed convolution is written output-centric, decomposed exactly by the residue of each
output coordinate modulo the stride (sub-pixel decomposition). Output ``o = s·q + ρ`` receives
the taps ``r`` with ``d·r ≡ ρ + pad (mod s)``: an arithmetic progression ``r = r0 + m·t``
(``m = s / gcd(d, s)``), reading input ``i = q + (ρ + pad − d·r0)/s − (d/gcd(d, s))·t``. Each
combination of residues is one contraction statement; their executed instances add up to
exactly the (input pixel, tap) pairs that land inside the output, no zero-inserted upsampling.

The bias is written first and the contraction accumulates onto it (like ``addmm``). float32
convolutions carry the precision policy's conv mode (``torch.backends.cudnn.allow_tf32``,
tf32 by default), independently of the matmul setting.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from math import gcd

import torch

from solar.algebra.size import Size, integer
from solar.frontend.lowering.window import range_guard, window
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.program import Dim, Guard
from solar.ir.scalar import Const, Expr, call

aten = torch.ops.aten

# names of the output-position and tap loop dims, by number of spatial dims
OUT_NAMES = {1: ("p",), 2: ("p", "q"), 3: ("o", "p", "q")}
TAP_NAMES = {1: ("r",), 2: ("r", "s"), 3: ("t", "r", "s")}


class Loops:
    """Loop dims of one nest, leaving out dims of extent 1 (their index is the constant 0)."""

    def __init__(self) -> None:
        self.dims: list[Dim] = []

    def add(self, name: str, extent: int, reduction: bool = False) -> Affine:
        extent = integer(extent)
        if extent == 1:
            return Affine.of(0)
        self.dims.append(Dim(name, extent, reduction))
        return Affine.of(name)

    @property
    def parallel(self) -> list[Dim]:
        return [d for d in self.dims if not d.reduction]

    def extents(self) -> dict[str, int]:
        return {d.name: d.extent for d in self.dims}


def expand(values: Sequence[int] | int, n: int, what: str) -> list[int]:
    """A per-spatial-dim parameter (one value broadcasts to every dim)."""
    values = [values] if isinstance(values, int) else [int(v) for v in values]
    if len(values) == 1:
        values = values * n
    if len(values) != n:
        raise ValueError(f"{what} has {len(values)} entries for {n} spatial dims")
    return values


@lowering(aten.convolution.default)
def convolution(
    ctx: LoweringContext,
    x: T,
    weight: T,
    bias: T | None,
    stride,
    padding,
    dilation,
    transposed: bool,
    output_padding,
    groups: int,
) -> None:
    nsp = weight.ndim - 2
    if nsp not in OUT_NAMES:
        ctx.fail(f"has {nsp} spatial dims; 1, 2 or 3 are supported")
    if x.ndim != nsp + 2:  # aten.convolution takes batched inputs only
        ctx.fail(f"input of shape {x.shape} does not fit a weight of shape {weight.shape}")
    params = [expand(v, nsp, w) for v, w in ((stride, "stride"), (padding, "padding"))]
    params.append(expand(dilation, nsp, "dilation"))
    out = ctx.out()
    if transposed:
        _transposed(ctx, x, weight, bias, *params, integer(groups), out)
    else:
        _direct(ctx, x, weight, bias, *params, integer(groups), out)


def _batch(loops: Loops, x: T) -> list[Affine]:
    return [loops.add("n", x.shape[0])]


def _bias_fill(ctx: LoweringContext, loops: Loops, out: T, index, channel, bias, compute) -> None:
    value: Expr = ctx.load(bias, [channel], compute) if isinstance(bias, T) else Const(0.0)
    ctx.statement(loops.parallel, out, index, value)


def _direct(ctx, x: T, weight: T, bias, stride, padding, dilation, groups: int, out: T) -> None:
    nsp = weight.ndim - 2
    cg = weight.shape[1]  # input channels per group
    kg = weight.shape[0] // groups  # output channels per group
    loops = Loops()
    batch = _batch(loops, x)
    g = loops.add("g", groups)
    k = loops.add("k", kg)
    ps = [loops.add(n, e) for n, e in zip(OUT_NAMES[nsp], out.shape[-nsp:], strict=True)]
    c = loops.add("c", cg, True)
    rs = [loops.add(n, e, True) for n, e in zip(TAP_NAMES[nsp], weight.shape[2:], strict=True)]
    ext = loops.extents()
    spatial, guards = window(ps, rs, stride, dilation, padding, x.shape[-nsp:], ext)
    channel = g * kg + k
    out_index = [*batch, channel, *ps]
    compute = out.dtype
    product = call(
        "mul",
        ctx.load(x, [*batch, g * cg + c, *spatial], compute),
        ctx.load(weight, [channel, c, *rs], compute),
    )
    sizes = zip(out.shape[-nsp:], x.shape[-nsp:], weight.shape[2:], strict=True)
    filled = bias is not None or any(
        not _all_reached(n, (s, d, pad), taps, size)
        for (n, size, taps), s, d, pad in zip(sizes, stride, dilation, padding, strict=True)
    )
    if filled:  # the bias, or zeros where a window lies wholly in the padding
        _bias_fill(ctx, loops, out, out_index, channel, bias, compute)
    ctx.statement(
        loops.dims,
        out,
        out_index,
        product,
        reduce="sum",
        accumulate=filled,
        precision=ctx.policy.conv(compute),
        guards=guards,
    )


def _all_reached(n: int, conv: tuple[int, int, int], taps: int, size: int) -> bool:
    """Whether each of the ``n`` outputs along a dim reads at least one input element. With
    ``k = ceil(pad / s)``, every output ``k <= p < n - k`` reads its first tap inside the input
    (``0 <= s·p - pad < size`` follows from PyTorch's ``n``), so a symbolic ``n`` needs only
    its ``2k`` border outputs checked."""
    s, _, pad = conv
    k = -(-pad // s)
    if not isinstance(n, Size) or n <= 2 * k:
        return all(_reached(p, conv, taps, size) for p in range(n))
    border = [*range(k), *(n - 1 - i for i in range(k))]
    return all(_reached(p, conv, taps, size) for p in border)


def _reached(p: int, conv: tuple[int, int, int], taps: int, size: int) -> bool:
    """Whether output ``p`` of a direct convolution reads at least one input element."""
    s, d, pad = conv
    return any(0 <= s * p + d * r - pad < size for r in range(taps))


def _transposed_coverage(size: int, conv: tuple[int, int, int], taps: int, out: int) -> bool:
    """Whether every output of a transposed convolution receives at least one tap. An output
    ``o`` with ``d·(taps-1) - pad <= o <= s·(size-1) - pad`` has every tap's input inside, so it
    is hit iff some tap has ``o + pad - d·r ≡ 0 (mod s)``: with a symbolic ``size`` (that span
    holding every residue) only the residues and the outputs outside the span (a plain number
    of them at each border) are checked, so no decision depends on the size's value."""
    s, d, pad = conv
    lo, hi = d * (taps - 1) - pad, s * (size - 1) - pad  # the span whose taps all read inside
    # outputs above the span: a plain number where out follows size; where out is the input
    # a strided conv read (its gradient), periodic in it: its value holds on a residue class
    high = int(out - 1 - hi)
    first = max(lo, 0)  # the span's first output; it holds out - high - first of them
    if not isinstance(size, Size) or out - max(high, 0) - first < s:
        hit = {s * i + d * r - pad for i in range(size) for r in range(taps)}
        return len(hit & set(range(out))) == out
    residues = all(
        any((o + pad - d * r) % s == 0 for r in range(taps)) for o in range(first, first + s)
    )
    border = [*range(max(lo, 0)), *(out - 1 - j for j in range(max(high, 0)))]
    return residues and all(_tap_lands(o, conv, taps, size) for o in border)


def _tap_lands(o: int, conv: tuple[int, int, int], taps: int, size: int) -> bool:
    """Whether output ``o`` of a transposed convolution receives a tap: ``o = s·i + d·r - pad``
    for some input ``0 <= i < size`` and tap ``r``."""
    s, d, pad = conv
    return any(
        (o + pad - d * r) % s == 0 and 0 <= (o + pad - d * r) // s < size for r in range(taps)
    )


def tap_progression(rho: int, stride: int, dilation: int, pad: int, taps: int):
    """Taps ``r = r0 + m·t`` (``t < count``) contributing to outputs ``o ≡ rho (mod stride)``
    of a transposed convolution, and the input index ``q + base − step·t`` they read for
    output ``o = stride·q + rho``; None when no tap does."""
    for r0 in range(min(stride, taps)):
        if (dilation * r0 - rho - pad) % stride == 0:
            break
    else:
        return None
    m = stride // gcd(dilation, stride)
    count = -(-(taps - r0) // m)
    base = (rho + pad - dilation * r0) // stride
    return r0, m, count, base, dilation * m // stride


def _transposed(ctx, x: T, weight: T, bias, stride, padding, dilation, groups: int, out: T) -> None:
    nsp = weight.ndim - 2
    cg = weight.shape[0] // groups  # input channels per group
    kg = weight.shape[1]  # output channels per group
    in_sizes, out_sizes, taps = x.shape[-nsp:], out.shape[-nsp:], weight.shape[2:]
    compute = out.dtype
    nests = []  # one contraction per residue class that some tap reaches
    for rhos in itertools.product(*(range(min(s, n)) for s, n in zip(stride, out_sizes))):
        progs = [
            tap_progression(rho, s, d, pad, r)
            for rho, s, d, pad, r in zip(rhos, stride, dilation, padding, taps, strict=True)
        ]
        if None in progs:
            continue  # no tap reaches these outputs
        loops = Loops()
        batch = _batch(loops, x)
        g, k = loops.add("g", groups), loops.add("k", kg)
        qs = [
            loops.add(n, -(-(size - rho) // s))
            for n, size, rho, s in zip(OUT_NAMES[nsp], out_sizes, rhos, stride, strict=True)
        ]
        c = loops.add("c", cg, True)
        ts = [loops.add(n, pr[2], True) for n, pr in zip(TAP_NAMES[nsp], progs, strict=True)]
        ext = loops.extents()
        in_index = [q + pr[3] - pr[4] * t for q, t, pr in zip(qs, ts, progs, strict=True)]
        guards = [
            gd for e, n in zip(in_index, in_sizes, strict=True) for gd in range_guard(e, n, ext)
        ]
        if any(_never(gd, ext) for gd in guards):
            continue  # every tap of this class falls outside the input
        tap_index = [pr[0] + pr[1] * t for t, pr in zip(ts, progs, strict=True)]
        product = call(
            "mul",
            ctx.load(x, [*batch, g * cg + c, *in_index], compute),
            ctx.load(weight, [g * cg + c, k, *tap_index], compute),
        )
        out_index = [*batch, g * kg + k, *(s * q + rho for q, s, rho in zip(qs, stride, rhos))]
        nests.append((loops.dims, out_index, product, guards))
    filled = bias is not None or not all(
        _transposed_coverage(n, (s, d, pad), r, o)
        for n, s, d, pad, r, o in zip(
            in_sizes, stride, dilation, padding, taps, out_sizes, strict=True
        )
    )
    if filled:  # the bias, or zeros where no tap lands
        loops = Loops()
        batch = _batch(loops, x)
        g, k = loops.add("g", groups), loops.add("k", kg)
        ps = [loops.add(n, e) for n, e in zip(OUT_NAMES[nsp], out_sizes, strict=True)]
        _bias_fill(ctx, loops, out, [*batch, g * kg + k, *ps], g * kg + k, bias, compute)
    for dims, out_index, product, guards in nests:
        ctx.statement(
            dims,
            out,
            out_index,
            product,
            reduce="sum",
            accumulate=filled,
            precision=ctx.policy.conv(compute),
            guards=guards,
        )


def _never(gd: Guard, extents: dict[str, int]) -> bool:
    lo, hi = gd.expr.bounds(extents)
    return hi < gd.lo or lo >= gd.hi
