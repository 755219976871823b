"""Data-dependent indexing: gathers and scatters through :class:`~solar.ir.scalar.Indirect`
index entries. ONE kernel per operator, as eager launches it.

Gathers read ``x[.., {idx[..]}, ..]`` (the index tensor is an ordinary load inside the
indirect entry; index arithmetic such as wrapping negative indices is free):

- ``embedding``: ``out[i.., d] = weight[{ids[i..]}, d]`` (``padding_idx`` only matters for the
  gradient); ``_embedding_bag``/``_embedding_bag_forward_only`` for regular bags (2-D input:
  offsets ``arange(0, N, L)``) with mode sum (optionally ``per_sample_weights``), mean, max.
- ``index_select``, ``gather``, ``take``, and :func:`gather_index` for ``index.Tensor``
  (advanced indexing: integer index tensors broadcast together, mixed with full slices /
  ``None``; negative indices wrap; the advanced dims go first unless the indexed dims are
  adjacent, as NumPy does). ``index.Tensor`` is registered in
  :mod:`solar.frontend.torch.ops.dynamic`, which also takes its boolean masks (a
  data-dependent result size); this module imports nothing of it.

Scatters write ``out[.., {idx[..]}, ..]``. The functional forms first copy ``self`` into the
output (in the same kernel); the in-place forms write ``self`` directly:

- ``scatter`` (src / value; ``reduce="add"/"multiply"``), ``scatter_add``, ``scatter_reduce``
  (sum, prod, mean, amax, amin; ``include_self``), ``index_add`` (``alpha``), ``index_copy``,
  ``index_fill``, ``index_put`` (``accumulate``; with integer index tensors: its
  registration, and its boolean masks, are in :mod:`solar.frontend.torch.ops.dynamic`).
  Overwriting scatters with duplicate indices keep one of the values (which one is
  unspecified, as in PyTorch).

Costs follow :mod:`solar.ir.cost`: the elements selected through an index are counted at their
provable minimum (``exact=False``): an embedding reads at least one table row in the fused
bound; its output write (and its consumer's read) is charged in the unfused bound.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from solar.frontend.torch import fused  # noqa: F401  (defines torch.ops.solar.one_hot)
from solar.frontend.torch.lower import LoweringContext, T, storage_index
from solar.frontend.torch.ops.conventions import acc_dtype, broadcast_index, dims_of, nest, norm_dim
from solar.frontend.torch.registry import DataDependentOperatorError, lowering
from solar.ir.affine import Affine, affines
from solar.ir.dtypes import is_float
from solar.ir.scalar import Const, Expr, Index, Indirect, Load, call

aten = torch.ops.aten


# --------------------------------------------------------------------------------- helpers
def index_load(t: T, index: Sequence[object]) -> Expr:
    """``t[index]`` in its own (integer) dtype: the value of an index tensor."""
    return Load(t.name, affines(index))  # type: ignore[arg-type]


def wrap(e: Expr, n: int) -> Expr:
    """Python-style negative indices: ``e < 0 ? e + n : e`` (index arithmetic, free)."""
    return call("where", call("lt", e, Const(0)), call("add", e, Const(n)), e)


def indirect(t: T, index: Sequence[object], n: int | None = None) -> Indirect:
    """An indirect index entry reading index tensor ``t`` at ``index`` (wrapping negative
    values into ``[0, n)`` when ``n`` is given)."""
    e = index_load(t, index)
    return Indirect(wrap(e, n) if n is not None else e)


def refuse_masks(ctx: LoweringContext, *tensors: object) -> None:
    for t in tensors:
        if isinstance(t, T) and t.dtype in ("bool", "uint8"):
            raise DataDependentOperatorError(ctx.target, ctx.source)


def write(ctx: LoweringContext, dims, out: T, index: Sequence[object], expr: Expr, **kw) -> None:
    """``ctx.statement`` for an output index that may hold indirect entries. When ``out`` is a
    view with an affine map to its storage, the indirect entries are composed into that map
    (a storage index entry that depends on one becomes indirect, with free index arithmetic)."""
    index = affines(index)  # type: ignore[arg-type]
    program = ctx.builder.program
    decl = program.tensors[out.name]
    if decl.view is None or not any(isinstance(e, Indirect) for e in index):
        ctx.statement(dims, out, index, expr, **kw)
        return
    base = program.tensors[decl.view.base]
    mapping = storage_index(decl.shape, decl.view.strides, decl.view.offset, base.shape)
    if mapping is None:  # not affine: write through the view itself
        ctx.statement(dims, out, index, expr, **kw)
        return
    composed: list[object] = []
    for m in mapping:
        coefs = m.coefs
        if not any(isinstance(index[int(v[1:])], Indirect) for v in coefs):
            composed.append(m.substitute({v: index[int(v[1:])] for v in coefs}))  # type: ignore[misc]
            continue
        value: Expr = Const(m.const)
        for v, c in coefs.items():
            x = index[int(v[1:])]
            term = x.expr if isinstance(x, Indirect) else Index(x)
            value = call("add", value, term if c == 1 else call("mul", term, Const(c)))
        composed.append(Indirect(value))
    ctx.statement(dims, T(base.name, base.shape, out.dtype), composed, expr, **kw)


def copy_self(ctx: LoweringContext, self_: T, out: T) -> None:
    """The functional form's ``out = self`` (nothing for the in-place form)."""
    if out.name == self_.name:
        return
    d = dims_of(out.shape)
    ctx.statement(nest(d, out.shape), out, d, ctx.load(self_, d, out.dtype))


