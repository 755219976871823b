"""The primitive registry: jaxpr primitive name -> the function that emits its loop nests.

A lowering is ``fn(ctx, *args, **params)``: ``ctx`` is the
:class:`~solar.frontend.jax.lower.LoweringContext` of one jaxpr equation, ``args`` its operands
(:class:`~solar.frontend.jax.lower.V` values: an IR tensor, a value known while tracing, or
both) and ``params`` the equation's parameters. It declares the outputs (``ctx.out()``, or
``ctx.set_out`` for views and aliases) and emits statements with ``ctx.statement``.

Register with ``@lowering("cumsum", kind="heavy")`` (the table is a
:class:`solar.frontend.lowering.Registry`: a primitive registered twice is an error). The
``kind`` decides kernel grouping (:mod:`solar.frontend.jax.fusion`):

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

from solar.frontend.lowering import errors
from solar.frontend.lowering.errors import UnsupportedDtypeError
from solar.frontend.lowering.registry import Registry

KINDS = ("light", "heavy", "view", "control")
HOW_TO_ADD = "see solar/frontend/jax/ops/"

__all__ = [
    "KINDS",
    "LOWERINGS",
    "SIZE_AWARE",
    "VALUE_ONLY",
    "DataDependentError",
    "Rule",
    "UnsupportedDtypeError",
    "UnsupportedPrimitiveError",
    "lowering",
    "primitive_name",
]


@dataclass(frozen=True)
class Rule:
    fn: Callable[..., None]
    kind: str
    fold: bool = True  # may be evaluated at trace time when every operand is known


def primitive_name(p: object) -> str:
    return p if isinstance(p, str) else str(getattr(p, "name", p))


#: primitives whose lowering uses a value known while tracing only as a value (a constant in
#: the arithmetic, a call's argument), never to decide the loop nests: a value computed from
#: a symbolic size (``dim_as_value``) may reach them without specializing the size
VALUE_ONLY: set[str] = set()
#: primitives whose lowering reads such a value's exact entries (``V.sym``: ints and sizes) or
#: else specializes its sizes itself (``V.specialize``)
SIZE_AWARE: set[str] = set()

#: primitive name -> its rule
LOWERINGS: Registry[str, Rule] = Registry(
    "JAX", key=primitive_name, function_of=lambda rule: rule.fn
)


def lowering(
    *prims: object, kind: str = "light", fold: bool = True, replace: bool = False
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``fn`` as the loop-nest definition of each primitive in ``prims`` (names such as
    ``"exp"`` or ``jax.extend.core.Primitive`` objects). A primitive registered twice is an
    error; ``replace``: this rule replaces, and may wrap, the one registered."""
    if not prims:
        raise TypeError("@lowering needs at least one primitive")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        for p in prims:
            LOWERINGS.add(p, Rule(fn, kind, fold), replace=replace)
        return fn

    return register


class UnsupportedPrimitiveError(errors.UnsupportedOperatorError):
    """A primitive the frontend has no loop-nest definition for (or cannot express)."""

    label = "jax primitive "
    how_to_add = f'@solar.frontend.jax.lowering("{{op}}") — {HOW_TO_ADD}'

    @staticmethod
    def op_name(op: object) -> str:
        return primitive_name(op)

    @property
    def prim(self) -> str:
        return self.op


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
