"""Data movement that copies: flip, roll, repeat, rot90, padding and pixel (un)shuffle. ONE
kernel each, 0 flops.

Each operator is a gather whose source index is *piecewise* affine in the output index: the
output is cut into boxes on which the source index is affine, and each box is one statement
(no guards, so every element is written exactly once and footprints are exact boxes):

- ``flip``: ``out[i] = x[n - 1 - i]`` on the flipped dims (one box).
- ``roll``: per rolled dim two boxes, ``out[i + s] = x[i]`` (``i < n - s``) and
  ``out[i] = x[i + n - s]`` (``i < s``): ``2^k`` statements for ``k`` rolled dims; without
  dims, the same two boxes on flat views of the (contiguous) input and output.
- ``repeat`` (``Tensor.repeat``, ``torch.tile``): ``out[.., t * n + i, ..] = x[.., i, ..]``
  over ``(t, i)`` loop pairs (one box).
- ``rot90``: a flip and a transpose of the index (one box; odd ``k`` writes a transposed
  layout, as eager returns).
- ``reflection_pad{1,2,3}d`` / ``replication_pad{1,2,3}d``: per padded dim three boxes (left
  pad, interior, right pad), with source ``l - o``, ``o - l``, ``2(n - 1) + l - o`` (reflect) or
  ``0``, ``o - l``, ``n - 1`` (replicate): ``3^k`` statements. Negative pads crop.
- ``constant_pad_nd``: the interior box copies ``x`` (cropped where pads are negative); the
  border is cut into disjoint slabs (dim ``k``'s pad, interior in the dims before ``k``, all of
  the dims after) that write the value. Eager fills the whole output and then copies the
  interior (two kernels); one kernel keeps the unfused bound below it.

- ``pixel_shuffle(r)``: ``out[.., c, h r + i, w r + j] = x[.., c r² + i r + j, h, w]`` over
  loops ``(c, h, i, w, j)`` (one box); ``pixel_unshuffle`` is its inverse.

``F.pad(mode="circular")`` arrives as ``copy_`` kernels into slices of a ``new_empty``;
``repeat_interleave`` with an int as ``expand`` + ``clone``; ``narrow``/``unfold`` are views.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import torch

from solar.algebra.size import integer
from solar.frontend.torch.lower import LoweringContext, T, contiguous_strides
from solar.frontend.torch.ops.conventions import dims_of, nest, norm_dim
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr

aten = torch.ops.aten

# A box along one output dim: (first output index, length, source index of the loop variable).
Piece = tuple[int, int, Callable[[Affine], Affine]]


def _same(i: Affine) -> Affine:
    return i


def shifted(k: int) -> Callable[[Affine], Affine]:
    return lambda i: i + k


def mirrored(k: int) -> Callable[[Affine], Affine]:
    return lambda i: k - i


def constant(k: int) -> Callable[[Affine], Affine]:
    return lambda i: Affine.of(k)


def emit_pieces(
    ctx: LoweringContext,
    out: T,
    pieces: Sequence[Sequence[Piece]],
    value: Callable[[list[Affine]], Expr],
) -> None:
    """One statement per combination of pieces (one piece per output dim): the loop runs over
    the pieces' lengths, writes ``out`` at ``start + i`` and evaluates ``value(source)``."""
    names = dims_of(out.shape)
    for combo in itertools.product(*pieces):
        if any(length <= 0 for _, length, _ in combo):
            continue
        loops = [(d, length) for d, (_, length, _) in zip(names, combo, strict=True)]
        index = [Affine.of(d) + start for d, (start, _, _) in zip(names, combo, strict=True)]
        source = [f(Affine.of(d)) for d, (_, _, f) in zip(names, combo, strict=True)]
        ctx.statement(loops, out, index, value(source))


def copy_from(ctx: LoweringContext, x: T, out: T) -> Callable[[list[Affine]], Expr]:
    return lambda source: ctx.load(x, source, out.dtype)


# ------------------------------------------------------------------------------ flip / rot90


@lowering(aten.flip.default)
def flip(ctx: LoweringContext, x: T, dims: Sequence[int]) -> None:
    out = ctx.out()
    flipped = {norm_dim(d, x.ndim) for d in dims} if x.ndim else set()
    pieces = [[(0, n, mirrored(n - 1) if k in flipped else _same)] for k, n in enumerate(out.shape)]
    emit_pieces(ctx, out, pieces, copy_from(ctx, x, out))


