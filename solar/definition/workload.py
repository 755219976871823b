"""One workload of a definition, traced and bounded: the reference traced with its index
tensors real (:mod:`solar.definition.shadow`) and its float tensors fake, the rows its
gathers name charged, lifted and bounded like any program; its row of results
(:class:`WorkloadBound`). A definition's workloads together are
:mod:`solar.definition.bound_definitions`'s;
from formulas, :mod:`solar.definition.symbolic_axes`'s."""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field, fields, replace

from solar.api import bound_graph, trace_and_lift
from solar.definition.inputs import WorkloadInputs, make_inputs, reference_module
from solar.definition.outputs import check_outputs
from solar.definition.schema import Definition, Workload
from solar.definition.shadow import RealValues
from solar.graph.types import Graph

NOTES = [
    "definition reference: the unfused level is that reference's own launches (its Python "
    "loops over batch entries and heads unrolled, one kernel per launched operator per "
    "iteration); the fused and cache-aware levels do not depend on how it is written",
    "definition inputs: integer index tensors and scalars carry the workload's real values "
    "(host reads such as .item() and loops on them ran for real); float tensors were fake",
    "definition gathers: an input read through an index tensor along its first dim (paged KV "
    "pages, token ids) is charged at the distinct rows the workload's indices name (fused and "
    "cache-aware levels: all gathers together; unfused: each gather kernel its own rows)",
]


@dataclass
class WorkloadBound:
    """One workload's bounds (seconds) and what bounds each level; ``error`` one line."""

    uuid: str
    axes: dict[str, int]
    status: str  # "ok" or "error"
    unfused: float = 0.0
    fused: float = 0.0
    cache_aware: float = 0.0
    fused_bound_by: str = ""
    cache_aware_bound_by: str = ""
    kernels: int = 0
    seconds: float = 0.0
    error: str | None = None
    bound: object = field(default=None, repr=False)  # the full Bound (not serialised)
    method: str = "trace"  # "trace": its own trace; "formula": a symbolic trace's formula
    note: str = ""  # which formula, or why a trace of its own (solar.definition.symbolic_axes)

    @classmethod
    def of(cls, uuid: str, axes: dict[str, int], b, seconds: float, **how: str) -> WorkloadBound:
        """The row of a workload bounded as ``b`` (``how``: its ``method`` and ``note``)."""
        return cls(
            uuid,
            axes,
            "ok",
            b.unfused,
            b.fused,
            b.cache_aware,
            b.fused_bound_by,
            b.cache_aware_bound_by,
            len(b.kernels),
            seconds,
            bound=b,
            **how,
        )

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "bound"}


def traced_reference(defn: Definition, inputs: WorkloadInputs, module=None):
    """``(fn, tensors)``: ``fn(*tensors)`` runs the reference on the tensor inputs (scalars
    bound in), with the real values of the index tensors shadowing their fakes; what it returns
    is checked against the declared outputs (:func:`~solar.definition.outputs.check_outputs`)."""
    import torch

    module = module or reference_module(defn)
    run = module.run
    names = list(defn.inputs)
    tensor_names = [n for n in names if isinstance(inputs.values[n], torch.Tensor)]

    gathered: dict[str, set[int]] = {}
    gathers: list[tuple[str, int]] = []

    def reference(*tensors):
        given = dict(zip(tensor_names, tensors, strict=True))
        shadows = {id(t): (t, inputs.real[n]) for n, t in given.items() if n in inputs.real}
        args = [given[n] if n in given else inputs.values[n] for n in names]
        mode = RealValues(shadows, given)
        with mode:
            result = run(*args)
        check_outputs(defn, inputs.axes, result)
        gathered.update(mode.gathered)
        gathers[:] = mode.gathers
        return result

    reference.__name__ = defn.name
    reference.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in tensor_names]
    )
    reference.gathered = gathered  # type: ignore[attr-defined]
    reference.gathers = gathers  # type: ignore[attr-defined]
    return reference, tuple(inputs.values[n] for n in tensor_names)


GATHER_OPS = ("aten.index.Tensor", "aten.embedding.default", "aten.index_select.default")


def charge_gathered_rows(g: Graph, reference, inputs: WorkloadInputs) -> Graph:
    """Reads of an input gathered through real indices: at least the distinct rows the indices
    name (the IR counts a data-dependent gather at its minimum, all indices equal). The fused
    I/O gets the union over all gathers; each gather kernel its own call's rows, when the
    gather kernels reading the input pair one to one with the calls recorded. Returns the new
    graph (``g`` is left as it is)."""

    def row_bytes(name: str) -> int:
        t = inputs.values[name]
        return t.numel() // t.shape[0] * t.element_size() if t.shape[0] else 0

    info = g.info
    reads = dict(info.fused_io.reads)
    for name, rows in reference.gathered.items():
        if name in reads:
            reads[name] = max(reads[name], len(rows) * row_bytes(name))
    kernels = list(info.kernels)
    for name in {n for n, _ in reference.gathers}:
        calls = [k for n, k in reference.gathers if n == name]
        at = [i for i, k in enumerate(kernels) if k.op in GATHER_OPS and name in k.reads]
        if len(at) == len(calls):
            for i, rows in zip(at, calls, strict=True):
                k = kernels[i]
                k_reads = {**k.reads, name: max(k.reads[name], rows * row_bytes(name))}
                kernels[i] = replace(k, io=replace(k.io, reads=k_reads))
    fused_io = replace(info.fused_io, reads=reads)
    return g.with_info(replace(info, kernels=tuple(kernels), fused_io=fused_io))


def lift_workload(defn: Definition, wl: Workload, module=None, inputs=None):
    """``(inputs, IR program, einsum graph)`` of one workload, gathered rows charged
    (``inputs``: the workload's, when already made)."""
    module = module or reference_module(defn)
    inputs = inputs or make_inputs(defn, wl, module=module)
    fn, tensors = traced_reference(defn, inputs, module)
    program, g = trace_and_lift(fn, tensors, name=defn.name, notes=NOTES)
    g = charge_gathered_rows(g, fn, inputs)
    return inputs, program, g


def bound_workload(defn: Definition, wl: Workload, spec, module=None, inputs=None) -> WorkloadBound:
    """Bound one workload; never raises (a failure is ``status="error"``, one line)."""
    t0 = time.perf_counter()
    try:
        inputs, _, g = lift_workload(defn, wl, module, inputs)
        b = bound_graph(g, spec)
    except Exception as e:  # one workload's failure is a row, not the end of the batch
        return failed_row(wl, e, t0)
    return WorkloadBound.of(wl.uuid, inputs.axes, b, time.perf_counter() - t0)


def failed_row(wl: Workload, e: Exception, t0: float) -> WorkloadBound:
    """The row of a workload whose bound failed with ``e`` (one line), begun at ``t0``."""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return WorkloadBound(
        wl.uuid,
        {},
        "error",
        seconds=time.perf_counter() - t0,
        error=f"{type(e).__name__}: {msg}",
    )
