"""solar: speed-of-light bounds for PyTorch and JAX programs on NVIDIA GPUs.

import solar
b = solar.bound(model, inputs, hw="H100")
b.fused, b.cache_aware, b.unfused      # seconds, each a lower bound under its assumptions
b = solar.bound(train_step, (batch,))  # a training step: forward, backward, optimizer

The package reads as the pipeline (docs/architecture.md): ``frontend`` (PyTorch, JAX) ->
``ir`` (Affine Loop IR) -> ``graph`` (einsum graph) -> ``backend`` (bounds, with ``hw`` specs)
-> ``api`` -> ``questions`` (compare, provision, sweep, batches) and ``gpu`` (validation and
measurement on a device) -> ``report`` (views) and ``cli``.
"""

from solar import llm
from solar.api import bound, bound_program, bound_training, trace
from solar.backend.result import Bound
from solar.definition import bound_definition
from solar.gpu.calibrate import calibrate
from solar.gpu.headroom import headroom
from solar.gpu.score import sol_score
from solar.gpu.validate import validate
from solar.hw import list_specs, load_spec
from solar.questions.compare import compare
from solar.questions.provision import provision
from solar.questions.sweep import sweep

__version__ = "0.1.0"

__all__ = [
    "Bound",
    "bound",
    "bound_definition",
    "bound_program",
    "bound_training",
    "calibrate",
    "compare",
    "headroom",
    "list_specs",
    "llm",
    "load_spec",
    "provision",
    "sol_score",
    "sweep",
    "trace",
    "validate",
]
