"""solar: speed-of-light bounds for PyTorch programs on NVIDIA GPUs.

import solar
b = solar.bound(model, inputs, hw="H100")
b.fused, b.cache_aware, b.unfused      # seconds, each a lower bound under its assumptions
"""

from solar.api import bound, bound_program, trace
from solar.comparison import compare
from solar.gpu.calibrate import calibrate
from solar.gpu.headroom import headroom
from solar.gpu.score import sol_score
from solar.gpu.validate import validate
from solar.hw import list_specs, load_spec
from solar.provisioning import provision, sweep
from solar.report import Bound

__version__ = "0.1.0"

__all__ = [
    "Bound",
    "bound",
    "bound_program",
    "calibrate",
    "compare",
    "headroom",
    "list_specs",
    "load_spec",
    "provision",
    "sol_score",
    "sweep",
    "trace",
    "validate",
]
