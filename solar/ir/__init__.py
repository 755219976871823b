"""Affine Loop IR: kernels of loop nests with affine accesses; printable, executable, costed.

Layer: the bottom. The IR knows nothing about frameworks, graphs or GPUs and imports nothing of
solar outside this package (but :mod:`solar.fmt`).
"""

from solar.ir.affine import Affine
from solar.ir.program import (
    Access,
    Dim,
    Guard,
    Kernel,
    Program,
    ProgramBuilder,
    Statement,
    View,
    with_loops,
)
from solar.ir.scalar import Call, Const, Expr, Index, Indirect, Load, call

__all__ = [
    "Access",
    "Affine",
    "Call",
    "Const",
    "Dim",
    "Expr",
    "Guard",
    "Index",
    "Indirect",
    "Kernel",
    "Load",
    "Program",
    "ProgramBuilder",
    "Statement",
    "View",
    "call",
    "with_loops",
]