def _scalar(x: object, ctx: LoweringContext, dtype: str) -> Expr:
    """A value operand: a Python number, or a 0-dim (or one-element) tensor."""
    if isinstance(x, T):
        return ctx.load(x, [0] * x.ndim, dtype)
    return Const(x)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------- gathers
@lowering(aten.embedding.default)
def embedding(ctx: LoweringContext, weight: T, ids: T, *_: object) -> None:
    """``out[i.., d] = weight[{ids[i..]}, d]``."""
    out = ctx.out()
    i = dims_of(ids.shape)
    dims = [*nest(i, ids.shape), ("d", weight.shape[1])]
    ctx.statement(dims, out, [*i, "d"], ctx.load(weight, [indirect(ids, i), "d"]))


@lowering(aten.index_select.default)
def index_select(ctx: LoweringContext, x: T, dim: int, index: T) -> None:
    out = ctx.out()
    if x.ndim == 0:
        ctx.statement([], out, [], ctx.load(x, []))
        return
    k = norm_dim(dim, x.ndim)
    d = dims_of(out.shape)
    src = [indirect(index, [d[k]] if index.ndim else []) if j == k else d[j] for j in range(x.ndim)]
    ctx.statement(nest(d, out.shape), out, d, ctx.load(x, src))


@lowering(aten.gather.default)
def gather(ctx: LoweringContext, x: T, dim: int, index: T, *_: object) -> None:
    """``out[i..] = x[i.., {index[i..]} at dim, i..]`` over the index's shape."""
    out = ctx.out()
    if index.numel == 0:
        return
    d = dims_of(index.shape)
    if x.ndim == 0:
        ctx.statement(nest(d, index.shape), out, d, ctx.load(x, []))
        return
    k = norm_dim(dim, x.ndim)
    src = [indirect(index, d) if j == k else d[j] for j in range(x.ndim)]
    ctx.statement(nest(d, index.shape), out, d, ctx.load(x, src))


@lowering(aten.take.default)
def take(ctx: LoweringContext, x: T, index: T) -> None:
    """``out[i..] = flat(x)[{index[i..]}]`` (negative indices wrap); ``x`` must be laid out
    contiguously (a flat view of its storage)."""
    from solar.frontend.torch.lower import contiguous_strides

    out = ctx.out()
    program = ctx.builder.program
    decl = program.tensors[x.name]
    offset = 0
    if decl.view is not None:
        strides = tuple(s for s, n in zip(decl.view.strides, x.shape, strict=True) if n > 1)
        want = tuple(s for s, n in zip(contiguous_strides(x.shape), x.shape, strict=True) if n > 1)
        if strides != want:
            ctx.fail("of a non-contiguous tensor is not supported (take a contiguous copy)")
        offset = decl.view.offset
    flat = ctx.builder.view(f"{x.name}_flat", x.name, (x.numel,), (1,), offset)
    d = dims_of(index.shape)
    src = Load(flat, (indirect(index, d, x.numel),))
    ctx.statement(nest(d, index.shape), out, d, src)


