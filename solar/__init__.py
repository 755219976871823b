"""solar: speed-of-light bounds for PyTorch and JAX programs on NVIDIA GPUs.

import solar
b = solar.bound(model, inputs, hw="H100")
b.fused, b.cache_aware, b.unfused      # seconds, each a lower bound under its assumptions
b = solar.bound(train_step, (batch,))  # a training step: forward, backward, optimizer
p = solar.plan(model, inputs, hw="H100", gpus=8)  # the best plan of 8 GPUs: ParallelBound

The package reads as the pipeline (docs/architecture.md): ``frontend`` (PyTorch, JAX) ->
``ir`` (Affine Loop IR) -> ``graph`` (einsum graph) -> ``backend`` (bounds, with ``hw`` specs)
-> ``api`` -> ``questions`` (compare, provision, sweep, batches) and ``gpu`` (validation and
measurement on a device) -> ``report`` (views) and ``cli``.

The names below are imported on first use: ``import solar`` alone imports no framework.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the names below are, for type checkers and IDEs
    from solar import llm
    from solar.api import bound, bound_program, bound_training, plan, trace, trace_and_lift
    from solar.backend.result import Bound
    from solar.definition import bound_definition
    from solar.gpu.calibrate import calibrate
    from solar.gpu.headroom import headroom
    from solar.gpu.score import sol_score
    from solar.gpu.validate import validate
    from solar.hub import bound_hub, plan_hub
    from solar.hw import list_specs, load_spec
    from solar.questions.compare import compare
    from solar.questions.kernel_groups import bound_compiled
    from solar.questions.provision import provision
    from solar.questions.serving import serving
    from solar.questions.sweep import sweep

#: public name -> the module that defines it, imported on first use (PEP 562), so that
#: ``import solar`` and the commands that need no framework never import torch or jax
_EXPORTS: dict[str, str] = {
    "Bound": "solar.backend.result",
    "bound": "solar.api",
    "bound_compiled": "solar.questions.kernel_groups",
    "bound_definition": "solar.definition",
    "bound_hub": "solar.hub",
    "bound_program": "solar.api",
    "bound_training": "solar.api",
    "calibrate": "solar.gpu.calibrate",
    "compare": "solar.questions.compare",
    "headroom": "solar.gpu.headroom",
    "list_specs": "solar.hw",
    "load_spec": "solar.hw",
    "plan": "solar.api",
    "plan_hub": "solar.hub",
    "provision": "solar.questions.provision",
    "serving": "solar.questions.serving",
    "sol_score": "solar.gpu.score",
    "sweep": "solar.questions.sweep",
    "trace": "solar.api",
    "trace_and_lift": "solar.api",
    "validate": "solar.gpu.validate",
}
#: subpackages and modules reachable as attributes (``solar.hw``, ``solar.llm``, ...)
_SUBMODULES = frozenset(
    {"api", "backend", "bench", "cli", "fmt", "frontend", "gpu", "graph", "hw", "ir", "llm"}
    | {"definition", "hub", "problem", "questions", "report", "viewable"}
)

__version__ = "0.1.0"

__all__ = [
    "Bound",
    "bound",
    "bound_compiled",
    "bound_definition",
    "bound_hub",
    "bound_program",
    "bound_training",
    "calibrate",
    "compare",
    "headroom",
    "list_specs",
    "llm",
    "load_spec",
    "plan",
    "plan_hub",
    "provision",
    "serving",
    "sol_score",
    "sweep",
    "trace",
    "trace_and_lift",
    "validate",
]


def __getattr__(name: str):
    """Import a public name's module on first use and cache the name in this module."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"solar.{name}")
    else:
        raise AttributeError(f"module 'solar' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBMODULES})
