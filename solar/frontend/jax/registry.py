"""The primitive registry: jaxpr primitive name -> the function that emits its loop nests.

A lowering is ``fn(ctx, *args, **params)``: ``ctx`` is the
:class:`~solar.frontend.jax.lower.LoweringContext` of one jaxpr equation, ``args`` its operands
(:class:`~solar.frontend.jax.lower.V` values: an IR tensor, a value known while tracing, or
both) and ``params`` the equation's parameters. It declares the outputs (``ctx.out()``, or
``ctx.set_out`` for views and aliases) and emits statements with ``ctx.statement``.

Register with ``@lowering("cumsum", kind="heavy")``. The ``kind`` decides kernel grouping
(:mod:`solar.frontend.jax.fusion`):

- ``"light"``: elementwise and data-movement work XLA fuses into neighbouring kernels;
- ``"heavy"``: a kernel of its own (dot_general, conv, reductions, scatter, sort, ...), with the
  light work around it fused in;
- ``"view"``: normally no statement at all (a strided view: reshape, transpose, broadcast,
  slice); a fallback copy counts as light;
- ``"control"``: call-like and control-flow primitives whose bodies are lowered in place
  (jit, custom_jvp_call, scan, while, cond).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

KINDS = ("light", "heavy", "view", "control")
HOW_TO_ADD = "see solar/frontend/jax/ops/"


@dataclass(frozen=True)
class Rule:
    fn: Callable[..., None]
    kind: str
    fold: bool = True  # may be evaluated at trace time when every operand is known


LOWERINGS: dict[str, Rule] = {}


def primitive_name(p: object) -> str:
    return p if isinstance(p, str) else str(getattr(p, "name", p))


def lowering(
    *prims: object, kind: str = "light", fold: bool = True
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``fn`` as the loop-nest definition of each primitive in ``prims`` (names such as
    ``"exp"`` or ``jax.extend.core.Primitive`` objects)."""
    if not prims:
        raise TypeError("@lowering needs at least one primitive")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        for p in prims:
            LOWERINGS[primitive_name(p)] = Rule(fn, kind, fold)
        return fn

    return register


class UnsupportedPrimitiveError(ValueError):
    """A primitive the frontend has no loop-nest definition for (or cannot express)."""

    def __init__(self, prim: object, source: str = "", reason: str = "") -> None:
        self.prim = primitive_name(prim)
        self.source = source
        where = f" at {source}" if source else ""
        reason = reason or (
            f"has no loop-nest definition; register one with "
            f'@solar.frontend.jax.lowering("{self.prim}") — {HOW_TO_ADD}'
        )
        super().__init__(f"jax primitive {self.prim}{where} {reason}")


class DataDependentError(UnsupportedPrimitiveError):
    """A primitive whose indices, trip count or shape depend on traced array values."""

    def __init__(self, prim: object, source: str = "", what: str = "") -> None:
        super().__init__(
            prim,
            source,
            f"is data-dependent ({what or 'it depends on traced array values'}), which static "
            "affine loop nests cannot express; make it static (Python ints, static_argnums) "
            "or keep it out of the analysed function",
        )


class UnsupportedDtypeError(ValueError):
    """A value whose dtype (complex, uint32, PRNG keys, ...) the IR cannot express."""
