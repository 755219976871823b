"""Bounds of a definition's workloads from one trace: the definition's ``var`` axes are
symbols, its ``expr`` axes their expressions, the reference is traced once with PyTorch's
symbolic shapes, and each workload is that :class:`~solar.symbolic.symbolic_bound.SymbolicBound` at
its axes (:meth:`~solar.symbolic.symbolic_bound.SymbolicBound.at`) instead of a trace of its own.

A workload is bounded from the formula only where the formula is known to equal its own
trace; otherwise it is traced (the row's ``method`` says which, and why):

- its inputs carry real index values (``kv_indptr``, token ids): the reference reads them on
  the host and the gathered rows depend on them, so the trace is the workload's own;
- its scalar inputs differ from those of the traced workload (one formula per set of
  scalars: a scalar may steer the reference);
- its axes lie outside the formula's region (a guard of the trace fails there: a size-1
  dim that broadcasts, a value folded at trace time, ...).

The workloads outside one formula's region get a formula of their own, traced at the
largest of them, as long as it covers at least two of them; the rest are traced.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator, Sequence
from math import prod

from solar.algebra.region import Region
from solar.algebra.size import Size, recording, symbol
from solar.definition.axes import evaluate
from solar.definition.inputs import WorkloadInputs, make_inputs
from solar.definition.schema import Definition, Workload
from solar.definition.workload import (
    NOTES,
    WorkloadBound,
    bound_workload,
    failed_row,
    traced_reference,
)
from solar.symbolic.symbolic_bound import SymbolicBound

#: what a row's ``method`` is: the formula, or a trace of the workload's own and why
FORMULA = "formula"
TRACE = "trace"


@dataclasses.dataclass
class Candidate:
    """A workload that may be bounded from a formula: its place in the rows, its inputs."""

    index: int
    workload: Workload
    inputs: WorkloadInputs

    @property
    def size(self) -> int:
        return prod(max(v, 1) for v in self.inputs.axes.values())


def reason_to_trace(defn: Definition, inputs: WorkloadInputs) -> str | None:
    """Why a workload needs its own trace whatever the formula (None: it may use one)."""
    if inputs.real:
        return f"its index inputs carry values ({', '.join(inputs.real)})"
    zero = [a for a, ax in defn.axes.items() if ax.kind != "const" and inputs.axes[a] < 1]
    if zero:
        return f"axis {zero[0]} is 0"
    return None


def scalars_of(inputs: WorkloadInputs) -> tuple:
    """The workload's scalar inputs, as a key (one formula per distinct set)."""
    return tuple((n, repr(v)) for n, v in inputs.values.items() if not hasattr(v, "shape"))


def symbolic_axes(defn: Definition, axes: dict[str, int]) -> dict[str, int]:
    """Every axis as a size: ``var`` axes their symbols (hinted at ``axes``), ``expr`` axes
    their expressions evaluated on those (decisions they take are guards), ``const`` ints."""
    from solar.definition.axes import _names_in

    out: dict[str, int] = {}
    for name, ax in defn.axes.items():
        if ax.kind == "var":
            out[name] = Size(axes[name], symbol(name))
        elif ax.kind == "const":
            out[name] = axes[name]
    pending = {n: ax.expression or "" for n, ax in defn.axes.items() if ax.kind == "expr"}
    while pending:  # axis_values has checked the order exists and the values are sizes
        for n, e in list(pending.items()):
            if all(v in out for v in _names_in(e) if v in defn.axes):
                v = evaluate(e, out, f"{defn.where}: expr axis {n!r}")
                out[n] = v if isinstance(v, Size) else int(v)  # type: ignore[call-overload]
                del pending[n]
    return out


