"""The scalar operator table: what each operator computes and what it costs per instance.

One row per operator. ``fn`` evaluates it on broadcastable torch tensors (the executor's array
library); ``alu`` is the minimum number of CUDA-core flops it needs (an FMA counts 2, so a lone
add or mul counts 1, and the fp32 peak, which counts FMAs as 2, is reached only if every op
pairs into an FMA: a lower bound); ``sfu`` is the number of special-function-unit (MUFU)
instructions: exp, log, tanh, sin, cos, rsqrt and sqrt need one each. Sign flips, absolute
values and type conversions are free operand modifiers or run on other pipes, so cost 0.
Adding an operator is adding a row.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class ScalarOp:
    name: str
    arity: int
    fn: Callable[..., torch.Tensor]
    alu: int = 1
    sfu: int = 0
    infix: str | None = None


def _gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return F.gelu(x, approximate=approximate)


def _cast(x: torch.Tensor, dtype: str) -> torch.Tensor:
    from solar.ir.dtypes import torch_dtype

    return x.to(torch_dtype(dtype))


def _where(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where(c.to(torch.bool), a, b)


#: ``random(position, dist=...)``: the in-place torch generator method of each distribution
#: and the attributes it takes (see :func:`_random`).
RANDOM_DISTRIBUTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "uniform": ("uniform_", ("a", "b")),  # [a, b)
    "normal": ("normal_", ("a", "b")),  # mean a, std b
    "randint": ("random_", ("a", "b")),  # integers in [a, b)
    "bernoulli": ("bernoulli_", ("a",)),  # 1 with probability a
    "exponential": ("exponential_", ("a",)),  # rate a
}


def _random(position: torch.Tensor, dist: str, dtype: str, a=None, b=None) -> torch.Tensor:
    """Fresh random values, one per element of ``position`` (the flat element index of the
    values drawn), from torch's default generator on its device. Drawn with the same in-place
    generator call that ``torch.rand``/``randn``/``randint``/``bernoulli_``/``normal_`` make, over
    the whole output at once: after the same ``torch.manual_seed`` and the same sequence of
    draws, the values equal the source program's (re-seeded validation)."""
    from solar.ir.dtypes import torch_dtype

    method, names = RANDOM_DISTRIBUTIONS[dist]
    out = torch.empty(tuple(position.shape), dtype=torch_dtype(dtype), device=position.device)
    args = [v for v, n in zip((a, b), ("a", "b")) if n in names]
    return getattr(out, method)(*args)


