"""Scalar nodes of a symbolic trace: Python arithmetic on sizes, kept as expressions.

With symbolic shapes, a program (or a PyTorch decomposition) that computes a Python float from
a size leaves that arithmetic in the graph: ``F.cross_entropy``'s label smoothing divides by
the class count as ``truediv(0.1, sym_float(sym_size(x, 1)))``, and the quotient feeds
``aten.mul.Scalar``. A numeric trace folds the same arithmetic into a plain float. Each such
node (its traced value a ``SymFloat``) is evaluated here on its lowered arguments, which are
:class:`~solar.algebra.size.Size` s and :class:`~solar.algebra.size.Real` s, so the
operator that takes the scalar gets the number of the traced point carrying its expression.
(A node whose value is a ``SymInt`` is read off its traced value instead: see
:meth:`~solar.frontend.torch.lower.Lowerer.lower_call`.)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

import torch

from solar.algebra.size import sqrt, to_real

#: fx targets of scalar arithmetic -> the function computing it on Sizes and Reals
SCALAR_FUNCTIONS: dict[object, Callable[..., object]] = {
    torch.sym_float: to_real,
    torch.sym_sqrt: sqrt,
    torch._sym_sqrt: sqrt,  # type: ignore[attr-defined]
    math.sqrt: sqrt,
    operator.truediv: operator.truediv,
    operator.mul: operator.mul,
    operator.add: operator.add,
    operator.sub: operator.sub,
    operator.neg: operator.neg,
    # a number read from a tensor with no value (unknown_values.py): it only fills tensors
    torch.ops.aten._local_scalar_dense.default: lambda tensor: math.nan,
}


def is_scalar_node(target: object, val: object) -> bool:
    """Whether a node computes a float of sizes that :func:`scalar_value` evaluates."""
    return isinstance(val, torch.SymFloat) and target in SCALAR_FUNCTIONS


def scalar_value(target: object, args: tuple, val: torch.SymFloat) -> float:
    """``target(*args)`` on the lowered arguments: a :class:`~solar.algebra.size.Real` (or a
    plain float) equal to the traced value ``val``."""
    value = SCALAR_FUNCTIONS[target](*args)
    hint = val.node.hint
    if hint is not None and not math.isclose(float.__float__(to_real(value)), hint, rel_tol=1e-12):
        raise AssertionError(f"{target} of {args} is {value}; the trace has {hint}")
    return value  # type: ignore[return-value]