def advanced(ctx: LoweringContext, x: T, indices: Sequence[object]):
    """The loop dims, their shape and ``x``'s index for ``x[indices]`` (advanced indexing)."""
    idx = list(indices) + [None] * (x.ndim - len(indices))
    refuse_masks(ctx, *idx)
    adv = [k for k, t in enumerate(idx) if t is not None]
    if not adv:
        ctx.fail("without index tensors is not supported")
    bshape = tuple(torch.broadcast_shapes(*(t.shape for t in idx if isinstance(t, T))))
    adjacent = adv == list(range(adv[0], adv[-1] + 1))
    rest = [k for k in range(x.ndim) if idx[k] is None]
    if adjacent:
        before, after = [k for k in rest if k < adv[0]], [k for k in rest if k > adv[-1]]
        layout = [("x", k) for k in before] + [("b", j) for j in range(len(bshape))]
        layout += [("x", k) for k in after]
    else:
        layout = [("b", j) for j in range(len(bshape))] + [("x", k) for k in rest]
    names = [f"o{n}" for n in range(len(layout))]
    shape = [bshape[j] if w == "b" else x.shape[j] for w, j in layout]
    bdims = [n for n, (w, _) in zip(names, layout, strict=True) if w == "b"]
    of_x = {j: n for n, (w, j) in zip(names, layout, strict=True) if w == "x"}
    src: list[object] = []
    for k in range(x.ndim):
        t = idx[k]
        if t is None:
            src.append(of_x[k])
        else:
            src.append(indirect(t, broadcast_index(t.shape, bdims), x.shape[k]))  # type: ignore[arg-type]
    return names, shape, src


def gather_index(ctx: LoweringContext, x: T, indices: list) -> None:
    """``x[i0, :, i2]`` with integer index tensors (NumPy advanced indexing). The lowering of
    ``index.Tensor`` (:func:`solar.frontend.torch.ops.dynamic.index`) sends boolean masks to
    the data-dependent gather instead."""
    names, shape, src = advanced(ctx, x, indices)
    out = ctx.out()
    assert tuple(shape) == out.shape, (shape, out.shape)
    ctx.statement(nest(names, shape), out, names, ctx.load(x, src))


# --------------------------------------------------------------------------------- scatters
def _scatter_index(x: T, dim: int, index: T) -> tuple[list[str], list[object]]:
    """Loop dims over ``index`` and the output index ``[.., {index[..]} at dim, ..]``."""
    d = dims_of(index.shape)
    k = norm_dim(dim, max(x.ndim, 1))
    return d, [indirect(index, d) if j == k else d[j] for j in range(x.ndim)]


def _count_mean(ctx: LoweringContext, out: T, dims, target, include_self: bool) -> None:
    """``out /= count`` for a mean scatter: ``count`` (a local, ``include_self`` counts self
    once) counts the values scattered to each position; positions hit by none keep theirs."""
    cnt = ctx.local("count", out.shape, out.dtype)
    o = dims_of(out.shape)
    full = nest(o, out.shape)
    ctx.statement(full, cnt, o, Const(1 if include_self else 0))
    ctx.statement(dims, cnt, target, Const(1), accumulate=True)
    floating = is_float(out.dtype)
    compute = acc_dtype(out.dtype) if floating else "float64"
    mean = call("div", ctx.load(out, o, compute), ctx.load(cnt, o, compute))
    if not floating:
        mean = call("floor", mean)  # integer means round down, as PyTorch does
    if not include_self:
        keep = call("gt", ctx.load(cnt, o), Const(0))
        mean = call("where", keep, mean, ctx.load(out, o, compute))
    ctx.statement(full, out, o, mean, dtype=compute)


SCATTER_REDUCE = {"add": "sum", "multiply": "prod", "sum": "sum", "prod": "prod"}
SCATTER_REDUCE |= {"amax": "max", "amin": "min", "mean": "mean"}


