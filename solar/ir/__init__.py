"""Affine Loop IR: kernels of loop nests with affine accesses; printable and costed.

Layer: the bottom. The IR knows nothing about frameworks, graphs or GPUs and imports nothing of
solar outside this package (but :mod:`solar.fmt`), nor torch or jax: it is pure data. Running a
program is an interpreter's job (:mod:`solar.interp.torch`).
"""

from solar.ir.affine import Affine
from solar.ir.program import (
    Access,
    Dim,
    Extern,
    Guard,
    Kernel,
    Program,
    ProgramBuilder,
    Scan,
    Statement,
    StatementVisitor,
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
    "Extern",
    "Guard",
    "Index",
    "Indirect",
    "Kernel",
    "Load",
    "Program",
    "ProgramBuilder",
    "Scan",
    "Statement",
    "StatementVisitor",
    "View",
    "call",
    "with_loops",
]
