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

The program as XLA compiled it (issue 33): :func:`compile_jax` (:mod:`.compiled`) maps every
kernel of ``jax.jit``'s optimized HLO (:mod:`.hlo_text`) to the jaxpr equations it computes
(:mod:`.equation_keys`) and so to the IR kernels; :func:`profile_jax` (:mod:`.profiling`)
times each launch of a run with the JAX profiler.
"""

from solar.frontend.jax import ops  # noqa: F401  (registers the lowerings)
from solar.frontend.jax.compiled import compile_jax
from solar.frontend.jax.lower import LoweringContext, V
from solar.frontend.jax.precision import PrecisionPolicy
from solar.frontend.jax.problem import load_jax_problem
from solar.frontend.jax.profiling import Launch, profile_jax
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
    "Launch",
    "LoweringContext",
    "PrecisionPolicy",
    "UnsupportedDtypeError",
    "UnsupportedPrimitiveError",
    "V",
    "compile_jax",
    "is_jax_program",
    "load_jax_problem",
    "lowering",
    "profile_jax",
    "trace_jax",
]
