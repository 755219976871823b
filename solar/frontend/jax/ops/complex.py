"""Complex numbers: the primitives ``complex``, ``real``, ``imag``, ``conj`` and ``abs`` of a
complex operand (issue 24). Complex arrays are IR tensors of dtype complex64/complex128; the
arithmetic rows of :mod:`solar.frontend.jax.ops.elementwise` and ``dot_general`` take them as
they are, counted in real operations (:data:`solar.ir.ops.COMPLEX_COST`). Each of these is
*light* (XLA fuses it)."""

from __future__ import annotations

from solar.frontend.jax.lower import LoweringContext, V
from solar.frontend.jax.ops.elementwise import ROWS
from solar.frontend.jax.registry import LOWERINGS, lowering
from solar.frontend.lowering.pointwise import pointwise
from solar.ir.dtypes import is_complex, real_part_dtype
from solar.ir.scalar import call


@lowering("complex")
def complex_(ctx: LoweringContext, re: V, im: V) -> None:
    part = real_part_dtype(ctx.out().dtype)
    pointwise(ctx, lambda a, b: call("complex", a, b), [re, im], compute=part)


def _part(name: str):
    def lower(ctx: LoweringContext, x: V, **params: object) -> None:
        pointwise(ctx, lambda e: call(name, e), [x], compute=x.dtype, result=ctx.out().dtype)

    return lower


lowering("real")(_part("real"))
lowering("imag")(_part("imag"))
lowering("conj")(_part("conj"))

_REAL_ABS = LOWERINGS["abs"].fn if "abs" in LOWERINGS else None
assert "abs" in ROWS  # the real row this rule defers to


@lowering("abs", replace=True)  # replaces elementwise.py's, which it defers to
def abs_(ctx: LoweringContext, x: V) -> None:
    """``|x|``: the elementwise row for real operands; ``sqrt(re^2 + im^2)`` for complex."""
    if not is_complex(x.dtype):
        assert _REAL_ABS is not None
        _REAL_ABS(ctx, x)
        return
    pointwise(ctx, lambda e: call("abs", e), [x], compute=x.dtype, result=ctx.out().dtype)
