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

from solar.frontend.torchvision_ops import install_import_hook

install_import_hook()  # a torchvision whose extension cannot load still imports (its docstring)

from solar import llm  # noqa: E402
from solar.api import bound, bound_program, bound_training, trace  # noqa: E402
from solar.backend.result import Bound  # noqa: E402
from solar.definition import bound_definition  # noqa: E402
from solar.gpu.calibrate import calibrate  # noqa: E402
from solar.gpu.headroom import headroom  # noqa: E402
from solar.gpu.score import sol_score  # noqa: E402
from solar.gpu.validate import validate  # noqa: E402
from solar.hub import bound_hub  # noqa: E402  (models by name: Hugging Face configs, no weights)
from solar.hw import list_specs, load_spec  # noqa: E402
from solar.questions.compare import compare  # noqa: E402
from solar.questions.provision import provision  # noqa: E402
from solar.questions.sweep import sweep  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "Bound",
    "bound",
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
    "provision",
    "sol_score",
    "sweep",
    "trace",
    "validate",
]
