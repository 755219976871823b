"""The JAX frontend: trace a JAX function or a Flax module with ``jax.make_jaxpr`` on
abstract values and lower every jaxpr primitive to Affine Loop IR.

    trace = trace_jax(mlp, (params, x))
    trace.program        # the IR
    trace.bindings       # IR input -> ("weight", "params/dense1/kernel") / ("input", "x")
    trace.values(mlp, (params, x))   # real values for solar.interp.torch.execute.execute

Pipeline: :mod:`.trace` (make_jaxpr, pytree names) -> :mod:`.lower` (walk the jaxpr; inline
calls, unroll or loop scans, fold known values) -> :mod:`.registry` (primitive -> loop nests) ->
:mod:`.ops` (the loop nests, one module per primitive family) -> :mod:`.fusion` (group units
into the kernels XLA launches, for the unfused bound). :mod:`.precision` is the float32
dot/conv policy; :mod:`.problem` loads JAX problem files.
"""

from solar.frontend.jax import ops  # noqa: F401  (registers the lowerings)
from solar.frontend.jax.lower import LoweringContext, V
from solar.frontend.jax.precision import PrecisionPolicy
from solar.frontend.jax.problem import load_jax_problem
from solar.frontend.jax.registry import (
    LOWERINGS,
    DataDependentError,
    UnsupportedDtypeError,
    UnsupportedPrimitiveError,
    lowering,
)
from solar.frontend.jax.trace import is_jax_program, trace_jax

__all__ = [
    "LOWERINGS",
    "DataDependentError",
    "LoweringContext",
    "PrecisionPolicy",
    "UnsupportedDtypeError",
    "UnsupportedPrimitiveError",
    "V",
    "is_jax_program",
    "load_jax_problem",
    "lowering",
    "trace_jax",
]
