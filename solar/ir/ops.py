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

    if dtype == "uint32":  # computed in int64 (torch's uint32 has no arithmetic), wrapped
        return x.to(torch.int64) & 0xFFFFFFFF

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
    # a shift is one SHF (torch's semantics: arithmetic right shift of signed integers, a
    # shift by the width or more fills with the sign (right) or zeros (left))
    ScalarOp("bitwise_right_shift", 2, torch.bitwise_right_shift, infix=">>"),
    ScalarOp("bitwise_left_shift", 2, torch.bitwise_left_shift, infix="<<"),
    # logaddexp(a, b) = max(a, b) + log1p(exp(-|a - b|)): a max, a subtract, an exp (MUFU;
    # the sign and |.| are operand modifiers), log1p (an add and a MUFU.LG2) and an add: 4
    # flops and 2 MUFU ops; logaddexp2 the same with exp2 and log2.
    ScalarOp("logaddexp", 2, torch.logaddexp, alu=4, sfu=2),
    ScalarOp("logaddexp2", 2, torch.logaddexp2, alu=4, sfu=2),
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

# Complex numbers (issue 24). real/imag/complex/conj select or assemble the two parts of a
# complex value (register moves and a sign flip: free); polar(r, theta) = r cos theta +
# i r sin theta (two MUFU ops and two multiplies). The arithmetic operators above take complex
# operands too; what they cost then (in real operations) is :data:`COMPLEX_COST`.
_ROWS += [
    ScalarOp("real", 1, lambda x: torch.real(x) if x.is_complex() else x, alu=0),
    ScalarOp("imag", 1, lambda x: torch.imag(x) if x.is_complex() else torch.zeros_like(x), alu=0),
    ScalarOp("complex", 2, lambda re, im: torch.complex(*torch.broadcast_tensors(re, im)), alu=0),
    ScalarOp("conj", 1, lambda x: torch.conj_physical(x) if x.is_complex() else x, alu=0),
    ScalarOp("angle", 1, torch.angle, alu=5),
    ScalarOp("polar", 2, lambda r, t: torch.polar(*torch.broadcast_tensors(r, t)), alu=2, sfu=2),
]

# Bits (issue 24: JAX's PRNG). Integers are computed in int64 by the executor (uint32 has no
# torch arithmetic), so the 32-bit operators mask to 32 bits. A shift is one SHF; a bitcast
# reinterprets a register (free); erfinv has no MUFU instruction: a log (MUFU.LG2) and a
# polynomial of at least two FMAs (4 flops) as CUDA's erfinvf computes it.
_M32 = 0xFFFFFFFF


def _shift_right_logical(a: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    s = torch.as_tensor(s, device=a.device)
    out = torch.bitwise_right_shift(a.to(torch.int64) & _M32, torch.clamp(s, 0, 32))
    return torch.where(s >= 32, 0, out)


def _shift_left(a: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    s = torch.as_tensor(s, device=a.device)
    out = torch.bitwise_left_shift(a.to(torch.int64), torch.clamp(s, 0, 32)) & _M32
    return torch.where(s >= 32, 0, out)


def _bitcast(x: torch.Tensor, dtype: str) -> torch.Tensor:
    """The 32 bits of ``x`` (an integer computed in int64, or a float32) as ``dtype``."""
    if dtype in ("float32",):
        bits = x.to(torch.int64) & _M32
        return torch.where(bits >= 2**31, bits - 2**32, bits).to(torch.int32).view(torch.float32)
    if dtype in ("uint32", "int32"):
        bits = x.to(torch.float32).contiguous().view(torch.int32).to(torch.int64)
        return bits & _M32 if dtype == "uint32" else bits
    raise ValueError(f"bitcast to {dtype} is not supported; 32-bit float/int only")


_ROWS += [
    ScalarOp("shift_right_logical", 2, _shift_right_logical),
    ScalarOp("shift_left", 2, _shift_left),
    ScalarOp("bitcast", 1, _bitcast, alu=0),
    ScalarOp("erfinv", 1, torch.erfinv, alu=4, sfu=1),
]


_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(k0, k1, x0, x1) -> tuple[torch.Tensor, torch.Tensor]:
    """Threefry-2x32 with 20 rounds (Salmon et al., SC 2011), as JAX's PRNG computes it, on
    integers held in int64: the two 32-bit output words."""
    t = [torch.as_tensor(v).to(torch.int64) & _M32 for v in (k0, k1, x0, x1)]
    k0, k1, x0, x1 = torch.broadcast_tensors(*t)
    ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    x = [(x0 + ks[0]) & _M32, (x1 + ks[1]) & _M32]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x[0] = (x[0] + x[1]) & _M32
            x[1] = ((x[1] << r) | (x[1] >> (32 - r))) & _M32
            x[1] = x[1] ^ x[0]
        x[0] = (x[0] + ks[(i + 1) % 3]) & _M32
        x[1] = (x[1] + ks[(i + 2) % 3] + i + 1) & _M32
    return x[0], x[1]


def _threefry(k0, k1, x0, x1, word: int = 0) -> torch.Tensor:
    return threefry2x32(k0, k1, x0, x1)[int(word)]


# ``threefry(k0, k1, x0, x1, word=w)``: word w of the Threefry-2x32 hash of the counter (x0, x1)
# under the key (k0, k1). The hash is 20 rounds of (add, rotate: one SHF, xor) = 60 integer ops
# and 6 key injections of 2 adds (the key-only sums folded) = 12: 72 per counter, charged
# half to each output word (a program using both words pays 72).
_ROWS.append(ScalarOp("threefry", 4, _threefry, alu=36))

# A random value costs at least one instruction to produce (counter-based generators such as
# Philox take tens per 4 values, but no fixed minimum is provable for every generator); its
# argument is the element's flat position, so it counts once per value drawn.
_ROWS.append(ScalarOp("random", 1, _random, alu=1))

SCALAR_OPS: dict[str, ScalarOp] = {op.name: op for op in _ROWS}

# tanh-approximate GELU: 0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³))) — one MUFU.TANH.
SCALAR_OPS["gelu_tanh"] = ScalarOp(
    "gelu_tanh", 1, lambda x: F.gelu(x, approximate="tanh"), alu=5, sfu=1
)

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