@lowering(aten.rot90.default)
def rot90(ctx: LoweringContext, x: T, k: int = 1, dims: Sequence[int] = (0, 1)) -> None:
    """``k`` quarter turns from ``dims[0]`` towards ``dims[1]``."""
    out = ctx.out()
    a, b = (norm_dim(d, x.ndim) for d in dims)
    na, nb = x.shape[a], x.shape[b]
    names = dims_of(out.shape)
    o = [Affine.of(d) for d in names]
    src = list(o)
    turn = k % 4
    if turn == 1:
        src[a], src[b] = o[b], (nb - 1) - o[a]
    elif turn == 2:
        src[a], src[b] = (na - 1) - o[a], (nb - 1) - o[b]
    elif turn == 3:
        src[a], src[b] = (na - 1) - o[b], o[a]
    ctx.statement(nest(names, out.shape), out, names, ctx.load(x, src, out.dtype))


# -------------------------------------------------------------------------------------- roll


def flat_view(ctx: LoweringContext, t: T) -> T | None:
    """A 1-D view over the elements of ``t`` in row-major order, if its layout is dense and
    row-major (else None)."""
    decl = ctx.builder.program.tensors[t.name]
    offset = 0
    if decl.view is not None:
        strides = [s for s, n in zip(decl.view.strides, t.shape, strict=True) if n != 1]
        expected = [s for s, n in zip(contiguous_strides(t.shape), t.shape, strict=True) if n != 1]
        if strides != expected:
            return None
        offset = decl.view.offset
    name = ctx.builder.view(f"{t.name}_flat", t.name, (t.numel,), (1,), offset)
    return T(name, (t.numel,), t.dtype)


def roll_pieces(n: int, shift: int) -> list[Piece]:
    """``out[i] = x[(i - shift) mod n]`` as two boxes."""
    s = shift % n if n else 0
    if s == 0:
        return [(0, n, _same)]
    return [(s, n - s, _same), (0, s, shifted(n - s))]


@lowering(aten.roll.default)
def roll(ctx: LoweringContext, x: T, shifts: Sequence[int], dims: Sequence[int] = ()) -> None:
    out = ctx.out()
    if not dims:  # roll the flattened tensor
        (shift,) = shifts
        src, dst = flat_view(ctx, x), flat_view(ctx, out)
        if src is None or dst is None:
            ctx.fail("without dims on a non-contiguous tensor is not supported")
        emit_pieces(ctx, dst, [roll_pieces(x.numel, int(shift))], copy_from(ctx, src, dst))
        return
    total = [0] * x.ndim
    for s, d in zip(shifts, dims, strict=True):
        total[norm_dim(d, x.ndim)] += int(s)
    pieces = [roll_pieces(n, total[k]) for k, n in enumerate(x.shape)]
    emit_pieces(ctx, out, pieces, copy_from(ctx, x, out))


# ------------------------------------------------------------------------------------ repeat


@lowering(aten.repeat.default)
def repeat(ctx: LoweringContext, x: T, repeats: Sequence[int]) -> None:
    """``out[.., t * n + i, ..] = x[.., i, ..]``; leading repeats add dims."""
    out = ctx.out()
    lead = len(repeats) - x.ndim
    shape = [1] * lead + list(x.shape)
    loops, out_index, x_index = [], [], []
    for k, (r, n) in enumerate(zip(repeats, shape, strict=True)):
        i = Affine.of(f"i{k}")
        loops.append((f"i{k}", n))
        if r != 1:  # a symbolic repeat count stays a size (a guard records r != 1)
            loops.append((f"t{k}", integer(r)))
            out_index.append(Affine.of(f"t{k}") * n + i)
        else:
            out_index.append(i)
        if k >= lead:
            x_index.append(i)
    ctx.statement(loops, out, out_index, ctx.load(x, x_index, out.dtype))


# ----------------------------------------------------------------------------------- padding


