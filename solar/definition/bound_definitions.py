"""Bounds of a definition, one per workload (each :mod:`solar.definition.workload`'s, or from
formulas: :mod:`solar.definition.symbolic_axes`), in this process or as a batch of tasks on
worker processes or Ray. A folder of definitions is a batch, like a folder of problem files."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from solar.definition.inputs import reference_module
from solar.definition.schema import (
    Definition,
    DefinitionError,
    Workload,
    default_workloads_path,
    load_definition,
    load_workloads,
)
from solar.definition.symbolic_axes import DefinitionTask, bound_with_formulas, definition_task
from solar.definition.workload import NOTES, WorkloadBound, bound_workload
from solar.hw import load_spec
from solar.questions.executors import map_tasks

SCHEMA = "solar.definition-bounds/1"


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
    :mod:`solar.definition.symbolic_axes`); with ``jobs``/``ray``/``timeout`` the definition is one
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
        rows = bound_with_formulas(defn, wls, spec, reference_module(defn))
        first = next((r.bound for r in rows if r.bound is not None), None)
        assumptions = list(first.assumptions) if first is not None else list(NOTES)
    elif symbolic:
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
