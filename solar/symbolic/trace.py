"""Trace a program with some of its sizes as symbols, and bound it (:class:`SymbolicBound`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from solar.symbolic.region import Region
from solar.symbolic.result import SymbolicBound
from solar.symbolic.size import recording, symbol

#: ``{name: (input, dim)}``, or ``{name: [(input, dim), ...]}`` for a size several dims share;
#: ``input`` is a positional input's index or a binding such as ``("param", "fc.weight")``
Marks = Mapping[str, object]


def _dims(marks: Marks) -> dict[tuple[object, int], tuple[str, object]]:
    out: dict[tuple[object, int], tuple[str, object]] = {}
    for name, where in marks.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"symbolic size name {name!r} must be an identifier")
        places = (
            [where]
            if isinstance(where, tuple) and len(where) == 2 and isinstance(where[1], int)
            else list(where)
        )  # type: ignore[arg-type]
        for place in places:
            if not (isinstance(place, tuple) and len(place) == 2 and isinstance(place[1], int)):
                raise ValueError(
                    f"symbolic size {name!r}: expected (input index, dim), got {place!r}"
                )
            leaf, dim = place
            binding = ("input", leaf) if isinstance(leaf, int) else leaf
            out[(binding, dim)] = (name, symbol(name))
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

    if framework_of(model, inputs, kwargs, framework) == "jax":
        from solar.symbolic.jax import bound_symbolic_jax

        if kwargs:
            raise ValueError("symbolic JAX bounds take positional inputs only (kwargs=)")
        return bound_symbolic_jax(model, inputs, hw, marks, precision=precision, name=name)
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
    for (binding, d), (nm, _) in dims.items():
        sizes.setdefault(nm, _traced_size(traced, binding, d))
    symbols = [symbol(n) for n in sizes]
    b = SymbolicBound.of(g, spec, Region.of(symbols, rec.guards), sizes)
    b.retrace = _retrace(model, inputs, spec, dims, kwargs=kwargs, precision=precision, name=name)
    return b


def _retrace(model, inputs, spec, dims, **keywords):
    """A numeric bound at other sizes, when every marked input is a positional tensor:
    the inputs as meta tensors with the marked dims resized (None otherwise)."""
    import torch

    args = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    marked = {}
    for (binding, d), (nm, _) in dims.items():
        kind, leaf = binding if isinstance(binding, tuple) else (None, None)
        if kind != "input" or not isinstance(leaf, int) or not isinstance(args[leaf], torch.Tensor):
            return None
        marked.setdefault(leaf, {})[d] = nm

    def retrace(sizes: dict[str, int]):
        from solar.api import bound

        new = list(args)
        for i, ds in marked.items():
            t = args[i]
            shape = [sizes[ds[d]] if d in ds else n for d, n in enumerate(t.shape)]
            new[i] = torch.empty(shape, dtype=t.dtype, device="meta")
        return bound(model, tuple(new), spec, **keywords)

    return retrace


def _traced_size(traced, binding, dim: int) -> int:
    name = next(n for n, b in traced.bindings.items() if b == binding)
    return int.__int__(traced.program.tensors[name].shape[dim])