def pad_pairs(ndim: int, pad: Sequence[int]) -> list[tuple[int, int]]:
    """``(left, right)`` per dim from PyTorch's last-dim-first pad list (0 for unpadded)."""
    pairs = [(0, 0)] * ndim
    for j in range(len(pad) // 2):
        pairs[ndim - 1 - j] = (int(pad[2 * j]), int(pad[2 * j + 1]))
    return pairs


def interior(n: int, left: int, right: int) -> Piece:
    """Output indices that read ``x`` itself: ``o - left`` in ``[0, n)``."""
    m = n + left + right
    start = max(left, 0)
    return (start, min(m, left + n) - start, shifted(start - left))


def padded_pieces(n: int, left: int, right: int, mode: str) -> list[Piece]:
    m = n + left + right
    inner = interior(n, left, right)
    a_len = min(max(left, 0), m)
    c_start = max(0, left + n)
    if mode == "reflect":
        first, last = mirrored(left), mirrored(2 * (n - 1) + left - c_start)
    else:
        first, last = constant(0), constant(n - 1)
    return [(0, a_len, first), inner, (c_start, m - c_start, last)]


def _padding(mode: str) -> Callable[..., None]:
    def lower(ctx: LoweringContext, x: T, padding: Sequence[int]) -> None:
        out = ctx.out()
        pairs = pad_pairs(x.ndim, padding)
        pieces = [padded_pieces(n, lo, hi, mode) for n, (lo, hi) in zip(x.shape, pairs)]
        emit_pieces(ctx, out, pieces, copy_from(ctx, x, out))

    return lower


lowering(aten.reflection_pad1d.default, aten.reflection_pad2d.default)(_padding("reflect"))
lowering(aten.reflection_pad3d.default)(_padding("reflect"))
lowering(aten.replication_pad1d.default, aten.replication_pad2d.default)(_padding("replicate"))
lowering(aten.replication_pad3d.default)(_padding("replicate"))


@lowering(aten.constant_pad_nd.default)
def constant_pad_nd(ctx: LoweringContext, x: T, pad: Sequence[int], value: float = 0) -> None:
    out = ctx.out()
    pairs = pad_pairs(x.ndim, pad)
    inner = [interior(n, lo, hi) for n, (lo, hi) in zip(x.shape, pairs, strict=True)]
    emit_pieces(ctx, out, [[p] for p in inner], copy_from(ctx, x, out))
    fill = Const(value)
    for k, m in enumerate(out.shape):
        start, length, _ = inner[k]
        borders = [(0, start, _same), (start + max(length, 0), m - start - max(length, 0), _same)]
        for border in borders:
            pieces = [[inner[j] if j < k else (0, out.shape[j], _same)] for j in range(out.ndim)]
            pieces[k] = [border]
            emit_pieces(ctx, out, pieces, lambda source: fill)


# ----------------------------------------------------------------------- pixel (un)shuffle


def _pixel_shuffle(ctx: LoweringContext, x: T, r: int, shuffle: bool) -> None:
    """``out[.., c, h r + i, w r + j] = x[.., c r² + i r + j, h, w]`` (shuffle) or the
    reverse (unshuffle), over loops ``(.., c, h, i, w, j)``."""
    out = ctx.out()
    r = int(r)
    small = x if shuffle else out  # the (.., C r², H, W) side
    lead = dims_of(small.shape[:-3], "b")
    c_r2, h, w = small.shape[-3:]
    loops = [
        *nest(lead, small.shape[:-3]),
        ("c", c_r2 // (r * r)),
        ("h", h),
        ("i", r),
        ("w", w),
        ("j", r),
    ]
    c, hh, i, ww, j = (Affine.of(v) for v in ("c", "h", "i", "w", "j"))
    packed = [*lead, c * (r * r) + i * r + j, hh, ww]
    spread = [*lead, c, hh * r + i, ww * r + j]
    src, dst = (packed, spread) if shuffle else (spread, packed)
    ctx.statement(loops, out, dst, ctx.load(x, src, out.dtype))


@lowering(aten.pixel_shuffle.default)
def pixel_shuffle(ctx: LoweringContext, x: T, upscale_factor: int) -> None:
    _pixel_shuffle(ctx, x, upscale_factor, True)


@lowering(aten.pixel_unshuffle.default)
def pixel_unshuffle(ctx: LoweringContext, x: T, downscale_factor: int) -> None:
    _pixel_shuffle(ctx, x, downscale_factor, False)
