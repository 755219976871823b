"""Data movement: views (free), copies, padding, concatenation, iota, slices with static
starts, dynamic_update_slice, and gather/scatter with indices known while tracing.

Views cost nothing and emit nothing: ``broadcast_in_dim`` (stride 0 on new and size-1 dims),
``reshape`` (when the operand's layout allows it, as ``torch.Tensor.view`` decides; otherwise a
contiguous copy first), ``transpose``, ``squeeze``, ``slice``, ``split`` and ``dynamic_slice``
with starts known while tracing. XLA makes these bitcasts or fuses them into their consumers,
so a free view is a lower bound of what it runs. ``rev``, ``pad``, ``concatenate`` and ``iota``
are light copies (fused); ``dynamic_update_slice`` and ``scatter`` are heavy (a kernel of their
own, in place when the operand is dead afterwards, as XLA's buffer assignment does).

Indices that depend on traced array values (an embedding lookup, ``x[i]`` with a traced
``i``, ``dynamic_slice`` with traced starts) become indirect index entries
(:class:`solar.ir.scalar.Indirect`): the index tensor is read, the index arithmetic (XLA's
clamping of starts) is free, and the gathered elements are counted at their provable minimum.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from math import prod

import numpy as np

from solar.algebra.size import integer
from solar.frontend.jax.lower import LoweringContext, V, contiguous_strides
from solar.frontend.jax.registry import DataDependentError, lowering
from solar.frontend.layout import T, dims_of, nest
from solar.ir.affine import Affine, AffineLike
from solar.ir.scalar import Const, Expr, Index, Indirect, Load, call

# ---------------------------------------------------------------------------------------------
# views


def layout(ctx: LoweringContext, x: V) -> tuple[T, tuple[int, ...], int]:
    t = ctx.tensor(x)
    _, strides, offset = ctx.lowerer.layout(t)
    return t, strides, offset


@lowering("broadcast_in_dim", kind="view")
def broadcast_in_dim(
    ctx: LoweringContext, x: V, *dyn: V, shape, broadcast_dimensions, **_: object
) -> None:
    t, strides, offset = layout(ctx, x)
    out = [0] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        out[d] = strides[i] if x.shape[i] == shape[d] else 0
    ctx.set_out(0, ctx.view(t, shape, out, offset), x)


def view_strides(
    old: Sequence[int], strides: Sequence[int], new: Sequence[int]
) -> list[int] | None:
    """Strides of ``new`` viewing the same elements as ``old`` with ``strides`` in row-major
    order, or None if that is not a strided view (torch's ``computeStride``)."""
    if prod(new) <= 1 or prod(old) == 0:
        return [0] * len(new)
    old = [integer(s) for s in old]
    newstride = [0] * len(new)
    view_d = len(new) - 1
    chunk = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                newstride[view_d] = view_numel * chunk
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk = strides[d - 1]
                tensor_numel = view_numel = 1
    return newstride if view_d == -1 else None


def contiguous(ctx: LoweringContext, x: V) -> T:
    """A contiguous copy of ``x`` (a light unit) unless it already is contiguous."""
    t, strides, offset = layout(ctx, x)
    if offset == 0 and tuple(strides) == contiguous_strides(t.shape):
        base = ctx.lowerer.program.base(t.name)
        if ctx.lowerer.program.tensors[base].numel == t.numel:
            return t
    dst = ctx.lowerer.fresh_tensor(f"{ctx.prim}_copy", t.shape, t.dtype)
    dims = dims_of(t.shape)
    ctx.statement(nest(dims, t.shape), dst, dims, ctx.load(t, dims))
    return dst


@lowering("reshape", kind="view")
def reshape(ctx: LoweringContext, x: V, *dyn: V, new_sizes, dimensions=None, **_: object) -> None:
    if dimensions is not None:
        ctx.fail("with a dimensions= permutation is not supported (it is deprecated in JAX)")
    t, strides, offset = layout(ctx, x)
    new = view_strides(x.shape, strides, new_sizes)
    src: V | None = x
    if new is None:  # not expressible as a view: a contiguous copy first (XLA: a transpose)
        t, offset, new, src = contiguous(ctx, x), 0, list(contiguous_strides(new_sizes)), None
    ctx.set_out(0, ctx.view(t, new_sizes, new, offset), src)


@lowering("transpose", kind="view")
def transpose(ctx: LoweringContext, x: V, *, permutation, **_: object) -> None:
    t, strides, offset = layout(ctx, x)
    shape = [x.shape[p] for p in permutation]
    ctx.set_out(0, ctx.view(t, shape, [strides[p] for p in permutation], offset), x)


@lowering("squeeze", kind="view")
def squeeze(ctx: LoweringContext, x: V, *, dimensions, **_: object) -> None:
    t, strides, offset = layout(ctx, x)
    drop = {d % max(x.ndim, 1) for d in dimensions}
    keep = [k for k in range(x.ndim) if k not in drop]
    ctx.set_out(0, ctx.view(t, [x.shape[k] for k in keep], [strides[k] for k in keep], offset), x)


@lowering("expand_dims", kind="view")
def expand_dims(ctx: LoweringContext, x: V, *, dimensions, **_: object) -> None:
    t, strides, offset = layout(ctx, x)
    shape = ctx.out_avals[0][0]
    it = iter(strides)
    new = [0 if k in set(dimensions) else next(it) for k in range(len(shape))]
    ctx.set_out(0, ctx.view(t, shape, new, offset), x)


def slice_view(
    ctx: LoweringContext, x: V, starts: Sequence[int], sizes: Sequence[int], steps=None
) -> T:
    t, strides, offset = layout(ctx, x)
    steps = steps or [1] * x.ndim
    offset += sum(int(s) * st for s, st in zip(starts, strides, strict=True))
    new = [st * int(k) for st, k in zip(strides, steps, strict=True)]
    return ctx.view(t, sizes, new, offset)


@lowering("slice", kind="view")
def slice_(
    ctx: LoweringContext, x: V, *, start_indices, limit_indices, strides=None, **_: object
) -> None:
    steps = strides or [1] * x.ndim
    sizes = [max(0, -(-(hi - lo) // st)) for lo, hi, st in zip(start_indices, limit_indices, steps)]
    ctx.set_out(0, slice_view(ctx, x, start_indices, sizes, steps), x)


@lowering("split", kind="view")
def split(ctx: LoweringContext, x: V, *, sizes, axis: int, **_: object) -> None:
    start = 0
    for i, n in enumerate(sizes):
        starts = [start if k == axis else 0 for k in range(x.ndim)]
        shape = [int(n) if k == axis else x.shape[k] for k in range(x.ndim)]
        ctx.set_out(i, slice_view(ctx, x, starts, shape), x)
        start += int(n)


def known_starts(ctx: LoweringContext, starts: Sequence[V], what: str) -> list[int]:
    out = []
    for s in starts:
        v = s.scalar()
        if v is None:
            raise DataDependentError(
                ctx.prim,
                ctx.source,
                f"its {what} depend on traced values; indirect indices are not in the IR",
            )
        out.append(int(v))
    return out


def clamp_starts(starts: Sequence[int], shape: Sequence[int], sizes: Sequence[int]) -> list[int]:
    """XLA clamps dynamic slice starts so the slice stays in bounds."""
    return [min(max(s, 0), n - k) for s, n, k in zip(starts, shape, sizes, strict=True)]


def starts_of(
    ctx: LoweringContext, starts: Sequence[V], shape: Sequence[int], sizes: Sequence[int]
) -> list[int | Expr]:
    """Per dim, the start XLA uses (clamped so the slice stays in bounds): an int when known
    while tracing, else an index expression reading the traced scalar (free index
    arithmetic)."""
    out: list[int | Expr] = []
    for s, n, k in zip(starts, shape, sizes, strict=True):
        v = exact_scalar(s)
        if v is not None:
            out.append(min(max(v, 0), integer(n) - integer(k)))
        else:
            t = ctx.tensor(s)
            e = Load(t.name, (Affine.of(0),) * t.ndim)
            out.append(call("minimum", call("maximum", e, Const(0)), Const(int(n) - int(k))))
    return out


def exact_scalar(v: V) -> int | None:
    """A known scalar index as an int, exact when it was computed from symbolic sizes (a
    :class:`~solar.algebra.size.Size`, or else the sizes specialize); None when unknown."""
    if v.sym is not None and v.sym.size == 1:
        return v.sym.reshape(-1)[0]
    x = v.scalar()
    if x is None:
        return None
    v.specialize()
    return int(x)


def entry(start: int | Expr, d: AffineLike) -> Affine | Indirect:
    """``start + d``: affine for a known start, else an indirect (data-dependent) entry."""
    if isinstance(start, int):
        return Affine.of(d) + start
    return Indirect(call("add", start, Index(Affine.of(d))))


@lowering("dynamic_slice", kind="view")
def dynamic_slice(ctx: LoweringContext, x: V, *starts: V, slice_sizes, **_: object) -> None:
    """A view when the starts are known while tracing; else a gather (indirect entries)."""
    s = starts_of(ctx, starts, x.shape, slice_sizes)
    if all(isinstance(v, int) for v in s):
        ctx.set_out(0, slice_view(ctx, x, s, slice_sizes), x)  # type: ignore[arg-type]
        return
    out = ctx.out()
    dims = dims_of(out.shape)
    index = [entry(v, d) for v, d in zip(s, dims, strict=True)]
    ctx.statement(nest(dims, out.shape), out, dims, ctx.load(ctx.tensor(x), index, out.dtype))


# ---------------------------------------------------------------------------------------------
# light copies


@lowering("rev")
def rev(ctx: LoweringContext, x: V, *, dimensions, **_: object) -> None:
    out = ctx.out()
    dims = dims_of(out.shape)
    flip = {d % max(x.ndim, 1) for d in dimensions}
    index = [
        n - 1 - Affine.of(d) if k in flip else d for k, (d, n) in enumerate(zip(dims, x.shape))
    ]
    ctx.statement(nest(dims, out.shape), out, dims, ctx.operand_at(x, index, out.dtype))


@lowering("pad")
def pad(ctx: LoweringContext, x: V, value: V, *, padding_config, **_: object) -> None:
    """``out = value`` where no element of ``x`` lands, then ``out[lo + (1+interior) i] =
    x[i]`` (negative padding crops)."""
    out = ctx.out()
    dims = dims_of(out.shape)
    fill = ctx.operand(value, [], out.dtype)
    ctx.statement(nest(dims, out.shape), out, dims, fill)
    index, src, extents = [], [], []
    for d, n, m, (lo, _hi, interior) in zip(dims, x.shape, out.shape, padding_config, strict=True):
        lo, step = int(lo), int(interior) + 1
        first = max(0, -(lo // step))  # smallest i with lo + step*i >= 0
        last = min(n - 1, (m - 1 - lo) // step)  # largest i with lo + step*i < m
        extents.append(max(0, last - first + 1))
        src.append(Affine.of(d) + first)
        index.append(Affine.of(d) * step + (int(lo) + step * first))
    ctx.statement(nest(dims, extents), out, index, ctx.operand_at(x, src, out.dtype))


@lowering("concatenate")
def concatenate(ctx: LoweringContext, *xs: V, dimension: int, **_: object) -> None:
    out = ctx.out()
    dims = dims_of(out.shape)
    start = 0
    for x in xs:
        index = [Affine.of(d) + (start if k == dimension else 0) for k, d in enumerate(dims)]
        ctx.statement(nest(dims, x.shape), out, index, ctx.operand_at(x, dims, out.dtype))
        start += x.shape[dimension]


@lowering("iota")
def iota(ctx: LoweringContext, *, dimension: int, **_: object) -> None:
    out = ctx.out()
    dims = dims_of(out.shape)
    ctx.statement(nest(dims, out.shape), out, dims, Index(Affine.of(dims[dimension])))


# ---------------------------------------------------------------------------------------------
# updates: dynamic_update_slice and scatter (heavy: a kernel of their own)


def update_target(ctx: LoweringContext, x: V) -> T:
    """The tensor an update of ``x`` writes: ``x`` itself when it is dead afterwards and owns
    its storage (XLA updates in place), else a fresh copy of it."""
    lw = ctx.lowerer
    if x.t is not None and ctx.dead(0):
        base = lw.program.base(x.t.name)
        decl = lw.program.tensors[x.t.name]
        if (
            decl.view is None
            and lw.base_refs[base] == 1
            and decl.role in ("intermediate", "local")
            and base not in lw.program.outputs
        ):
            ctx.bind_out(0, V(x.shape, x.dtype, x.t, owned=True))
            return x.t
    out = ctx.out()
    dims = dims_of(out.shape)
    ctx.statement(nest(dims, out.shape), out, dims, ctx.operand(x, dims, out.dtype))
    return out


@lowering("dynamic_update_slice", kind="heavy")
def dynamic_update_slice(ctx: LoweringContext, x: V, update: V, *starts: V, **_: object) -> None:
    s = starts_of(ctx, starts, x.shape, update.shape)
    target = update_target(ctx, x)
    dims = dims_of(update.shape)
    index = [entry(v, d) for v, d in zip(s, dims, strict=True)]
    ctx.statement(nest(dims, update.shape), target, index, ctx.operand(update, dims, x.dtype))


def _known_indices(ctx: LoweringContext, idx: V) -> np.ndarray:
    if idx.known is None:
        raise DataDependentError(
            ctx.prim,
            ctx.source,
            "its indices are traced array values (an embedding lookup or a traced index); "
            "indirect indices are not in the IR yet",
        )
    return np.asarray(idx.known).astype(np.int64)


def _affine_fit(values: np.ndarray) -> tuple[int, list[int]] | None:
    """``values[b0, b1, ...] == c + Σ a_j b_j`` exactly: ``(c, [a_j])``, or None."""
    if values.size == 0:
        return 0, [0] * values.ndim
    c = int(values.reshape(-1)[0])
    coefs = []
    for j, n in enumerate(values.shape):
        if n > 1:
            sl = [0] * values.ndim
            sl[j] = 1
            coefs.append(int(values[tuple(sl)]) - c)
        else:
            coefs.append(0)
    grids = np.indices(values.shape)
    pred = c + sum(a * g for a, g in zip(coefs, grids, strict=True))
    return (c, coefs) if np.array_equal(pred, values) else None


MAX_POSITIONS = 256  # irregular known indices: at most this many statements, one per position


@lowering("gather")
def gather(
    ctx: LoweringContext,
    x: V,
    idx: V,
    *,
    dimension_numbers,
    slice_sizes,
    mode=None,
    fill_value=None,
    **_: object,
) -> None:
    """Gather with indices known while tracing: one affine statement when the starts are an
    affine function of the batch position, else one statement per position (few only)."""
    dn = dimension_numbers
    if idx.known is None or tuple(getattr(dn, "operand_batching_dims", ())):
        traced_gather(ctx, x, idx, dn, slice_sizes, mode, fill_value)
        return
    if idx.sym is not None and gather_view(ctx, x, idx.sym, dn, slice_sizes, mode):
        return
    idx.specialize()
    ind = _known_indices(ctx, idx)
    out = ctx.out()
    batch_shape = ind.shape[:-1]
    offset_dims = list(dn.offset_dims)
    batch_out = [k for k in range(out.ndim) if k not in offset_dims]
    window = [d for d in range(x.ndim) if d not in dn.collapsed_slice_dims]
    starts = np.zeros((*batch_shape, x.ndim), dtype=np.int64)
    for j, d in enumerate(dn.start_index_map):
        starts[..., d] = ind[..., j]
    clip = "FILL_OR_DROP" not in str(mode)
    limit = np.array([int(n - k) for n, k in zip(x.shape, slice_sizes, strict=True)])
    inb = np.asarray(np.all((starts >= 0) & (starts <= limit), axis=-1))
    if clip:
        starts = np.clip(starts, 0, limit)
        inb[...] = True
    dims = dims_of(out.shape)
    fill = fill_value if fill_value is not None else (np.nan if "float" in out.dtype else 0)
    bdims = [dims[k] for k in batch_out]
    wdims = [dims[k] for k in offset_dims]
    if not inb.all():
        ctx.statement(nest(dims, out.shape), out, dims, Const(fill))
    fits = [_affine_fit(starts[..., d]) for d in range(x.ndim)] if inb.all() else [None]
    if all(f is not None for f in fits):
        index = []
        for d in range(x.ndim):
            c, coefs = fits[d]  # type: ignore[misc]
            e = Affine.build({b: a for b, a in zip(bdims, coefs, strict=True)}, c)
            if d in window:
                e = e + wdims[window.index(d)]
            index.append(e)
        ctx.statement(nest(dims, out.shape), out, dims, ctx.operand_at(x, index, out.dtype))
        return
    positions = list(product(*(range(n) for n in batch_shape)))
    if len(positions) > MAX_POSITIONS:
        ctx.fail(
            f"with {len(positions)} irregular known indices is not supported (at most "
            f"{MAX_POSITIONS}; affine index patterns are)"
        )
    for pos in positions:
        if not inb[pos]:
            continue
        index = [
            Affine.of(int(starts[pos][d])) + (wdims[window.index(d)] if d in window else 0)
            for d in range(x.ndim)
        ]
        oindex: list = [0] * out.ndim
        for k, b in zip(batch_out, pos, strict=True):
            oindex[k] = b
        for k, w in zip(offset_dims, wdims, strict=True):
            oindex[k] = w
        loop = [(w, out.shape[k]) for k, w in zip(offset_dims, wdims, strict=True)]
        ctx.statement(loop, out, oindex, ctx.operand_at(x, index, out.dtype))


def gather_view(ctx: LoweringContext, x: V, starts, dn, slice_sizes, mode) -> bool:
    """A gather of one window at starts computed from symbolic sizes (``x[:, -1]`` of a
    symbolic dim) as the view a numeric trace makes of it (a slice); False where it is not
    one window (clamped in bounds, as XLA does)."""
    if starts.ndim != 1 or "FILL_OR_DROP" in str(mode):
        return False
    start = [0] * x.ndim
    for j, d in enumerate(dn.start_index_map):
        start[d] = min(max(starts[j], 0), x.shape[d] - slice_sizes[d])
    window = [d for d in range(x.ndim) if d not in dn.collapsed_slice_dims]
    t, strides, offset = layout(ctx, x)
    offset += sum(s * st for s, st in zip(start, strides, strict=True))
    shape = ctx.out_avals[0][0]
    ctx.set_out(0, ctx.view(t, shape, [strides[d] for d in window], offset), x)
    return True


SCATTERS = {"scatter": None, "scatter-add": "sum", "scatter_add": "sum", "scatter-mul": "prod",
            "scatter_mul": "prod", "scatter-min": "min", "scatter_min": "min",
            "scatter-max": "max", "scatter_max": "max"}  # fmt: skip


@lowering(*SCATTERS, kind="heavy")
def scatter(
    ctx: LoweringContext, x: V, idx: V, updates: V, *, dimension_numbers, mode=None, **_: object
) -> None:
    """Scatter with indices known while tracing: the operand (in place when dead, else a copy),
    then the updates written (or combined) at their windows, one statement per position
    unless one affine, injective statement covers them all."""
    dn = dimension_numbers
    combine = SCATTERS[ctx.prim]
    if idx.known is None or tuple(getattr(dn, "operand_batching_dims", ())):
        traced_scatter(ctx, x, idx, updates, dn, combine)
        return
    ind = _known_indices(ctx, idx)
    target = update_target(ctx, x)
    uwin = list(dn.update_window_dims)
    ubatch = [k for k in range(updates.ndim) if k not in uwin]
    window = [d for d in range(x.ndim) if d not in dn.inserted_window_dims]
    wsize = [1] * x.ndim
    for d, k in zip(window, uwin, strict=True):
        wsize[d] = updates.shape[k]
    batch_shape = ind.shape[:-1]
    starts = np.zeros((*batch_shape, x.ndim), dtype=np.int64)
    for j, d in enumerate(dn.scatter_dims_to_operand_dims):
        starts[..., d] = ind[..., j]
    limit = np.array([int(n - k) for n, k in zip(x.shape, wsize, strict=True)])
    if "CLIP" in str(mode):
        starts = np.clip(starts, 0, limit)
    inb = np.asarray(np.all((starts >= 0) & (starts <= limit), axis=-1))
    dims = dims_of(updates.shape)
    wdims = {d: dims[k] for d, k in zip(window, uwin, strict=True)}
    bdims = [dims[k] for k in ubatch]

    def emit(loop_dims: list[str], index: list, uindex: list) -> None:
        val = ctx.operand_at(updates, uindex, x.dtype)
        ext = dict(zip(dims, updates.shape, strict=True))
        loop = [(d, ext[d]) for d in loop_dims]
        if combine is None:
            ctx.statement(loop, target, index, val)
        elif combine == "sub":
            ctx.statement(loop, target, index, call("neg", val), reduce="sum", accumulate=True)
        else:
            ctx.statement(loop, target, index, val, reduce=combine, accumulate=True)

    fits = [_affine_fit(starts[..., d]) for d in range(x.ndim)]
    if inb.all() and all(f is not None for f in fits) and _injective(starts, wsize):
        index = []
        for d in range(x.ndim):
            c, coefs = fits[d]  # type: ignore[misc]
            e = Affine.build(dict(zip(bdims, coefs, strict=True)), c)
            index.append(e + wdims[d] if d in wdims else e)
        emit(dims, index, dims)
    else:
        positions = list(product(*(range(n) for n in batch_shape)))
        if len(positions) > MAX_POSITIONS:
            ctx.fail(
                f"with {len(positions)} irregular or overlapping known indices is not "
                f"supported (at most {MAX_POSITIONS})"
            )
        for pos in positions:
            if not inb[pos]:
                continue
            index = [Affine.of(int(starts[pos][d])) + wdims.get(d, 0) for d in range(x.ndim)]
            uindex: list = list(dims)
            for k, b in zip(ubatch, pos, strict=True):
                uindex[k] = b
            emit([dims[k] for k in uwin], index, uindex)


def _injective(starts: np.ndarray, wsize: Sequence[int]) -> bool:
    """Whether the update windows at ``starts`` are pairwise disjoint."""
    flat = starts.reshape(-1, starts.shape[-1])
    if len(flat) <= 1:
        return True
    if len(flat) * prod(wsize) > 1 << 20:
        return False
    seen: set[tuple] = set()
    for s in flat:
        for w in product(*(range(k) for k in wsize)):
            p = tuple(int(a) + b for a, b in zip(s, w, strict=True))
            if p in seen:
                return False
            seen.add(p)
    return True


@lowering("stack")
def stack(ctx: LoweringContext, *xs: V, axis: int, **_: object) -> None:
    """One statement per operand, writing ``out[..., j, ...]``."""
    out = ctx.out()
    for j, x in enumerate(xs):
        dims = dims_of(x.shape)
        index = [*dims[:axis], j, *dims[axis:]]
        ctx.statement(nest(dims, x.shape), out, index, ctx.operand_at(x, dims, out.dtype))


@lowering("unstack", kind="view")
def unstack(ctx: LoweringContext, x: V, *, axis: int, **_: object) -> None:
    t, strides, offset = layout(ctx, x)
    # the IR tensor's own shape: a typed PRNG key array carries its key data as trailing dims
    full = ctx.lowerer.program.tensors[t.name].shape
    shape = [n for k, n in enumerate(full) if k != axis]
    rest = [s for k, s in enumerate(strides) if k != axis]
    for j in range(x.shape[axis]):
        ctx.set_out(j, ctx.view(t, shape, rest, offset + j * strides[axis]), x)


@lowering("tile")
def tile(ctx: LoweringContext, x: V, *, reps, **_: object) -> None:
    """``out[r*n + j] = x[j]`` per dim: loop dims ``r<reps``, ``j<n``."""
    out = ctx.out()
    reps = [1] * (out.ndim - len(reps)) + [int(r) for r in reps]
    shape = [1] * (out.ndim - x.ndim) + list(x.shape)
    dims, index, src = [], [], []
    for k, (r, n) in enumerate(zip(reps, shape, strict=True)):
        dims += [(f"r{k}", r), (f"j{k}", n)]
        index.append(Affine.of(f"r{k}") * n + f"j{k}")
        src.append(f"j{k}")
    src = src[out.ndim - x.ndim :]
    ctx.statement(dims, out, index, ctx.operand_at(x, src, out.dtype))


@lowering("zeros_like")
def zeros_like(ctx: LoweringContext, x: V, **_: object) -> None:
    out = ctx.out()
    dims = dims_of(out.shape)
    ctx.statement(nest(dims, out.shape), out, dims, Const(0))


@lowering("empty", "empty2", kind="view")
def empty(ctx: LoweringContext, *args: V, **_: object) -> None:
    """An allocation: declares the outputs, launches nothing."""
    ctx.outs()


@lowering("platform_index", kind="view", fold=False)
def platform_index(ctx: LoweringContext, *, platforms, **_: object) -> None:
    """The branch ``lax.platform_dependent`` takes on an NVIDIA GPU: known while tracing."""
    index = next(
        (i for i, ps in enumerate(platforms) if ps and {"cuda", "gpu"} & set(ps)),
        next((i for i, ps in enumerate(platforms) if ps is None), 0),
    )
    ctx.set_out(0, np.asarray(index, dtype=ctx.out_avals[0][1]))


def _start(ctx: LoweringContext, idx: T, batch: list, j: int, limit: int) -> Expr:
    """``clamp(idx[batch.., j], 0, limit)``: index arithmetic (free)."""
    e = Load(idx.name, (*(Affine.of(b) for b in batch), Affine.of(j)))
    return call("minimum", call("maximum", e, Const(0)), Const(int(limit)))


def traced_gather(ctx: LoweringContext, x: V, idx: V, dn, slice_sizes, mode, fill_value) -> None:
    """A gather whose indices are traced values: indirect entries ``{clamp(idx[b, j]) + w}``
    (clamped as XLA's CLIP/PROMISE_IN_BOUNDS modes do; FILL_OR_DROP selects the fill value
    where a start is out of bounds)."""
    out = ctx.out()
    it = ctx.tensor(idx)
    dims = dims_of(out.shape)
    offset_dims = list(dn.offset_dims)
    batch = [dims[k] for k in range(out.ndim) if k not in offset_dims]  # <-> idx dims[:-1]
    obatch = list(getattr(dn, "operand_batching_dims", ()))
    ibatch = list(getattr(dn, "start_indices_batching_dims", ()))
    window = [d for d in range(x.ndim) if d not in dn.collapsed_slice_dims and d not in obatch]
    wdims = dict(zip(window, [dims[k] for k in offset_dims], strict=True))
    index: list = []
    checks: list[Expr] = []
    for d in range(x.ndim):
        if d in obatch:
            index.append(Affine.of(batch[ibatch[obatch.index(d)]]))
        elif d in dn.start_index_map:
            j = list(dn.start_index_map).index(d)
            limit = x.shape[d] - int(slice_sizes[d])
            start = _start(ctx, it, batch, j, limit)
            index.append(Indirect(call("add", start, Index(Affine.of(wdims[d]))) if d in wdims
                                  else start))  # fmt: skip
            raw = Load(it.name, (*(Affine.of(b) for b in batch), Affine.of(j)))
            checks.append(
                call("logical_and", call("ge", raw, Const(0)), call("le", raw, Const(limit)))
            )
        else:
            index.append(Affine.of(wdims[d]) if d in wdims else Affine.of(0))
    value = ctx.load(ctx.tensor(x), index, out.dtype)
    if "FILL_OR_DROP" in str(mode) and checks:
        fill = (
            fill_value if fill_value is not None else (float("nan") if "float" in out.dtype else 0)
        )
        ok = checks[0]
        for c in checks[1:]:
            ok = call("logical_and", ok, c)
        value = call("where", ok, value, Const(fill))
    ctx.statement(nest(dims, out.shape), out, dims, value)


def traced_scatter(ctx: LoweringContext, x: V, idx: V, updates: V, dn, combine) -> None:
    """A scatter whose indices are traced values: the operand (in place when dead, else a
    copy), then ``out[{clamp(idx[b, j]) + w}] (op)= updates[b, w]``. Out-of-bounds windows are
    clamped into bounds (XLA's FILL_OR_DROP drops them)."""
    target = update_target(ctx, x)
    it = ctx.tensor(idx)
    dims = dims_of(updates.shape)
    uwin = list(dn.update_window_dims)
    batch = [dims[k] for k in range(updates.ndim) if k not in uwin]  # <-> idx dims[:-1]
    obatch = list(getattr(dn, "operand_batching_dims", ()))
    ibatch = list(getattr(dn, "scatter_indices_batching_dims", ()))
    window = [d for d in range(x.ndim) if d not in dn.inserted_window_dims and d not in obatch]
    wdims = dict(zip(window, [dims[k] for k in uwin], strict=True))
    wsize = {d: updates.shape[k] for d, k in zip(window, uwin, strict=True)}
    index: list = []
    for d in range(x.ndim):
        if d in obatch:
            index.append(Affine.of(batch[ibatch[obatch.index(d)]]))
        elif d in dn.scatter_dims_to_operand_dims:
            j = list(dn.scatter_dims_to_operand_dims).index(d)
            start = _start(ctx, it, batch, j, x.shape[d] - wsize.get(d, 1))
            index.append(Indirect(call("add", start, Index(Affine.of(wdims[d]))) if d in wdims
                                  else start))  # fmt: skip
        else:
            index.append(Affine.of(wdims[d]) if d in wdims else Affine.of(0))
    val = ctx.operand(updates, dims, x.dtype)
    loop = nest(dims, updates.shape)
    if combine is None:
        ctx.statement(loop, target, index, val)
    elif combine == "sum":
        ctx.statement(loop, target, index, val, accumulate=True)
    elif combine == "sub":
        ctx.statement(loop, target, index, call("neg", val), accumulate=True)
    else:
        ctx.statement(loop, target, index, val, reduce=combine, accumulate=True)
