"""JAX's PRNG (issue 24): keys and random bits as kernels that compute their values exactly.

A key array of shape ``s`` (typed ``key<fry>``, or the raw ``uint32[..., 2]`` of
``jax.random.PRNGKey``) is an IR tensor ``uint32[*s, 2]``: ``random_wrap``/``random_unwrap``
are free (the same tensor). The threefry implementation's primitives (``threefry_partitionable``
on, JAX's default):

- ``random_seed(seed)``: the key ``[seed >> 32, seed & 0xFFFFFFFF]``;
- ``random_bits(key, shape)``: element ``i`` is ``w0 ^ w1`` of ``threefry2x32(key, (hi(i),
  lo(i)))``, ``i`` the flat position;
- ``random_split(key, shape)``: key ``i`` is ``threefry2x32(key, (hi(i), lo(i)))``;
- ``random_fold_in(key, d)``: ``threefry2x32(key, (0, d))``;
- ``threefry2x32`` itself (with ``jax_threefry_partitionable`` off, or called directly).

Every value is the ``threefry`` scalar operator of :mod:`solar.ir.ops` (72 integer operations
per hash), so the IR executes JAX's exact bits: validation compares them value for value.
``jax.random.normal``/``uniform`` are then ordinary elementwise work on the bits
(``shift_right_logical``, ``or``, ``bitcast_convert_type``, ``erf_inv``).
"""

from __future__ import annotations

from dataclasses import replace
from math import prod

from solar.frontend.jax.lower import LoweringContext, V
from solar.frontend.jax.ops import shape as _shape  # noqa: F401  (its rules, wrapped below)
from solar.frontend.jax.ops.random_keys import bind_key, is_key, key_tensor
from solar.frontend.jax.registry import LOWERINGS, Rule, lowering
from solar.frontend.layout import T, broadcast_index, flat_index
from solar.ir.scalar import Const, Expr, call


def _key_words(ctx: LoweringContext, key: T, lead: list[str], kshape) -> tuple[Expr, Expr]:
    idx = broadcast_index(kshape, lead) if kshape else []
    return ctx.load(key, [*idx, 0]), ctx.load(key, [*idx, 1])


def _hash(k: tuple[Expr, Expr], x0: Expr, x1: Expr, word: int) -> Expr:
    return call("threefry", k[0], k[1], x0, x1, word=word)


def _check_size(ctx: LoweringContext, shape) -> None:
    if prod(shape) >= 2**32:
        ctx.fail(f"draws {prod(shape)} values; counters past 2^32 (a hi word) are not lowered")


@lowering("random_seed", kind="light")
def random_seed(ctx: LoweringContext, seed: V, *, impl: object) -> None:
    _check_impl(ctx, impl)
    shape = seed.shape
    out = bind_key(ctx, 0, shape)
    dims = [f"i{k}" for k in range(len(shape))]
    s = ctx.operand(seed, dims, None)
    nest = [(d, n) for d, n in zip(dims, shape, strict=True)]
    hi = call("shift_right_logical", s, Const(32)) if seed.dtype.endswith("64") else Const(0)
    ctx.statement(nest, out, [*dims, 0], call("cast", hi, dtype="uint32"))
    ctx.statement(nest, out, [*dims, 1], call("cast", s, dtype="uint32"))


@lowering("random_wrap", kind="view")
def random_wrap(ctx: LoweringContext, data: V, *, impl: object) -> None:
    _check_impl(ctx, impl)
    bind_key(ctx, 0, data.shape[:-1], ctx.tensor(data), src=data)


@lowering("random_unwrap", kind="view")
def random_unwrap(ctx: LoweringContext, key: V) -> None:
    ctx.set_out(0, key_tensor(ctx, key), src=key)


@lowering("random_bits", kind="light")
def random_bits(ctx: LoweringContext, key: V, *, bit_width: int, shape) -> None:
    if int(bit_width) != 32:
        ctx.fail(f"with bit_width={bit_width} is not lowered; 32-bit draws only")
    out = ctx.out()
    _check_size(ctx, shape)
    kt = key_tensor(ctx, key)
    kshape = key.shape
    dims = [f"i{k}" for k in range(out.ndim)]
    k = _key_words(ctx, kt, dims[: len(kshape)], kshape)
    pos = flat_index(tuple(shape), dims[len(kshape) :])
    w0, w1 = (_hash(k, Const(0), pos, w) for w in (0, 1))
    nest = list(zip(dims, out.shape, strict=True))
    ctx.statement(nest, out, dims, call("bitwise_xor", w0, w1))


