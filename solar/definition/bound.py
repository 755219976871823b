"""Bounds of a definition, one per workload: the reference traced with its index tensors real
(:mod:`solar.definition.shadow`) and its float tensors fake, lifted and bounded like any
program. A folder of definitions is a batch, like a folder of problem files."""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from solar.api import bound_graph, trace_and_lift
from solar.definition.inputs import WorkloadInputs, make_inputs, reference_module
from solar.definition.schema import (
    Definition,
    DefinitionError,
    Workload,
    default_workloads_path,
    load_definition,
    load_workloads,
)
from solar.definition.shadow import RealValues
from solar.graph.types import graph_info, set_graph_info
from solar.hw import load_spec
from solar.questions.executors import map_tasks

SCHEMA = "solar.definition-bounds/1"

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
    note: str = ""  # which formula, or why a trace of its own (solar.definition.symbolic)

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


@dataclass
class DefinitionBound:
    """The bounds of every workload of one definition on one GPU."""

    name: str
    path: str
    hw: str
    workloads: list[WorkloadBound]
    assumptions: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(w.status == "ok" for w in self.workloads)

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "name": self.name,
            "path": self.path,
            "hw": self.hw,
            "workloads": [w.to_dict() for w in self.workloads],
            "assumptions": self.assumptions,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        from solar.definition.table import definition_table

        return definition_table(self)


def traced_reference(defn: Definition, inputs: WorkloadInputs, module=None):
    """``(fn, tensors)``: ``fn(*tensors)`` runs the reference on the tensor inputs (scalars
    bound in), with the real values of the index tensors shadowing their fakes."""
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


def charge_gathered_rows(g, reference, inputs: WorkloadInputs) -> None:
    """Reads of an input gathered through real indices: at least the distinct rows the indices
    name (the IR counts a data-dependent gather at its minimum, all indices equal). The fused
    I/O gets the union over all gathers; each gather kernel its own call's rows, when the
    gather kernels reading the input pair one to one with the calls recorded."""

    def row_bytes(name: str) -> int:
        t = inputs.values[name]
        return t.numel() // t.shape[0] * t.element_size() if t.shape[0] else 0

    info = graph_info(g)
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
    set_graph_info(g, replace(info, kernels=tuple(kernels), fused_io=fused_io))


def lift_workload(defn: Definition, wl: Workload, module=None, inputs=None):
    """``(inputs, IR program, einsum graph)`` of one workload, gathered rows charged
    (``inputs``: the workload's, when already made)."""
    module = module or reference_module(defn)
    inputs = inputs or make_inputs(defn, wl, module=module)
    fn, tensors = traced_reference(defn, inputs, module)
    program, g = trace_and_lift(fn, tensors, name=defn.name, notes=NOTES)
    charge_gathered_rows(g, fn, inputs)
    return inputs, program, g


def bound_workload(defn: Definition, wl: Workload, spec, module=None, inputs=None) -> WorkloadBound:
    """Bound one workload; never raises (a failure is ``status="error"``, one line)."""
    t0 = time.perf_counter()
    try:
        inputs, program, g = lift_workload(defn, wl, module, inputs)
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


@dataclass(frozen=True)
class WorkloadTask:
    """One workload of a batch, as a worker receives it: the definition file, the parsed
    workload and the GPU (a name, path or spec)."""

    definition: str
    workload: Workload
    hw: object


def workload_task(task: WorkloadTask) -> tuple[WorkloadBound, list[str]]:
    """``(row, assumptions)`` of one workload, in any process (the batch executors' task
    function): the row carries no Bound, so that it pickles small. Never raises."""
    try:
        defn = load_definition(task.definition)
        spec = load_spec(task.hw)
    except Exception as e:  # a definition or GPU that no longer loads: this workload's row
        return _task_failed(task, f"{type(e).__name__}: {str(e).strip().splitlines()[0]}")
    row = bound_workload(defn, task.workload, spec)
    assumptions = list(row.bound.assumptions) if row.bound is not None else list(NOTES)
    row.bound = None
    return row, assumptions