@lowering(
    aten.scatter.src,
    aten.scatter.value,
    aten.scatter.reduce,
    aten.scatter.value_reduce,
    aten.scatter_add.default,
    aten.scatter_reduce.two,
)
def scatter(ctx: LoweringContext, x: T, dim: int, index: T, src: object, *args: object) -> None:
    """``out = x`` then ``out[.., {index[..]}, ..] (op)= src[..]`` over the index's shape."""
    out = ctx.out()
    copy_self(ctx, x, out)
    if index.numel == 0:
        return
    d, target = _scatter_index(x, dim, index)
    dims = nest(d, index.shape)
    value = ctx.load(src, d, out.dtype) if isinstance(src, T) else Const(src)  # type: ignore[arg-type]
    op = ctx.op
    reduce, include_self = None, True
    if op == aten.scatter_add.default:
        reduce = "sum"
    elif op in (aten.scatter.reduce, aten.scatter.value_reduce):
        reduce = SCATTER_REDUCE[str(args[0])]
    elif op == aten.scatter_reduce.two:
        reduce, include_self = SCATTER_REDUCE[str(args[0])], bool(args[1])
    if reduce is None:
        write(ctx, dims, out, target, value)
    elif reduce == "mean":
        write(ctx, dims, out, target, value, reduce="sum", accumulate=include_self)
        _count_mean(ctx, out, dims, target, include_self)
    else:
        write(ctx, dims, out, target, value, reduce=reduce, accumulate=include_self)


def _along(x: T, dim: int, index: T, source_shape: Sequence[int]):
    """Loop dims over ``source_shape`` (``len(index)`` along ``dim``) and the output index
    ``[.., {index[i]}, ..]`` of ``index_add``/``index_copy``/``index_fill``."""
    d = dims_of(source_shape)
    if x.ndim == 0:
        return d, []
    k = norm_dim(dim, x.ndim)
    target = [
        indirect(index, [d[k]] if index.ndim else [], x.shape[k]) if j == k else d[j]
        for j in range(x.ndim)
    ]
    return d, target


@lowering(aten.index_add.default)
def index_add(ctx: LoweringContext, x: T, dim: int, index: T, source: T, alpha=1) -> None:
    """``out = x`` then ``out[.., {index[i]}, ..] += alpha * source[.., i, ..]``."""
    out = ctx.out()
    copy_self(ctx, x, out)
    d, target = _along(x, dim, index, source.shape)
    value = ctx.load(source, d, out.dtype)
    if alpha != 1:
        value = call("mul", value, Const(alpha))
    write(ctx, nest(d, source.shape), out, target, value, accumulate=True)


@lowering(aten.index_copy.default)
def index_copy(ctx: LoweringContext, x: T, dim: int, index: T, source: T) -> None:
    out = ctx.out()
    copy_self(ctx, x, out)
    d, target = _along(x, dim, index, source.shape)
    write(ctx, nest(d, source.shape), out, target, ctx.load(source, d, out.dtype))


@lowering(aten.index_fill.int_Scalar, aten.index_fill.int_Tensor)
def index_fill(ctx: LoweringContext, x: T, dim: int, index: T, value: object) -> None:
    out = ctx.out()
    copy_self(ctx, x, out)
    if x.ndim == 0:
        shape: tuple[int, ...] = ()
    else:
        k = norm_dim(dim, x.ndim)
        shape = tuple(index.numel if j == k else n for j, n in enumerate(x.shape))
    d, target = _along(x, dim, index, shape)
    write(ctx, nest(d, shape), out, target, _scalar(value, ctx, out.dtype))


def index_put(
    ctx: LoweringContext, x: T, indices: list, values: T, accumulate: bool = False
) -> None:
    """``out = x`` then ``out[indices] (+)= values`` (broadcast to the indexed shape), integer
    index tensors. ``index_put`` is registered in :mod:`solar.frontend.torch.ops.dynamic`,
    which also takes its boolean masks (the positions of a mask are data)."""
    refuse_masks(ctx, *indices)
    out = ctx.out()
    copy_self(ctx, x, out)
    names, shape, target = advanced(ctx, x, indices)
    value = ctx.load(values, broadcast_index(values.shape, names), out.dtype)
    write(ctx, nest(names, shape), out, target, value, accumulate=bool(accumulate))


@lowering(torch.ops.solar.one_hot.default)
def one_hot(ctx: LoweringContext, x: T, num_classes: int = -1) -> None:
    """``F.one_hot`` as the one output-writing kernel CUDA runs: ``out[i.., c] = (c == x[i..])``
    (intercepted, see :mod:`solar.frontend.torch.fused`); the comparison is free index math."""
    out = ctx.out()
    dims = [f"i{k}" for k in range(x.ndim)]
    hit = call("eq", Index(Affine.of("c")), ctx.load(x, dims))
    ctx.statement(
        [*((d, n) for d, n in zip(dims, x.shape, strict=True)), ("c", num_classes)],
        out,
        [*dims, "c"],
        call("cast", hit, dtype="int64"),
    )
