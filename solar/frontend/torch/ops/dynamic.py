"""Operators whose output size depends on the data, at the size the trace took for it
(:mod:`solar.frontend.torch.sizes`: the smallest possible, or observed). ONE kernel each.

- ``nonzero`` (``argwhere``, ``torch.where(cond)``): one extern statement per coordinate
  (:mod:`solar.ir.extern` ``nonzero``) reading the input and writing the ``(m, ndim)``
  positions; with ``m = 0`` the kernel still reads every element (``nonzero.count`` into a
  kernel-local counter).
- ``index.Tensor`` with boolean masks (``x[mask]``) and ``masked_select``: the positions of the
  mask (kernel-local) and a gather of ``x`` at them, one kernel.
- ``index_put`` / ``index_put_`` with boolean masks (``x[mask] = v``, ``x[mask] += v``): the
  tensor keeps its shape, but eager writes only the selected elements: the positions of the
  mask (kernel-local, as ``nonzero`` computes them: every mask element read) and a scatter of
  ``v`` at them, one kernel. How many elements are selected is a data-dependent size (the
  smallest, 0, by default: the mask read is then the whole work, a lower bound for every
  mask; observed with ``observe=True``; the rows of ``v`` where it has one per selected
  element).
- ``_unique2`` / ``_unique`` / ``unique_consecutive``: the distinct values (and the inverse and
  counts when asked) as extern statements over the flattened input.
- ``bincount``: ``out[{x[i]}] += w[i]`` (or 1), a scatter-add over zeros.
- ``repeat_interleave.Tensor`` (``torch.repeat_interleave(x, repeats)``'s index): with ``cs``
  the inclusive prefix sum of the repeats, ``out[j] = #{i : cs[i] <= j}``, computed as a
  scatter of run starts and a second prefix sum: ``marks[{cs[i]}] += 1`` (``m + 1`` slots,
  kernel-local), ``out = cumsum(marks)[:m]``; ``n`` + ``n`` + ``m`` adds, no more than CUDA's
  scan and fill loop.
- ``histc``: an extern row routine (one pass over the input; ``bins`` counts).
- ``_local_scalar_dense`` (``.item()``, observed runs only): a copy to the host, no kernel.

Compute is counted as for every extern (0 for the routine, see :mod:`solar.ir.extern`); reads
of the input and writes of the outputs are exact at the traced size.
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import broadcast_index, nest
from solar.frontend.torch.ops.indexing import (
    advanced,
    copy_self,
    gather_index,
    index_load,
    index_put,
    write,
)
from solar.frontend.torch.registry import lowering
from solar.frontend.torch.sizes import MASK_WRITE, MINIMUM
from solar.ir.scalar import Const, Expr, Indirect

aten = torch.ops.aten

MASKS = ("bool", "uint8")


def _row_dims(shape: tuple[int, ...]) -> list[tuple[str, int, bool]]:
    return [(f"r{k}", n, True) for k, n in enumerate(shape)] or [("r", 1, True)]


def _row_names(shape: tuple[int, ...]) -> list[str]:
    return [f"r{k}" for k in range(len(shape))]


def coordinates(ctx: LoweringContext, expr: Expr, shape: tuple[int, ...], m: int) -> list[T]:
    """Kernel-local positions of the non-zero elements of ``expr`` over ``shape`` (an
    expression in ``r0, r1, ...``): one ``(m,)`` int64 tensor per dim. With ``m = 0`` the
    elements are still read (counted into a local)."""
    if m == 0:
        count = ctx.local("count", (1,), "int64")
        dims = [("p", 1), *_row_dims(shape)]
        ctx.statement(dims, count, ["p"], expr, extern="nonzero.count")
    cols = []
    for d in range(max(len(shape), 1)):
        col = ctx.local(f"pos{d}", (m,), "int64")
        attrs = {"shape": tuple(shape), "coord": d, "size": m}
        dims = [("p", m), *_row_dims(shape)]
        ctx.statement(dims, col, ["p"], expr, extern="nonzero", extern_attrs=attrs)
        cols.append(col)
    return cols[: len(shape)]


@lowering(aten.nonzero.default)
def nonzero(ctx: LoweringContext, x: T) -> None:
    out = ctx.out()
    m = out.shape[0]
    expr = ctx.load(x, _row_names(x.shape))
    for d in range(x.ndim):
        attrs = {"shape": x.shape, "coord": d, "size": m}
        dims = [("p", m), *_row_dims(x.shape)]
        ctx.statement(dims, out, ["p", d], expr, extern="nonzero", extern_attrs=attrs)
    if m == 0 or x.ndim == 0:
        coordinates(ctx, expr, x.shape, 0)


_PROBE = 1_000_003  # a row count no traced tensor has: where it lands in the layout, m is


def _mask_rows(ctx: LoweringContext, x: T, indices: list) -> int:
    """The traced count of True elements of the masks (all masks of one index broadcast
    together): read off the output where the mask positions land."""
    probe = [
        *(
            [T("probe", (_PROBE,), "int64")] * t.ndim
            if isinstance(t, T) and t.dtype in MASKS
            else [t]
            for t in indices
        )
    ]
    _, shape, _ = advanced(ctx, x, [p for group in probe for p in group])
    return ctx.out().shape[list(shape).index(_PROBE)]


@lowering(aten.index.Tensor)
def index(ctx: LoweringContext, x: T, indices: list) -> None:
    """``x[i0, :, i2]``: a gather (:func:`~solar.frontend.torch.ops.indexing.gather_index`),
    or with boolean masks among the indices :func:`masked_index`."""
    if any(isinstance(t, T) and t.dtype in MASKS for t in indices):
        masked_index(ctx, x, indices)
    else:
        gather_index(ctx, x, indices)


def masked_index(ctx: LoweringContext, x: T, indices: list) -> None:
    """``x[..., mask, ...]``: each boolean mask becomes the kernel-local positions of its
    True elements (one index tensor per mask dim), then an advanced-indexing gather."""
    expanded: list[object] = []
    m = _mask_rows(ctx, x, indices)
    for t in indices:
        if isinstance(t, T) and t.dtype in MASKS:
            expanded += coordinates(ctx, ctx.load(t, _row_names(t.shape)), t.shape, m)
        else:
            expanded.append(t)
    names, shape, src = advanced(ctx, x, expanded)
    out = ctx.out()
    assert tuple(shape) == out.shape, (shape, out.shape)
    ctx.statement(nest(names, shape), out, names, ctx.load(x, src))


@lowering(aten.index_put.default)
def put(ctx: LoweringContext, x: T, indices: list, values: T, accumulate: bool = False) -> None:
    """``x[i0, :, i2] (+)= v``: a scatter (:func:`~solar.frontend.torch.ops.indexing.
    index_put`), or with boolean masks among the indices :func:`masked_put`."""
    if any(isinstance(t, T) and t.dtype in MASKS for t in indices):
        masked_put(ctx, x, indices, values, bool(accumulate))
    else:
        index_put(ctx, x, indices, values, accumulate)


def masked_put(ctx: LoweringContext, x: T, indices: list, values: T, accumulate: bool) -> None:
    """``out = x``, then ``out[..., mask, ...] (+)= v`` at the positions of the mask's True
    elements (kernel-local, one index tensor per mask dim: ATen's ``index_put_`` runs
    ``nonzero`` on each mask), scattered like integer indices."""
    out = ctx.out()
    copy_self(ctx, x, out)
    m = _selected(ctx, x, indices, values)
    expanded: list[object] = []
    for t in indices:
        if isinstance(t, T) and t.dtype in MASKS:
            expanded += coordinates(ctx, ctx.load(t, _row_names(t.shape)), t.shape, m)
        else:
            expanded.append(t)
    names, shape, target = advanced(ctx, x, expanded)
    value = ctx.load(values, broadcast_index(values.shape, names), out.dtype)
    write(ctx, nest(names, shape), out, target, value, accumulate=accumulate)


def _selected(ctx: LoweringContext, x: T, indices: list, values: T) -> int:
    """How many elements the masks select: the rows of ``values`` where it has one value per
    selected element (``x[mask] += 1`` reads ``x[mask]``, traced at its size), else the trace's
    data-dependent size (taken here, in call order, so observed counts line up)."""
    probe = [
        [T("probe", (_PROBE,), "int64")] * t.ndim if isinstance(t, T) and t.dtype in MASKS else [t]
        for t in indices
    ]
    _, shape, _ = advanced(ctx, x, [p for group in probe for p in group])
    taken = int(ctx.sizes.take(MASK_WRITE, 0, MINIMUM, source=ctx.source))
    at = len(values.shape) - (len(shape) - list(shape).index(_PROBE))
    return values.shape[at] if at >= 0 and values.shape[at] != 1 else taken


@lowering(aten.masked_select.default)
def masked_select(ctx: LoweringContext, x: T, mask: T) -> None:
    """``out[j] = x[positions of mask[j]]`` over the broadcast shape of ``x`` and ``mask``."""
    out = ctx.out()
    shape = tuple(torch.broadcast_shapes(x.shape, mask.shape))
    rows = _row_names(shape)
    cols = coordinates(ctx, ctx.load(mask, broadcast_index(mask.shape, rows)), shape, out.shape[0])
    if not shape:  # a 0-dim mask selects x itself or nothing
        ctx.statement(nest(["j"], out.shape), out, ["j"], ctx.load(x, []))
        return
    lead = len(shape) - x.ndim
    src = [
        0 if n == 1 else Indirect(index_load(cols[lead + k], ["j"])) for k, n in enumerate(x.shape)
    ]
    ctx.statement(nest(["j"], out.shape), out, ["j"], ctx.load(x, src))


def _unique_outputs(ctx: LoweringContext, x: T, consecutive: bool, **attrs: object) -> None:
    values, inverse, counts = (ctx.outs() + [None, None])[:3]
    m = values.shape[0]  # type: ignore[union-attr]
    flat = (x.numel,)
    expr = ctx.load(x, _row_names(x.shape))
    rows = _row_dims(x.shape)
    base = {"consecutive": consecutive, "size": m, **attrs}
    for which, out, n in (("values", values, m), ("counts", counts, m)):
        if out is not None and out.numel == n:
            ctx.statement(
                [("p", n), *rows], out, ["p"], expr, extern=f"unique.{which}", extern_attrs=base
            )
    if inverse is not None and inverse.numel == x.numel and x.numel > 0:
        flat_inv = ctx.builder.view(f"{inverse.name}_flat", inverse.name, flat, (1,), 0)
        ctx.statement(
            [("p", x.numel), *rows],
            T(flat_inv, flat, inverse.dtype),
            ["p"],
            expr,
            extern="unique.inverse",
            extern_attrs=base,
        )
    if m == 0 and x.numel > 0:
        coordinates(ctx, expr, x.shape, 0)


@lowering(aten._unique2.default)
def unique2(
    ctx: LoweringContext, x: T, sorted=True, return_inverse=False, return_counts=False
) -> None:  # noqa: A002
    _unique_outputs(ctx, x, False, sorted=bool(sorted))


@lowering(aten._unique.default)
def unique_legacy(ctx: LoweringContext, x: T, sorted=True, return_inverse=False) -> None:  # noqa: A002
    _unique_outputs(ctx, x, False, sorted=bool(sorted))


@lowering(aten.unique_consecutive.default)
def unique_consecutive(
    ctx: LoweringContext, x: T, return_inverse=False, return_counts=False, dim=None
) -> None:
    if dim is not None:
        ctx.fail("with dim= is not supported (unique rows); flatten or take unique without dim")
    _unique_outputs(ctx, x, True)


@lowering(aten.bincount.default)
def bincount(ctx: LoweringContext, x: T, weights: T | None = None, minlength: int = 0) -> None:
    """``out = 0`` then ``out[{x[i]}] += weights[i]`` (or 1): a scatter-add."""
    out = ctx.out()
    ctx.statement(nest(["b"], out.shape), out, ["b"], Const(0))
    value = ctx.load(weights, ["i"], out.dtype) if weights is not None else Const(1)
    write(ctx, nest(["i"], x.shape), out, [Indirect(index_load(x, ["i"]))], value, accumulate=True)


@lowering(aten.repeat_interleave.Tensor)
def repeat_interleave(ctx: LoweringContext, repeats: T, output_size: int | None = None) -> None:
    out = ctx.out()
    n, m = repeats.numel, out.shape[0]
    cs = ctx.local("cumsum", (n,), out.dtype)
    ctx.statement([("i", n)], cs, ["i"], ctx.load(repeats, ["i"]), reduce="sum", scan="i")
    marks = ctx.local("marks", (m + 1,), out.dtype)
    ctx.statement([("j", m + 1)], marks, ["j"], Const(0))
    start = Indirect(index_load(cs, ["i"]))
    ctx.statement([("i", n)], marks, [start], Const(1), reduce="sum", accumulate=True)
    ctx.statement([("j", m)], out, ["j"], ctx.load(marks, ["j"]), reduce="sum", scan="j")


@lowering(aten.histc.default)
def histc(ctx: LoweringContext, x: T, bins: int = 100, min: float = 0, max: float = 0) -> None:  # noqa: A002
    """``bins`` counts of the elements in equal bins of ``[min, max]`` (the data's range when
    both are 0, as PyTorch does: then the routine finds it)."""
    out = ctx.out()
    attrs = {"bins": int(bins), "lo": float(min), "hi": float(max)}
    expr = ctx.load(x, _row_names(x.shape))
    ctx.statement(
        [("p", int(bins)), *_row_dims(x.shape)],
        out,
        ["p"],
        expr,
        extern="histc",
        extern_attrs=attrs,
    )


@lowering(aten._local_scalar_dense.default)
def local_scalar(ctx: LoweringContext, x: T) -> None:
    """A copy of one element to the host (``.item()``): no kernel."""