def _task_failed(task: WorkloadTask, reason: str, status: str = "error"):
    """The result of a workload that failed outside its analysis (its worker died, it passed
    the time limit)."""
    return WorkloadBound(task.workload.uuid, {}, status, error=reason), list(NOTES)


workload_task.crash_result = _task_failed  # type: ignore[attr-defined]


def _rows_and_assumptions(done) -> tuple[list[WorkloadBound], list[str]]:
    """The rows of :func:`workload_task` results, and the assumptions of the first bounded
    workload (the notes alone when none was)."""
    rows = [r for r, _ in done]
    return rows, next((a for r, a in done if r.status == "ok"), list(NOTES))


def _workloads(defn: Definition, workloads, sample: int | None) -> list[Workload]:
    if workloads is None:
        found = default_workloads_path(defn.path) if defn.path else None
        if found is None:
            raise DefinitionError(
                f"{defn.where}: no workloads given and no workload file next to it; pass "
                f"--workloads FILE"
            )
        workloads = found
    wls = load_workloads(workloads, defn)
    if sample and len(wls) > sample:
        step = (len(wls) - 1) / max(sample - 1, 1)
        wls = [wls[round(i * step)] for i in range(sample)]
    return wls


def bound_definition(
    definition: str | Path | dict | Definition,
    workloads: str | Path | list | None = None,
    hw="H100",
    *,
    sample: int | None = None,
    jobs: int | None = 1,
    ray: str | None = None,
    timeout: float | None = None,
    symbolic: bool = False,
) -> DefinitionBound:
    """Bounds of every workload of a definition (a ``definition.json`` path, its parsed dict or
    a :class:`Definition`) on ``hw``. ``workloads``: a ``workload.jsonl`` path or a list of
    workload dicts (default: the file next to the definition); ``sample=n``: every k-th
    workload so that n are bounded (first and last included). ``jobs``/``ray``/``timeout``:
    bound the workloads in worker processes or on a Ray cluster, as a batch of problem files
    is (:func:`solar.questions.executors.map_tasks`; default: in this process); a workload's
    ``bound`` (the full :class:`~solar.backend.result.Bound`) is kept only in this process.
    ``symbolic=True``: trace the reference once with the ``var`` axes as symbols and bound
    each workload from that formula where it holds (each row's ``method`` says which;
    :mod:`solar.definition.symbolic`); with ``jobs``/``ray``/``timeout`` the definition is one
    task (its workloads share the formulas; ``timeout`` is the whole definition's limit).

    Python's garbage collector is left as the caller has it (``solar bound`` defers full
    collections around its batch: :mod:`solar.collector`)."""
    return _bound_definition(definition, workloads, hw, sample, jobs, ray, timeout, symbolic)


def _bound_definition(
    definition, workloads, hw, sample, jobs, ray, timeout, symbolic
) -> DefinitionBound:
    defn = definition if isinstance(definition, Definition) else load_definition(definition)
    wls = _workloads(defn, workloads, sample)
    spec = load_spec(hw)
    here = jobs == 1 and ray is None and timeout is None
    if not here and defn.path is None:
        raise DefinitionError(f"{defn.where}: a batch of workloads needs a definition file")
    if symbolic and here:
        from solar.definition.symbolic import bound_with_formulas

        rows = bound_with_formulas(defn, wls, spec, reference_module(defn))
        first = next((r.bound for r in rows if r.bound is not None), None)
        assumptions = list(first.assumptions) if first is not None else list(NOTES)
    elif symbolic:
        from solar.definition.symbolic import DefinitionTask, definition_task

        task = DefinitionTask(str(defn.path), tuple(wls), hw)
        [(rows, assumptions)] = map_tasks(
            definition_task, [(task,)], jobs=jobs, ray=ray, timeout=timeout
        )
    elif here:
        module = reference_module(defn)
        rows = [bound_workload(defn, wl, spec, module) for wl in wls]
        first = next((r.bound for r in rows if r.bound is not None), None)
        assumptions = list(first.assumptions) if first is not None else list(NOTES)
    else:
        tasks = [WorkloadTask(str(defn.path), wl, hw) for wl in wls]
        done = map_tasks(workload_task, [(t,) for t in tasks], jobs=jobs, ray=ray, timeout=timeout)
        rows, assumptions = _rows_and_assumptions(done)
    return DefinitionBound(defn.name, str(defn.path or ""), spec.name, rows, assumptions)


