"""PRNG key arrays in the IR: a key array of shape ``s`` is a ``uint32[*s, 2]`` tensor (its
key data), carried by a :class:`~solar.frontend.jax.lower.V` of the key's shape and dtype."""

from __future__ import annotations

from solar.frontend.jax.lower import LoweringContext, V
from solar.frontend.layout import T


def is_key(dtype: object) -> bool:
    """Whether ``dtype`` is a typed PRNG key dtype (``key<fry>``)."""
    try:
        import jax

        return bool(jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key))
    except TypeError:
        return str(dtype).startswith("key<")


def key_tensor(ctx: LoweringContext, key: V) -> T:
    """The ``uint32[*shape, 2]`` key data of ``key`` (a typed key or raw key data)."""
    if key.t is None:
        ctx.fail("takes a key known while tracing; pass keys in as arguments")
    assert key.t is not None
    return key.t


def bind_key(ctx: LoweringContext, i: int, shape, data: T | None = None, src: V | None = None) -> T:
    """Output ``i`` as a key array of ``shape``: ``data`` (a free alias) or a fresh
    ``uint32[*shape, 2]`` tensor."""
    shape = tuple(int(s) for s in shape)
    dtype = str(ctx.out_avals[i][1])
    if data is None:
        data = ctx.lowerer.fresh_tensor(f"{ctx.prim}_key", (*shape, 2), "uint32")
        ctx.bind_out(i, V(shape, dtype, data, owned=True))
    else:
        ctx.lowerer.base_refs[ctx.lowerer.program.base(data.name)] += 1
        producer = src.producer if src is not None else None
        ctx.bind_out(i, V(shape, dtype, data, producer=producer))
    return data
