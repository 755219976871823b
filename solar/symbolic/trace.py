"""Trace a program with some of its sizes as symbols, and bound it (:class:`SymbolicBound`)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from solar.algebra.region import Region
from solar.algebra.size import Recording, recording, symbol
from solar.symbolic.marks import Marks, mark_dims
from solar.symbolic.symbolic_bound import SymbolicBound


def bound_symbolic(
    model,
    inputs,
    hw,
    marks: Marks,
    *,
    kwargs=None,
    precision: str | None = None,
    name=None,
    numeric=None,
) -> SymbolicBound:
    """:func:`solar.bound` with the sizes ``marks`` names as symbols (PyTorch programs; a
    training step, :func:`~solar.frontend.torch.training.is_training_step`, is traced by
    :func:`~solar.frontend.torch.training.trace_training_step`). ``numeric``:
    ``solar.bound`` (or any function of the same arguments), which the result's
    :attr:`~solar.symbolic.symbolic_bound.SymbolicBound.retrace` calls at sizes outside the
    formula's region (None: no retrace)."""
    from solar.frontend.torch.symbolic_shapes import SymbolicShapes
    from solar.hw import load_spec

    spec = load_spec(hw)
    dims = mark_dims(marks)
    shapes = SymbolicShapes(dims)
    rec = Recording()
    traced, g = trace_lifted(
        model, inputs, shapes, rec, kwargs=kwargs, name=name, precision=precision
    )
    sizes = {}
    for (binding, d), (nm, expr) in dims.items():
        offset = int(expr - symbol(nm))
        sizes.setdefault(nm, _traced_size(traced, binding, d) - offset)
    symbols = [symbol(n) for n in sizes]
    retrace = None
    if numeric is not None:
        keywords = {"kwargs": kwargs, "precision": precision, "name": name}
        retrace = _retrace(numeric, model, inputs, spec, dims, **keywords)
    return SymbolicBound.of(g, spec, Region.of(symbols, rec.guards), sizes, retrace=retrace)


def trace_lifted(
    model,
    inputs,
    shapes,
    rec: Recording,
    *,
    within: contextlib.AbstractContextManager | None = None,
    notes: Sequence[str] = (),
    **trace_kw,
):
    """``(traced, graph)``: ``model`` (a module, a function, or a training step:
    :func:`~solar.frontend.torch.training.trace_training_step`) traced with ``shapes`` (a
    :class:`~solar.frontend.torch.symbolic_shapes.SymbolicShapes`) inside ``within``, PyTorch's
    guards
    and those of tracing and lifting recorded on ``rec``, the graph's trace notes ``notes``
    and the trace's assumptions."""
    from solar.frontend.frameworks import FRONTENDS
    from solar.graph.lift import lift

    with recording(rec):
        with within if within is not None else contextlib.nullcontext():
            traced = FRONTENDS["torch"].trace(model, inputs, symbolic=shapes, **trace_kw)
        shapes.record_guards(rec)
        g = lift(traced.program, verified=True, notes=(*notes, *traced.assumptions))
    return traced, g


def _retrace(numeric, model, inputs, spec, dims, **keywords):
    """A numeric bound at other sizes, when every marked input is a positional tensor:
    the inputs as meta tensors with the marked dims resized (None otherwise)."""
    import torch

    args = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    marked = {}
    for (binding, d), (nm, expr) in dims.items():
        kind, leaf = binding if isinstance(binding, tuple) else (None, None)
        if kind != "input" or not isinstance(leaf, int) or not isinstance(args[leaf], torch.Tensor):
            return None
        marked.setdefault(leaf, {})[d] = (nm, int(expr - symbol(nm)))

    def retrace(sizes: dict[str, int]):
        new = list(args)
        for i, ds in marked.items():
            t = args[i]
            shape = [sizes[ds[d][0]] + ds[d][1] if d in ds else n for d, n in enumerate(t.shape)]
            new[i] = torch.empty(shape, dtype=t.dtype, device="meta")
        return numeric(model, tuple(new), spec, **keywords)

    return retrace


def _traced_size(traced, binding, dim: int) -> int:
    name = next(n for n, b in traced.bindings.items() if b == binding)
    return int.__int__(traced.program.tensors[name].shape[dim])
