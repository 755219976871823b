"""The scalar operator table: each operator's name, arity and what it costs per instance.

Pure data, no array library: an interpreter supplies what each operator computes (the torch
one: :data:`solar.interp.torch.scalar.TORCH_OPS`, one function per row). One row per operator.
``alu`` is the minimum number of CUDA-core flops it needs (an FMA counts 2, so a lone
add or mul counts 1, and the fp32 peak, which counts FMAs as 2, is reached only if every op
pairs into an FMA: a lower bound); ``sfu`` is the number of special-function-unit (MUFU)
instructions: exp, log, tanh, sin, cos, rsqrt and sqrt need one each. Sign flips, absolute
values and type conversions are free operand modifiers or run on other pipes, so cost 0.
Adding an operator is adding a row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ScalarOp:
    name: str
    arity: int
    alu: int = 1
    sfu: int = 0
    infix: str | None = None


#: ``random(position, dist=...)``: the distributions and the attributes each takes.
RANDOM_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "uniform": ("a", "b"),  # [a, b)
    "normal": ("a", "b"),  # mean a, std b
    "randint": ("a", "b"),  # integers in [a, b)
    "bernoulli": ("a",),  # 1 with probability a
    "exponential": ("a",),  # rate a
}


_ROWS = [
    ScalarOp("add", 2, infix="+"),
    ScalarOp("sub", 2, infix="-"),
    ScalarOp("mul", 2, infix="*"),
    ScalarOp("div", 2, infix="/"),
    ScalarOp("maximum", 2),
    ScalarOp("minimum", 2),
    ScalarOp("pow", 2, alu=1, sfu=2),  # x**y = exp2(y * log2(x))
    ScalarOp("eq", 2, infix="=="),
    ScalarOp("ne", 2, infix="!="),
    ScalarOp("lt", 2, infix="<"),
    ScalarOp("le", 2, infix="<="),
    ScalarOp("gt", 2, infix=">"),
    ScalarOp("ge", 2, infix=">="),
    ScalarOp("logical_and", 2, infix="&&"),
    ScalarOp("logical_or", 2, infix="||"),
    ScalarOp("logical_not", 1),
    ScalarOp("where", 3),
    ScalarOp("neg", 1, alu=0),
    ScalarOp("abs", 1, alu=0),
    ScalarOp("cast", 1, alu=0),
    ScalarOp("square", 1),
    ScalarOp("reciprocal", 1),
    ScalarOp("relu", 1),
    ScalarOp("exp", 1, alu=0, sfu=1),
    ScalarOp("exp2", 1, alu=0, sfu=1),
    ScalarOp("expm1", 1, alu=0, sfu=1),
    ScalarOp("log", 1, alu=0, sfu=1),
    ScalarOp("log2", 1, alu=0, sfu=1),
    ScalarOp("log1p", 1, alu=1, sfu=1),
    ScalarOp("sqrt", 1, alu=0, sfu=1),
    ScalarOp("rsqrt", 1, alu=0, sfu=1),
    ScalarOp("sin", 1, alu=0, sfu=1),
    ScalarOp("cos", 1, alu=0, sfu=1),
    ScalarOp("tanh", 1, alu=0, sfu=1),
    # sigmoid(x) = 0.5 * tanh(0.5 x) + 0.5: one MUFU.TANH and one FMA (the 0.5 x folds in).
    ScalarOp("sigmoid", 1, alu=2, sfu=1),
    # silu(x) = x * sigmoid(x)
    ScalarOp("silu", 1, alu=3, sfu=1),
    # erf has no MUFU instruction: a polynomial of at least a few FMAs; 0.5 x (1 + erf(x/√2)).
    ScalarOp("erf", 1, alu=2),
    ScalarOp("gelu", 1, alu=4, sfu=0),
    ScalarOp("floor", 1),
    ScalarOp("ceil", 1),
    ScalarOp("round", 1),
    ScalarOp("sign", 1),
    ScalarOp("trunc", 1),
    # a - trunc(a / b) * b (fmod) or a - floor(a / b) * b (remainder: the divisor's sign):
    # a divide, a rounding and one FMA (2 flops).
    ScalarOp("fmod", 2, alu=4),
    ScalarOp("remainder", 2, alu=4),
    # bitwise logic is one LOP3 each (~ of bool is logical not)
    ScalarOp("bitwise_and", 2, infix="&"),
    ScalarOp("bitwise_or", 2, infix="|"),
    ScalarOp("bitwise_xor", 2, infix="^"),
    ScalarOp("bitwise_not", 1),
    # a shift is one SHF (torch's semantics: arithmetic right shift of signed integers, a
    # shift by the width or more fills with the sign (right) or zeros (left))
    ScalarOp("bitwise_right_shift", 2, infix=">>"),
    ScalarOp("bitwise_left_shift", 2, infix="<<"),
    # logaddexp(a, b) = max(a, b) + log1p(exp(-|a - b|)): a max, a subtract, an exp (MUFU;
    # the sign and |.| are operand modifiers), log1p (an add and a MUFU.LG2) and an add: 4
    # flops and 2 MUFU ops; logaddexp2 the same with exp2 and log2.
    ScalarOp("logaddexp", 2, alu=4, sfu=2),
    ScalarOp("logaddexp2", 2, alu=4, sfu=2),
    # one compare each (x != x; |x| == inf, the abs a free modifier; |x| < inf)
    ScalarOp("isnan", 1),
    ScalarOp("isinf", 1),
    ScalarOp("isfinite", 1),
    # Inverse trigonometric functions have no MUFU instruction: at least a square and one FMA
    # of a polynomial in x^2 (3 flops); atan adds the range reduction 1/x (1), atan2 the
    # divide y/x (1), acos the pi/2 - asin (1). tan = sin / cos: two MUFU ops and a divide;
    # sinh/cosh = (e^x -+ 1/e^x) / 2: one MUFU.EX2, a reciprocal, an add and a multiply.
    ScalarOp("atan", 1, alu=4),
    ScalarOp("atan2", 2, alu=5),
    ScalarOp("asin", 1, alu=3),
    ScalarOp("acos", 1, alu=4),
    ScalarOp("tan", 1, alu=1, sfu=2),
    ScalarOp("sinh", 1, alu=3, sfu=1),
    ScalarOp("cosh", 1, alu=3, sfu=1),
    # asinh/acosh = log(x + sqrt(x·x ± 1)): one MUFU.LG2 and one MUFU.SQRT, an FMA and an add
    # (3 flops); atanh = ½·log((1 + x) / (1 − x)): a log, two adds, a divide and a multiply;
    # log10 = log2(x) · log10(2): a log and a multiply.
    ScalarOp("asinh", 1, alu=3, sfu=2),
    ScalarOp("acosh", 1, alu=3, sfu=2),
    ScalarOp("atanh", 1, alu=4, sfu=1),
    ScalarOp("log10", 1, alu=1, sfu=1),
    ScalarOp("logical_xor", 2),
]

# Complex numbers (issue 24). real/imag/complex/conj select or assemble the two parts of a
# complex value (register moves and a sign flip: free); polar(r, theta) = r cos theta +
# i r sin theta (two MUFU ops and two multiplies). The arithmetic operators above take complex
# operands too; what they cost then (in real operations) is :data:`COMPLEX_COST`.
_ROWS += [
    ScalarOp("real", 1, alu=0),
    ScalarOp("imag", 1, alu=0),
    ScalarOp("complex", 2, alu=0),
    ScalarOp("conj", 1, alu=0),
    ScalarOp("angle", 1, alu=5),
    ScalarOp("polar", 2, alu=2, sfu=2),
]

# Bits (issue 24: JAX's PRNG). The 32-bit integer operators wrap to 32 bits (the torch interpreter
# computes them in int64: its uint32 has no arithmetic). A shift is one SHF; a bitcast
# reinterprets a register (free); erfinv has no MUFU instruction: a log (MUFU.LG2) and a
# polynomial of at least two FMAs (4 flops) as CUDA's erfinvf computes it.
_ROWS += [
    ScalarOp("shift_right_logical", 2),
    ScalarOp("shift_left", 2),
    ScalarOp("bitcast", 1, alu=0),
    ScalarOp("erfinv", 1, alu=4, sfu=1),
]


# ``threefry(k0, k1, x0, x1, word=w)``: word w of the Threefry-2x32 hash of the counter (x0, x1)
# under the key (k0, k1). The hash is 20 rounds of (add, rotate: one SHF, xor) = 60 integer ops
# and 6 key injections of 2 adds (the key-only sums folded) = 12: 72 per counter, charged
# half to each output word (a program using both words pays 72).
_ROWS.append(ScalarOp("threefry", 4, alu=36))

# A random value costs at least one instruction to produce (counter-based generators such as
# Philox take tens per 4 values, but no fixed minimum is provable for every generator); its
# argument is the element's flat position, so it counts once per value drawn.
_ROWS.append(ScalarOp("random", 1, alu=1))

SCALAR_OPS: dict[str, ScalarOp] = {op.name: op for op in _ROWS}

# tanh-approximate GELU: 0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³))) — one MUFU.TANH.
SCALAR_OPS["gelu_tanh"] = ScalarOp("gelu_tanh", 1, alu=5, sfu=1)

# What an operator costs when some operand is complex, in real operations (CUDA-core flops,
# an FMA counting 2; MUFU ops): ``op -> {(a complex, b complex): (alu, sfu)}``. The textbook
# formulas, each the fewest real operations of the known algorithms:
# (a+bi)(c+di) = (ac - bd) + (ad + bc)i: 4 multiplies and 2 adds (6; Gauss's 3-multiply form
# needs 5 adds: 8); a real times a complex: 2 multiplies; a sum: 2 adds (1 with a real
# operand); (a+bi)/(c+di) = ((ac + bd) + (bc - ad)i) / (c^2 + d^2): 4 multiplies and 2 adds
# for the numerator, 2 multiplies and 1 add for c^2 + d^2, 2 divides (11); by a real: 2
# divides; a real by a complex: c^2 + d^2 (3), a divide, 2 multiplies and a negation (6).
# |a+bi| = sqrt(a^2 + b^2): a multiply and an FMA (3) and one MUFU.SQRT; exp(a+bi) = e^a
# (cos b + i sin b): 3 MUFU ops and 2 multiplies; angle is atan2 (5, see above).
# Operators without a row count their real cost (a lower bound: one part's work).
COMPLEX_COST: dict[str, dict[tuple[bool, ...], tuple[int, int]]] = {
    "add": {(True, True): (2, 0), (True, False): (1, 0), (False, True): (1, 0)},
    "sub": {(True, True): (2, 0), (True, False): (1, 0), (False, True): (1, 0)},
    "mul": {(True, True): (6, 0), (True, False): (2, 0), (False, True): (2, 0)},
    "div": {(True, True): (11, 0), (True, False): (2, 0), (False, True): (6, 0)},
    "square": {(True,): (3, 0)},  # (a^2 - b^2) + 2ab i: a multiply and an FMA, a multiply
    "reciprocal": {(True,): (6, 0)},
    "abs": {(True,): (3, 1)},
    "exp": {(True,): (2, 3)},
}

# Identity values of the reduction operators (the value of a reduction over no terms).
REDUCTION_IDENTITY: dict[str, float] = {
    "sum": 0.0,
    "prod": 1.0,
    "max": -math.inf,
    "min": math.inf,
    "logsumexp": -math.inf,
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


def scalar_op(name: str) -> ScalarOp:
    try:
        return SCALAR_OPS[name]
    except KeyError:
        raise ValueError(
            f"scalar operator {name!r} is not in solar.ir.ops.SCALAR_OPS; add a row there"
        ) from None
