"""Bound a JAX program with some of its sizes as symbols: JAX's own shape polymorphism
(``jax.export`` symbolic dimensions) traces it once, and the lowering reads its dimension
polynomials as :class:`~solar.algebra.size.Size` s (:mod:`solar.frontend.jax.symbolic_dims`)."""

from __future__ import annotations

from collections.abc import Sequence

from solar.algebra.region import Region
from solar.algebra.size import recording, symbol
from solar.symbolic.marks import Marks, mark_dims
from solar.symbolic.symbolic_bound import SymbolicBound


def places(marks: Marks) -> dict[tuple[object, int], str]:
    """``{(input, dim): name}`` of ``marks``: ``input`` a positional input's index (an array
    argument) or a leaf's label (``"x"``, ``"params/fc1/weight"``)."""
    out: dict[tuple[object, int], str] = {}
    for (binding, d), (name, _) in mark_dims(marks).items():
        leaf = binding[1] if isinstance(binding, tuple) and binding[0] == "input" else binding
        out[(leaf, d)] = name
    return out


def bound_symbolic_jax(
    fn,
    inputs,
    hw,
    marks: Marks,
    *,
    precision: str | None = None,
    name=None,
    constraints: Sequence[str] = (),
    numeric=None,
) -> SymbolicBound:
    """:func:`solar.bound` of a JAX function (or Flax module) with the sizes ``marks`` names as
    symbols: ``{"batch": (1, 0), "seq": [(1, 1), ("params/pos", 0)]}`` (an input's position
    or label, and its dim). ``constraints``: JAX constraints on the sizes (``"seq >= 16"``);
    they and the lowering's decisions are the formula's guards. Outside the guards,
    :meth:`~solar.symbolic.symbolic_bound.SymbolicBound.at` traces the program again at those sizes
    with ``numeric`` (``solar.bound``; None: no retrace)."""
    from solar.frontend.frameworks import FRONTENDS
    from solar.frontend.jax.symbolic_dims import SymbolicDims
    from solar.graph.lift import lift
    from solar.hw import load_spec

    spec = load_spec(hw)
    where = places(marks)
    dims = SymbolicDims(where, constraints)
    with recording() as rec:
        traced = FRONTENDS["jax"].trace(fn, inputs, name=name, precision=precision, symbolic=dims)
        dims.record_guards(rec)
        g = lift(traced.program, verified=True, notes=traced.assumptions)
    symbols = [symbol(n) for n in dims.values]
    retrace = None
    if numeric is not None:
        retrace = _retrace(numeric, fn, inputs, spec, where, precision=precision, name=name)
    return SymbolicBound.of(g, spec, Region.of(symbols, rec.guards), dims.values, retrace=retrace)


def _retrace(numeric, fn, inputs, spec, where: dict, **keywords):
    """A numeric bound at other sizes: the marked inputs as ``ShapeDtypeStruct`` s resized."""

    def retrace(sizes: dict[str, int]):
        from solar.frontend.jax.trace import resized

        return numeric(fn, resized(fn, inputs, where, sizes), spec, framework="jax", **keywords)

    return retrace
