"""The PyTorch frontend: trace a module or function with make_fx on fake tensors and lower
every aten operator to Affine Loop IR kernels.

    trace = trace_torch(model, (x,), kwargs={"cache": cache})
    trace.program        # the IR
    trace.bindings       # IR input -> ("param", "layers.0.weight") / ("buffer", ..) /
                         #   ("input", i or path) / ("kwarg", path)

Pipeline: :mod:`.trace` (make_fx; :mod:`.structure` walks input and output structures,
:mod:`.fused` and :mod:`.reroute` make library calls trace as CUDA runs them) -> :mod:`.lower`
(walk the graph) -> :mod:`.registry` (operator -> loop nests) -> :mod:`.ops` (the loop nests,
one module per operator family). :mod:`.llm` builds LLM prefill and decode-step programs.
"""

from solar.frontend.torch import ops  # noqa: F401  (registers the lowerings)
from solar.frontend.torch.lower import LoweringContext, T, UnsupportedDtypeError
from solar.frontend.torch.precision import PrecisionPolicy
from solar.frontend.torch.registry import (
    LOWERINGS,
    DataDependentOperatorError,
    UnsupportedOperatorError,
    lowering,
)
from solar.frontend.torch.trace import trace_torch

__all__ = [
    "LOWERINGS",
    "DataDependentOperatorError",
    "LoweringContext",
    "PrecisionPolicy",
    "T",
    "UnsupportedDtypeError",
    "UnsupportedOperatorError",
    "lowering",
    "trace_torch",
]