_ROWS = [
    ScalarOp("add", 2, torch.add, infix="+"),
    ScalarOp("sub", 2, torch.sub, infix="-"),
    ScalarOp("mul", 2, torch.mul, infix="*"),
    ScalarOp("div", 2, torch.div, infix="/"),
    ScalarOp("maximum", 2, torch.maximum),
    ScalarOp("minimum", 2, torch.minimum),
    ScalarOp("pow", 2, torch.pow, alu=1, sfu=2),  # x**y = exp2(y * log2(x))
    ScalarOp("eq", 2, torch.eq, infix="=="),
    ScalarOp("ne", 2, torch.ne, infix="!="),
    ScalarOp("lt", 2, torch.lt, infix="<"),
    ScalarOp("le", 2, torch.le, infix="<="),
    ScalarOp("gt", 2, torch.gt, infix=">"),
    ScalarOp("ge", 2, torch.ge, infix=">="),
    ScalarOp("logical_and", 2, torch.logical_and, infix="&&"),
    ScalarOp("logical_or", 2, torch.logical_or, infix="||"),
    ScalarOp("logical_not", 1, torch.logical_not),
    ScalarOp("where", 3, _where),
    ScalarOp("neg", 1, torch.neg, alu=0),
    ScalarOp("abs", 1, torch.abs, alu=0),
    ScalarOp("cast", 1, _cast, alu=0),
    ScalarOp("square", 1, torch.square),
    ScalarOp("reciprocal", 1, torch.reciprocal),
    ScalarOp("relu", 1, torch.relu),
    ScalarOp("exp", 1, torch.exp, alu=0, sfu=1),
    ScalarOp("exp2", 1, torch.exp2, alu=0, sfu=1),
    ScalarOp("expm1", 1, torch.expm1, alu=0, sfu=1),
    ScalarOp("log", 1, torch.log, alu=0, sfu=1),
    ScalarOp("log2", 1, torch.log2, alu=0, sfu=1),
    ScalarOp("log1p", 1, torch.log1p, alu=1, sfu=1),
    ScalarOp("sqrt", 1, torch.sqrt, alu=0, sfu=1),
    ScalarOp("rsqrt", 1, torch.rsqrt, alu=0, sfu=1),
    ScalarOp("sin", 1, torch.sin, alu=0, sfu=1),
    ScalarOp("cos", 1, torch.cos, alu=0, sfu=1),
    ScalarOp("tanh", 1, torch.tanh, alu=0, sfu=1),
    # sigmoid(x) = 0.5 * tanh(0.5 x) + 0.5: one MUFU.TANH and one FMA (the 0.5 x folds in).
    ScalarOp("sigmoid", 1, torch.sigmoid, alu=2, sfu=1),
    # silu(x) = x * sigmoid(x)
    ScalarOp("silu", 1, F.silu, alu=3, sfu=1),
    # erf has no MUFU instruction: a polynomial of at least a few FMAs; 0.5 x (1 + erf(x/√2)).
    ScalarOp("erf", 1, torch.erf, alu=2),
    ScalarOp("gelu", 1, _gelu, alu=4, sfu=0),
    # erfinv has no MUFU instruction: CUDA's erfinvf takes a log (one MUFU.LG2) of 1 - x·x
    # (one FMA) before its polynomial, so at least 2 flops and 1 SFU op.
    ScalarOp("erfinv", 1, torch.erfinv, alu=2, sfu=1),
    ScalarOp("floor", 1, torch.floor),
    ScalarOp("ceil", 1, torch.ceil),
    ScalarOp("round", 1, torch.round),
    ScalarOp("sign", 1, torch.sign),
    ScalarOp("trunc", 1, torch.trunc),
    # a - trunc(a / b) * b (fmod) or a - floor(a / b) * b (remainder: the divisor's sign):
    # a divide, a rounding and one FMA (2 flops).
    ScalarOp("fmod", 2, torch.fmod, alu=4),
    ScalarOp("remainder", 2, torch.remainder, alu=4),
    # bitwise logic is one LOP3 each (~ of bool is logical not)
    ScalarOp("bitwise_and", 2, torch.bitwise_and, infix="&"),
    ScalarOp("bitwise_or", 2, torch.bitwise_or, infix="|"),
    ScalarOp("bitwise_xor", 2, torch.bitwise_xor, infix="^"),
    ScalarOp("bitwise_not", 1, torch.bitwise_not),
    # one compare each (x != x; |x| == inf, the abs a free modifier; |x| < inf)
    ScalarOp("isnan", 1, torch.isnan),
    ScalarOp("isinf", 1, torch.isinf),
    ScalarOp("isfinite", 1, torch.isfinite),
    # Inverse trigonometric functions have no MUFU instruction: at least a square and one FMA
    # of a polynomial in x^2 (3 flops); atan adds the range reduction 1/x (1), atan2 the
    # divide y/x (1), acos the pi/2 - asin (1). tan = sin / cos: two MUFU ops and a divide;
    # sinh/cosh = (e^x -+ 1/e^x) / 2: one MUFU.EX2, a reciprocal, an add and a multiply.
    ScalarOp("atan", 1, torch.atan, alu=4),
    ScalarOp("atan2", 2, torch.atan2, alu=5),
    ScalarOp("asin", 1, torch.asin, alu=3),
    ScalarOp("acos", 1, torch.acos, alu=4),
    ScalarOp("tan", 1, torch.tan, alu=1, sfu=2),
    ScalarOp("sinh", 1, torch.sinh, alu=3, sfu=1),
    ScalarOp("cosh", 1, torch.cosh, alu=3, sfu=1),
    # asinh/acosh = log(x + sqrt(x·x ± 1)): one MUFU.LG2 and one MUFU.SQRT, an FMA and an add
    # (3 flops); atanh = ½·log((1 + x) / (1 − x)): a log, two adds, a divide and a multiply;
    # log10 = log2(x) · log10(2): a log and a multiply.
    ScalarOp("asinh", 1, torch.asinh, alu=3, sfu=2),
    ScalarOp("acosh", 1, torch.acosh, alu=3, sfu=2),
    ScalarOp("atanh", 1, torch.atanh, alu=4, sfu=1),
    ScalarOp("log10", 1, torch.log10, alu=1, sfu=1),
    ScalarOp("logical_xor", 2, torch.logical_xor),
]