@contextlib.contextmanager
def fresh_memo() -> Iterator[None]:
    """Run a symbolic trace with the counting's memo caches empty, and empty them after.

    The caches (the structure cache, the footprint caches) key on sizes, and a
    :class:`~solar.algebra.size.Size` equals and hashes as its traced int: a hit on an entry
    of another trace returns numbers without their formula (an earlier numeric trace) or
    without recording its guards (an earlier symbolic trace); a numeric trace after this one
    could be answered with formulas. Until the caches tell the two apart, a symbolic trace
    starts and leaves them empty (the cost: the next traces compute their facts again)."""
    from solar.graph.cache import CACHE
    from solar.ir.footprint import domain, forms

    def clear() -> None:
        CACHE.clear()
        domain.domain.cache_clear()
        forms._form_set.cache_clear()

    clear()
    try:
        yield
    finally:
        clear()


def trace_formula(defn: Definition, cand: Candidate, spec, module) -> SymbolicBound:
    """Trace the reference once at ``cand``'s axes with the axes as symbols."""
    import torch

    from solar.frontend.torch.symbolic_shapes import SymbolicShapes
    from solar.frontend.torch.trace import trace_torch
    from solar.graph.lift import lift

    fn, tensors = traced_reference(defn, cand.inputs, module)
    names = [n for n in defn.inputs if isinstance(cand.inputs.values[n], torch.Tensor)]
    with recording() as rec:
        axes = symbolic_axes(defn, cand.inputs.axes)
        dims = {}
        for i, name in enumerate(names):
            for d, axis in enumerate(defn.inputs[name].shape or ()):
                if isinstance(axes[axis], Size):
                    dims[(("input", i), d)] = (axis, axes[axis].expr)  # type: ignore[attr-defined]
        shapes = SymbolicShapes(dims)
        traced = trace_torch(fn, tensors, name=defn.name, symbolic=shapes)
        shapes.record_guards(rec)
        g = lift(traced.program, verified=True, notes=(*NOTES, *traced.assumptions))
    var = [a for a, ax in defn.axes.items() if ax.kind == "var"]
    sizes = {a: cand.inputs.axes[a] for a in var}
    return SymbolicBound.of(g, spec, Region.of([symbol(a) for a in var], rec.guards), sizes)


@dataclasses.dataclass(frozen=True)
class DefinitionTask:
    """One definition of a batch bounded from formulas, as a worker receives it: the
    definition file, its parsed workloads and the GPU (a name, path or spec). A task is a
    whole definition, not a workload: its workloads share the formulas of its traces."""

    definition: str
    workloads: tuple[Workload, ...]
    hw: object


def definition_task(task: DefinitionTask) -> tuple[list, list[str]]:
    """``(rows, assumptions)`` of one definition's workloads bounded from formulas, in any
    process (the batch executors' task function): the rows carry no Bound, so that they
    pickle small. Never raises."""
    from solar.definition.inputs import reference_module
    from solar.definition.schema import load_definition
    from solar.hw import load_spec

    try:
        defn = load_definition(task.definition)
        spec = load_spec(task.hw)
        module = reference_module(defn)
    except Exception as e:  # a definition or GPU that no longer loads: every workload's row
        return _definition_failed(task, f"{type(e).__name__}: {_first_line(e)}")
    rows = bound_with_formulas(defn, list(task.workloads), spec, module)
    first = next((r.bound for r in rows if r.bound is not None), None)
    assumptions = list(first.assumptions) if first is not None else list(NOTES)
    for r in rows:
        r.bound = None
    return rows, assumptions


def _definition_failed(task: DefinitionTask, reason: str, status: str = "error"):
    """The result of a definition task that failed outside its analysis (its worker died, it
    passed the time limit): one row per workload."""

    rows = [WorkloadBound(wl.uuid, {}, status, error=reason) for wl in task.workloads]
    return rows, list(NOTES)


definition_task.crash_result = _definition_failed  # type: ignore[attr-defined]


