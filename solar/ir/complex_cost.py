"""Complex operands in real operations: which expressions are complex-valued, and what a call
or a contraction costs when some operand is (the rows of :data:`solar.ir.ops.COMPLEX_COST`).
Shared by the cost model (:mod:`solar.ir.cost`) and the counting oracle
(:mod:`solar.interp.torch.oracle`).
"""

from __future__ import annotations

from solar.ir.dtypes import is_complex
from solar.ir.ops import COMPLEX_COST, scalar_op
from solar.ir.program import Program
from solar.ir.scalar import Call, Const, Expr, Load

_REAL_RESULT = frozenset(
    {"real", "imag", "abs", "angle", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf"}
    | {"isfinite"}
)


def complex_value(program: Program, e: Expr) -> bool:
    """Whether ``e`` is complex-valued: a load of a complex tensor, a complex constant, a
    ``complex``/``polar`` (or a cast to a complex dtype), or an operator with a complex operand
    (except ``real``, ``imag``, ``abs``, ``angle`` and comparisons, which are real)."""
    if isinstance(e, Load):
        return is_complex(program.tensors[e.tensor].dtype)
    if isinstance(e, Const):
        return isinstance(e.value, complex)
    if not isinstance(e, Call):
        return False
    if e.op in ("complex", "polar"):
        return True
    if e.op == "cast":  # a real value cast to complex keeps a zero imaginary part
        return is_complex(str(dict(e.attrs).get("dtype", ""))) and complex_value(program, e.args[0])
    if e.op in _REAL_RESULT:
        return False
    return any(complex_value(program, a) for a in e.args)


def call_cost(program: Program, node: Call) -> tuple[int, int]:
    """(CUDA-core flops, MUFU ops) of one evaluation of ``node``: its row of
    :data:`solar.ir.ops.SCALAR_OPS`, or of :data:`solar.ir.ops.COMPLEX_COST` when an operand
    is complex."""
    spec = scalar_op(node.op)
    rows = COMPLEX_COST.get(node.op)
    if rows is not None:
        flags = tuple(complex_value(program, a) for a in node.args)
        if any(flags):
            return rows.get(flags, (spec.alu, spec.sfu))
    return spec.alu, spec.sfu


def contraction_multiplier(program: Program, pair: tuple[Load, Load]) -> int:
    """Real multiply-adds per operand pair of a contraction: 1 for real operands, 2 for a real
    times a complex one, 3 for two complex ones (the 3M algorithm, Gauss's three products
    (a+b)(c+d), ac, bd per pair, which cuBLAS offers as cublasCgemm3m; the plain CGEMM does 4)."""
    n = sum(is_complex(program.tensors[ld.tensor].dtype) for ld in pair)
    return (1, 2, 3)[n]