@lowering("random_split", kind="light")
def random_split(ctx: LoweringContext, key: V, *, shape) -> None:
    _check_size(ctx, shape)
    kt = key_tensor(ctx, key)
    full = (*key.shape, *shape)
    out = bind_key(ctx, 0, full)
    dims = [f"i{k}" for k in range(len(full))]
    k = _key_words(ctx, kt, dims[: key.ndim], key.shape)
    pos = flat_index(tuple(shape), dims[key.ndim :])
    nest = list(zip(dims, full, strict=True))
    for w in (0, 1):
        ctx.statement(nest, out, [*dims, w], _hash(k, Const(0), pos, w))


@lowering("random_fold_in", kind="light")
def random_fold_in(ctx: LoweringContext, key: V, data: V) -> None:
    kt = key_tensor(ctx, key)
    shape = ctx.out_avals[0][0]
    out = bind_key(ctx, 0, shape)
    dims = [f"i{k}" for k in range(len(shape))]
    k = _key_words(ctx, kt, dims, key.shape)
    d = ctx.operand(data, dims, None)
    nest = list(zip(dims, shape, strict=True))
    for w in (0, 1):
        ctx.statement(nest, out, [*dims, w], _hash(k, Const(0), d, w))


@lowering("threefry2x32", kind="light")
def threefry2x32(ctx: LoweringContext, k0: V, k1: V, x0: V, x1: V) -> None:
    for w in (0, 1):
        out = ctx.out(w)
        dims = [f"i{k}" for k in range(out.ndim)]
        args = [ctx.operand(v, dims, None) for v in (k0, k1, x0, x1)]
        ctx.statement(
            list(zip(dims, out.shape, strict=True)),
            out,
            dims,
            _hash(tuple(args[:2]), args[2], args[3], w),
        )


def _check_impl(ctx: LoweringContext, impl: object) -> None:
    name = str(getattr(impl, "name", impl))
    if "fry" not in name:
        ctx.fail(f"with the {name} PRNG is not lowered; the default threefry2x32 only")


# Shape primitives on key arrays: the same rule on the key data (one more, trailing dim of 2).
def _data_params(prim: str, params: dict, ndim: int) -> dict:
    p = dict(params)
    if prim == "slice":
        p["start_indices"] = (*p["start_indices"], 0)
        p["limit_indices"] = (*p["limit_indices"], 2)
        if p.get("strides") is not None:
            p["strides"] = (*p["strides"], 1)
    elif prim == "reshape":
        p["new_sizes"] = (*p["new_sizes"], 2)
        if p.get("dimensions") is not None:
            p["dimensions"] = (*p["dimensions"], ndim)
    elif prim == "broadcast_in_dim":
        p["broadcast_dimensions"] = (*p["broadcast_dimensions"], len(p["shape"]))
        p["shape"] = (*p["shape"], 2)
    elif prim == "transpose":
        p["permutation"] = (*p["permutation"], ndim)
    return p


def _as_data(key: V) -> V:
    return replace(key, shape=(*key.shape, 2), dtype="uint32")


def _on_key_data(prim: str, rule):
    def lower(ctx: LoweringContext, *args: V, **params: object) -> None:
        if not any(is_key(a.dtype) for a in args):
            rule(ctx, *args, **params)
            return
        keyed = [
            replace(a, shape=(*a.shape, 2), dtype="uint32") if is_key(a.dtype) else a for a in args
        ]
        shapes = [(s, d) for s, d in ctx.out_avals]
        ctx.out_avals = [((*s, 2), "uint32") for s, _ in shapes]
        rule(ctx, *keyed, **_data_params(prim, params, args[0].ndim))
        ctx.out_avals = shapes
        for i, (s, d) in enumerate(shapes):
            v = ctx.out_value(i)
            if v is not None:
                ctx.bind_out(i, replace(v, shape=s, dtype=d))

    return lower


for _prim in ("slice", "squeeze", "reshape", "broadcast_in_dim", "concatenate", "transpose"):
    _rule = LOWERINGS[_prim]
    LOWERINGS.add(_prim, Rule(_on_key_data(_prim, _rule.fn), _rule.kind, _rule.fold), replace=True)
