"""Sizes used as values: ``dim_as_value`` (a symbolic dim read as a scalar, as in
``jnp.mean`` over a symbolic axis), and which primitives use known values only as values.

A symbolic trace reads ``x.shape[d]`` of a marked dim as ``dim_as_value``. Its value is known
while tracing (the traced size) and is *tainted* with the size (``V.sized``): where it only
enters the arithmetic (a constant divisor, a predicate of ``select_n``) the loop nests are
the same at every size, and nothing is decided; where a lowering reads it to build loop nests
(a slice start, a trip count), the lowering specializes the size (a guard says the formula
holds at the traced value only).
"""

from __future__ import annotations

import numpy as np

from solar.algebra.size import Size
from solar.frontend.jax.lower import LoweringContext
from solar.frontend.jax.ops.control import CALLS
from solar.frontend.jax.ops.elementwise import ROWS
from solar.frontend.jax.registry import SIZE_AWARE, VALUE_ONLY, lowering


@lowering("dim_as_value", kind="light", fold=False)
def dim_as_value(ctx: LoweringContext, *, dim: object, **_: object) -> None:
    dtype = ctx.out_avals[0][1]
    value = int.__int__(dim) if isinstance(dim, Size) else int(dim)  # type: ignore[call-overload]
    ctx.set_out(0, np.asarray(value, dtype=dtype))
    out = ctx.out_value(0)
    if out is not None and isinstance(dim, Size):
        out.sized, out.sym = (dim,), np.asarray(dim, dtype=object)


VALUE_ONLY.update(
    {p for p in ROWS if p != "pow"},  # pow: a constant exponent 2 or 0.5 is rewritten
    {"select_n", "convert_element_type", "integer_pow", "round", "add"},
    {"broadcast_in_dim", "reshape", "squeeze", "expand_dims", "transpose"},
    {c for c, body in CALLS.items() if body},  # inlined bodies decide for themselves
)
SIZE_AWARE.update({"gather", "dynamic_slice", "dynamic_update_slice"})
