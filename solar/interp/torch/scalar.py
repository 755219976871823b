"""The torch function of every row of the scalar operator table
(:data:`solar.ir.ops.SCALAR_OPS`), of every reduction operator and of every inclusive scan:
what the torch interpreter computes. Each function takes broadcastable torch tensors (and the
call's attributes as keywords)."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from solar.interp.torch.dtypes import torch_dtype
from solar.ir.ops import RANDOM_DISTRIBUTIONS, SCALAR_OPS, scalar_op

_M32 = 0xFFFFFFFF

#: the in-place torch generator method of each distribution of ``random``
_GENERATORS = {
    "uniform": "uniform_",
    "normal": "normal_",
    "randint": "random_",
    "bernoulli": "bernoulli_",
    "exponential": "exponential_",
}


def _gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return F.gelu(x, approximate=approximate)


def _cast(x: torch.Tensor, dtype: str) -> torch.Tensor:
    if dtype == "uint32":  # computed in int64 (torch's uint32 has no arithmetic), wrapped
        return x.to(torch.int64) & _M32
    return x.to(torch_dtype(dtype))


def _where(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where(c.to(torch.bool), a, b)


def _random(position: torch.Tensor, dist: str, dtype: str, a=None, b=None) -> torch.Tensor:
    """Fresh random values, one per element of ``position`` (the flat element index of the
    values drawn), from torch's default generator on its device. Drawn with the same in-place
    generator call that ``torch.rand``/``randn``/``randint``/``bernoulli_``/``normal_`` make, over
    the whole output at once: after the same ``torch.manual_seed`` and the same sequence of
    draws, the values equal the source program's (re-seeded validation)."""
    names = RANDOM_DISTRIBUTIONS[dist]
    out = torch.empty(tuple(position.shape), dtype=torch_dtype(dtype), device=position.device)
    args = [v for v, n in zip((a, b), ("a", "b")) if n in names]
    return getattr(out, _GENERATORS[dist])(*args)


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


#: operator name -> its torch function (one per row of solar.ir.ops.SCALAR_OPS)
TORCH_OPS: dict[str, Callable[..., torch.Tensor]] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "pow": torch.pow,
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
    "logical_not": torch.logical_not,
    "logical_xor": torch.logical_xor,
    "where": _where,
    "neg": torch.neg,
    "abs": torch.abs,
    "cast": _cast,
    "square": torch.square,
    "reciprocal": torch.reciprocal,
    "relu": torch.relu,
    "exp": torch.exp,
    "exp2": torch.exp2,
    "expm1": torch.expm1,
    "log": torch.log,
    "log2": torch.log2,
    "log1p": torch.log1p,
    "log10": torch.log10,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "erf": torch.erf,
    "erfinv": torch.erfinv,
    "gelu": _gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "sign": torch.sign,
    "trunc": torch.trunc,
    "fmod": torch.fmod,
    "remainder": torch.remainder,
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
    "bitwise_right_shift": torch.bitwise_right_shift,
    "bitwise_left_shift": torch.bitwise_left_shift,
    "logaddexp": torch.logaddexp,
    "logaddexp2": torch.logaddexp2,
    "bitwise_not": torch.bitwise_not,
    "isnan": torch.isnan,
    "isinf": torch.isinf,
    "isfinite": torch.isfinite,
    "atan": torch.atan,
    "atan2": torch.atan2,
    "asin": torch.asin,
    "acos": torch.acos,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "asinh": torch.asinh,
    "acosh": torch.acosh,
    "atanh": torch.atanh,
    "real": lambda x: torch.real(x) if x.is_complex() else x,
    "imag": lambda x: torch.imag(x) if x.is_complex() else torch.zeros_like(x),
    "complex": lambda re, im: torch.complex(*torch.broadcast_tensors(re, im)),
    "conj": lambda x: torch.conj_physical(x) if x.is_complex() else x,
    "angle": torch.angle,
    "polar": lambda r, t: torch.polar(*torch.broadcast_tensors(r, t)),
    "shift_right_logical": _shift_right_logical,
    "shift_left": _shift_left,
    "bitcast": _bitcast,
    "threefry": _threefry,
    "random": _random,
}


def torch_op(name: str) -> Callable[..., torch.Tensor]:
    """The torch function of scalar operator ``name`` (checked against the IR's table)."""
    scalar_op(name)
    try:
        return TORCH_OPS[name]
    except KeyError:
        raise ValueError(
            f"scalar operator {name!r} has no torch function; add it to "
            "solar.interp.torch.scalar.TORCH_OPS"
        ) from None


def _prod(t: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    for d in sorted(dims, reverse=True):
        t = t.prod(dim=d)
    return t


#: reduction operator -> fn(tensor, dims) reducing over ``dims``
REDUCE_FNS: dict[str, Callable[..., torch.Tensor]] = {
    "sum": lambda t, dims: t.sum(dim=dims),
    "prod": lambda t, dims: _prod(t, dims),
    "max": lambda t, dims: t.amax(dim=dims),
    "min": lambda t, dims: t.amin(dim=dims),
    "logsumexp": lambda t, dims: torch.logsumexp(t, dim=dims),
}

#: inclusive scans (prefix reductions) along dim ``d``, per reduction operator
SCANS: dict[str, Callable[[torch.Tensor, int], torch.Tensor]] = {
    "sum": lambda t, d: torch.cumsum(t, dim=d),
    "prod": lambda t, d: torch.cumprod(t, dim=d),
    "max": lambda t, d: torch.cummax(t, dim=d).values,
    "min": lambda t, d: torch.cummin(t, dim=d).values,
    "logsumexp": lambda t, d: torch.logcumsumexp(t, dim=d),
}

#: binary combine of each reduction operator (``None``: an accumulating plain write)
COMBINE: dict[str | None, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    None: torch.add,
    "sum": torch.add,
    "prod": torch.mul,
    "max": torch.maximum,
    "min": torch.minimum,
    "logsumexp": torch.logaddexp,
}

_missing = set(SCALAR_OPS) ^ set(TORCH_OPS)
if _missing:
    raise ImportError(f"scalar operators without a torch function (or vice versa): {_missing}")