def bound_with_formulas(defn: Definition, wls: Sequence[Workload], spec, module) -> list:
    """One row per workload (see the module docstring); never raises for one workload."""

    rows: list = [None] * len(wls)
    groups: dict[tuple, list[Candidate]] = {}
    for i, wl in enumerate(wls):
        t0 = time.perf_counter()
        try:
            inputs = make_inputs(defn, wl, module=module)
        except Exception as e:  # the numeric path's row: the same error, one line
            rows[i] = failed_row(wl, e, t0)
            continue
        why = reason_to_trace(defn, inputs)
        if why is not None:
            rows[i] = traced_row(bound_workload(defn, wl, spec, module, inputs), why)
            continue
        groups.setdefault(scalars_of(inputs), []).append(Candidate(i, wl, inputs))
    for group in groups.values():
        _bound_group(defn, group, spec, module, rows)
    return rows


def _bound_group(defn: Definition, todo: list[Candidate], spec, module, rows: list) -> None:
    """Workloads of one set of scalars: a formula traced at the largest uncovered workload
    (one whose sizes coincide with no other, where there is one), again while the last one
    covered two or more; the rest traced."""

    why, b = "", None
    failed: dict[int, str] = {}
    while len(todo) >= 2:
        first = max(todo, key=lambda c: (_distinct(defn, c), c.size))
        t0 = time.perf_counter()
        with fresh_memo():
            try:
                b = trace_formula(defn, first, spec, module)
            except Exception as e:  # no formula: these workloads are traced
                why = f"no formula ({type(e).__name__}: {_first_line(e)})"
                break
            traced_s = time.perf_counter() - t0
            inside = [c for c in todo if b.inside(**_var(defn, c))]
            outside: dict[int, str] = {}  # inside, but the formula's analysis there failed
            for c in inside:
                t1 = time.perf_counter()
                try:
                    at = b.quick_at(**_var(defn, c))
                except Exception as e:
                    outside[c.index] = f"the formula there failed ({_first_line(e)})"
                    continue
                seconds = time.perf_counter() - t1 + (traced_s if c is first else 0.0)
                rows[c.index] = formula_row(c, at, seconds, first.workload.uuid)
        failed.update(outside)
        todo = [c for c in todo if c not in inside or c.index in outside]
        if len(inside) - len(outside) < 2:  # the next formula would cover as little
            break
    for c in todo:
        reason = failed.get(c.index) or why
        if not reason:
            reason = _outside(b, defn, c) if b is not None else "one workload of its scalars"
        row = bound_workload(defn, c.workload, spec, module, c.inputs)
        rows[c.index] = traced_row(row, reason)


def _distinct(defn: Definition, c: Candidate) -> bool:
    """Whether the workload's var axes differ from each other and from every const axis: a
    trace there equates no size with another by accident (a memo cache answers a kernel by
    its sizes' values)."""
    var = list(_var(defn, c).values())
    const = {v for a, v in c.inputs.axes.items() if defn.axes[a].kind == "const"}
    return len(set(var)) == len(var) and not set(var) & const


def _var(defn: Definition, c: Candidate) -> dict[str, int]:
    return {a: c.inputs.axes[a] for a, ax in defn.axes.items() if ax.kind == "var"}


def _outside(b: SymbolicBound, defn: Definition, c: Candidate) -> str:
    """Why the formula ``b`` does not give ``c``: the first of its guards that fails there."""
    point = {symbol(k): v for k, v in _var(defn, c).items()}
    guard = b.counts_region.failing(point) if b.counts_region else None
    return f"outside the formula's region ({guard.relation if guard else '?'} does not hold)"


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def formula_row(c: Candidate, b, seconds: float, traced: str):
    """The row of a workload bounded from the formula traced at workload ``traced``."""

    note = f"the formula traced at workload {traced[:12]}"
    return WorkloadBound.of(c.workload.uuid, c.inputs.axes, b, seconds, method=FORMULA, note=note)


def traced_row(row, why: str):
    """A row traced for itself, saying why it did not come from a formula."""
    row.method, row.note = TRACE, why
    return row