# A random value costs at least one instruction to produce (counter-based generators such as
# Philox take tens per 4 values, but no fixed minimum is provable for every generator); its
# argument is the element's flat position, so it counts once per value drawn.
_ROWS.append(ScalarOp("random", 1, _random, alu=1))

SCALAR_OPS: dict[str, ScalarOp] = {op.name: op for op in _ROWS}

# tanh-approximate GELU: 0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³))) — one MUFU.TANH.
SCALAR_OPS["gelu_tanh"] = ScalarOp(
    "gelu_tanh", 1, lambda x: F.gelu(x, approximate="tanh"), alu=5, sfu=1
)

# Identity values of the reduction operators, and their torch implementations.
REDUCTIONS: dict[str, tuple[float, Callable[..., torch.Tensor]]] = {
    "sum": (0.0, lambda t, dims: t.sum(dim=dims)),
    "prod": (1.0, lambda t, dims: _prod(t, dims)),
    "max": (-math.inf, lambda t, dims: t.amax(dim=dims)),
    "min": (math.inf, lambda t, dims: t.amin(dim=dims)),
    "logsumexp": (-math.inf, lambda t, dims: torch.logsumexp(t, dim=dims)),
}

# Combining two partial results costs one CUDA-core op for every reduction operator.
REDUCTION_COMBINE_ALU = 1

# (CUDA-core flops, MUFU ops) per combine of each reduction operator. logsumexp: the
# max-shifted form m + log Σ exp(x - m) needs per element one exp (MUFU), a subtract and an
# add (plus a max pass and one log per row), cheaper than pairwise log(exp(a) + exp(b)), so a
# combine counts 2 flops and 1 MUFU op.
REDUCTION_COMBINE_COST: dict[str, tuple[int, int]] = {
    "sum": (REDUCTION_COMBINE_ALU, 0),
    "prod": (REDUCTION_COMBINE_ALU, 0),
    "max": (REDUCTION_COMBINE_ALU, 0),
    "min": (REDUCTION_COMBINE_ALU, 0),
    "logsumexp": (2, 1),
}

# Inclusive scans (prefix reductions) along dim ``d``, per reduction operator.
SCANS: dict[str, Callable[[torch.Tensor, int], torch.Tensor]] = {
    "sum": lambda t, d: torch.cumsum(t, dim=d),
    "prod": lambda t, d: torch.cumprod(t, dim=d),
    "max": lambda t, d: torch.cummax(t, dim=d).values,
    "min": lambda t, d: torch.cummin(t, dim=d).values,
    "logsumexp": lambda t, d: torch.logcumsumexp(t, dim=d),
}

# A transcendental may also be emulated on the FMA pipe (FlashAttention-4 does this for exp2):
# range reduction plus a degree-3 polynomial is at least 4 FMAs = 8 flops. The compute bound
# lets the backend move SFU work there when that is faster, so it stays a lower bound.
SFU_EMULATION_FLOPS = 8


def _prod(t: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    for d in sorted(dims, reverse=True):
        t = t.prod(dim=d)
    return t


def scalar_op(name: str) -> ScalarOp:
    try:
        return SCALAR_OPS[name]
    except KeyError:
        raise ValueError(
            f"scalar operator {name!r} is not in solar.ir.ops.SCALAR_OPS; add a row there"
        ) from None
