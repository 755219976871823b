"""Trace a program with some of its sizes as symbols, and bound it (:class:`SymbolicBound`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from solar.symbolic.region import Region
from solar.symbolic.result import SymbolicBound
from solar.symbolic.size import recording, symbol

#: ``{name: (input, dim)}``, or ``{name: [(input, dim), ...]}`` for a size several dims share;
#: ``input`` is a positional input's index or a binding such as ``("param", "fc.weight")``; a
#: place ``(input, dim, offset)`` is a dim of ``name + offset`` (a KV cache of ``context + 1``
#: slots)
Marks = Mapping[str, object]


def _is_place(x: object) -> bool:
    return (
        isinstance(x, tuple)
        and len(x) in (2, 3)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in x[1:])
    )


def _dims(marks: Marks) -> dict[tuple[object, int], tuple[str, object]]:
    out: dict[tuple[object, int], tuple[str, object]] = {}
    for name, where in marks.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"symbolic size name {name!r} must be an identifier")
        places = [where] if _is_place(where) else list(where)  # type: ignore[call-overload]
        for place in places:
            if not _is_place(place):
                raise ValueError(
                    f"symbolic size {name!r}: expected (input index, dim), got {place!r}"
                )
            leaf, dim, *offset = place
            binding = ("input", leaf) if isinstance(leaf, int) else leaf
            out[(binding, dim)] = (name, symbol(name) + sum(offset))
    return out


def bound_symbolic(
    model,
    inputs,
    hw,
    marks: Marks,
    *,
    kwargs=None,
    precision: str | None = None,
    name=None,
    framework: str | None = None,
) -> SymbolicBound:
    """:func:`solar.bound` with the sizes ``marks`` names as symbols (PyTorch programs)."""
    from solar.api import framework_of

    if framework_of(model, inputs, kwargs, framework) != "torch":
        raise NotImplementedError(
            "symbolic sizes are traced for PyTorch programs; a JAX function is bounded at "
            "one size (solar.bound without symbolic=)"
        )
    from solar.api import gc_paused
    from solar.frontend.torch.symbolic import SymbolicShapes
    from solar.frontend.torch.trace import trace_torch
    from solar.graph.lift import lift
    from solar.graph.types import graph_info, set_graph_info
    from solar.hw import load_spec

    spec = load_spec(hw)
    dims = _dims(marks)
    shapes = SymbolicShapes(dims)
    with gc_paused(), recording() as rec:
        traced = trace_torch(
            model, inputs, kwargs=kwargs, name=name, precision=precision, symbolic=shapes
        )
        shapes.record_guards(rec)
        g = lift(traced.program, verified=True)
    set_graph_info(g, dataclasses.replace(graph_info(g), trace_notes=tuple(traced.assumptions)))
    sizes = {}
    for (binding, d), (nm, expr) in dims.items():
        offset = int(expr - symbol(nm))
        sizes.setdefault(nm, _traced_size(traced, binding, d) - offset)
    symbols = [symbol(n) for n in sizes]
    return SymbolicBound.of(g, spec, Region.of(symbols, rec.guards), sizes)


def _traced_size(traced, binding, dim: int) -> int:
    name = next(n for n, b in traced.bindings.items() if b == binding)
    return int.__int__(traced.program.tensors[name].shape[dim])
