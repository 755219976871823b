"""The lowering framework both frontends build on (PyTorch: :mod:`solar.frontend.torch`; JAX:
:mod:`solar.frontend.jax`).

- :mod:`.registry`: :class:`Registry`, operator -> lowering rule, one instance per frontend;
  registering an operator twice is an error naming both functions.
- :mod:`.base`: :class:`Lowerer` (the program being built, its precision policy and
  assumption notes, the final check) and :class:`LoweringContext` (what a lowering sees of one
  operation: provenance, statements through the program builder, ``fail``).
- :mod:`.errors`: :class:`UnsupportedOperatorError` (each frontend's subclass says how to add
  a lowering), :class:`UnsupportedDtypeError`.
- :mod:`.precision`: :class:`PrecisionPolicy`, the math mode of float32 contractions.

The lowering library, written once against :class:`LoweringContext` and called by both
frontends: :mod:`.exprs` (``cast``, ``scale``), :mod:`.pointwise` (one elementwise statement,
operands broadcast and cast), :mod:`.rows` (the extern row statements of sort, top-k and the
selections), and :mod:`solar.frontend.routines` (FFT and dense linear algebra).

Nothing here imports torch or JAX.
"""

from solar.frontend.lowering.base import Lowerer, LoweringContext
from solar.frontend.lowering.errors import (
    MissingOperator,
    UnsupportedDtypeError,
    UnsupportedOperatorError,
    expressible,
)
from solar.frontend.lowering.precision import PrecisionPolicy
from solar.frontend.lowering.registry import DuplicateLoweringError, Registry

__all__ = [
    "DuplicateLoweringError",
    "Lowerer",
    "LoweringContext",
    "MissingOperator",
    "PrecisionPolicy",
    "Registry",
    "UnsupportedDtypeError",
    "UnsupportedOperatorError",
    "expressible",
]