def discover_definitions(paths: Iterable[str | Path]) -> list[Path]:
    """Definition files: each ``.json`` file given, and every ``*.json`` below each folder
    (sorted; ``*.workloads.jsonl`` are their workloads)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(f for f in p.rglob("*.json") if not f.name.startswith(("_", ".")))
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or folder")
    return out


def bound_definitions(
    paths: Sequence[str | Path],
    hw="H100",
    *,
    sample: int | None = None,
    jobs: int | None = 1,
    ray: str | None = None,
    timeout: float | None = None,
    symbolic: bool = False,
) -> list[DefinitionBound]:
    """:func:`bound_definition` of every definition under ``paths`` (a bad file: one error
    row). ``jobs``/``ray``/``timeout``: the workloads of all definitions are one batch of
    tasks on worker processes or a Ray cluster (default: one after another here).
    ``symbolic=True``: each definition's workloads from one formula where it holds (with
    ``jobs``/``ray``/``timeout``: one task per definition, its workloads sharing the
    formulas). The garbage collector as in :func:`bound_definition`: the caller's."""
    return _bound_definitions(paths, hw, sample, jobs, ray, timeout, symbolic)


def _bound_definitions(paths, hw, sample, jobs, ray, timeout, symbolic) -> list[DefinitionBound]:
    found = discover_definitions(paths)
    if jobs == 1 and ray is None and timeout is None:
        return [_definition_or_error(p, hw, sample, symbolic) for p in found]
    spec = load_spec(hw)
    plans: list[tuple[Path, Definition | None, list[Workload], str | None]] = []
    for p in found:
        try:
            defn = load_definition(p)
            plans.append((p, defn, _workloads(defn, None, sample), None))
        except DefinitionError as e:
            plans.append((p, None, [], str(e)))
    if symbolic:
        return _symbolic_batch(plans, hw, spec.name, jobs, ray, timeout)
    tasks = [(WorkloadTask(str(p), wl, hw),) for p, _, wls, _ in plans for wl in wls]
    done = iter(map_tasks(workload_task, tasks, jobs=jobs, ray=ray, timeout=timeout))
    out = []
    for p, defn, wls, error in plans:
        if defn is None:
            out.append(_error_row(p, spec.name, error or ""))
            continue
        results = [next(done) for _ in wls]
        rows, assumptions = _rows_and_assumptions(results)
        out.append(DefinitionBound(defn.name, str(p), spec.name, rows, assumptions))
    return out


def _symbolic_batch(plans, hw, gpu: str, jobs, ray, timeout) -> list[DefinitionBound]:
    """:func:`bound_definitions` with ``symbolic=True`` on workers: one task per definition."""
    from solar.definition.symbolic import DefinitionTask, definition_task

    tasks = [(DefinitionTask(str(p), tuple(wls), hw),) for p, d, wls, _ in plans if d is not None]
    done = iter(map_tasks(definition_task, tasks, jobs=jobs, ray=ray, timeout=timeout))
    out = []
    for p, defn, _, error in plans:
        if defn is None:
            out.append(_error_row(p, gpu, error or ""))
            continue
        rows, assumptions = next(done)
        out.append(DefinitionBound(defn.name, str(p), gpu, rows, assumptions))
    return out


def _definition_or_error(path: Path, hw, sample: int | None, symbolic=False) -> DefinitionBound:
    try:
        return bound_definition(path, hw=hw, sample=sample, symbolic=symbolic)
    except DefinitionError as e:
        return _error_row(path, str(hw), str(e))


def _error_row(path: Path, hw: str, error: str) -> DefinitionBound:
    return DefinitionBound(path.stem, str(path), hw, [WorkloadBound("-", {}, "error", error=error)])


def is_definition_path(path: str | Path) -> bool:
    """A ``.json`` file, or a folder holding definition files and no ``.py`` problem files."""
    p = Path(path)
    if p.is_dir():
        return any(p.rglob("*.json")) and not any(p.rglob("*.py"))
    return p.suffix == ".json"
