"""Kernel-benchmark problems in the FlashInfer-Trace format (``definition.json`` +
``workload.jsonl``, as SOL-ExecBench uses): the schema and loader
(:mod:`~solar.definition.schema`), axes and constraints (:mod:`~solar.definition.axes`),
workload inputs with real index values (:mod:`~solar.definition.inputs`,
:mod:`~solar.definition.shadow`) and bounds per workload
(:mod:`~solar.definition.bound_definitions`).

Layer: with the questions (it traces and bounds through :mod:`solar.api`).
"""

from solar.definition.bound_definitions import (
    DefinitionBound,
    WorkloadBound,
    bound_definition,
    bound_definitions,
    discover_definitions,
    is_definition_path,
)
from solar.definition.schema import (
    Definition,
    DefinitionError,
    Workload,
    load_definition,
    load_workloads,
)

__all__ = [
    "Definition",
    "DefinitionBound",
    "DefinitionError",
    "Workload",
    "WorkloadBound",
    "bound_definition",
    "bound_definitions",
    "discover_definitions",
    "is_definition_path",
    "load_definition",
    "load_workloads",
]
