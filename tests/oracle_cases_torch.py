"""Oracle cases for every registered PyTorch lowering: one :class:`Case` per registry key.

A case draws its sizes and parameters with hypothesis (``build(draw) -> (fn, inputs)``) and
calls the aten operator it covers directly (``torch.ops.aten.add.Tensor(x, y)``), so the
trace records exactly that operator; inputs reach it through views (transposes, strided
slices, zero-stride expands) and broadcasts where the operator takes them. Values matter only
for index tensors (gathers, scatters), which are drawn in range.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from hypothesis import strategies as st

aten = torch.ops.aten
solar_ops = torch.ops.solar

Draw = Callable[[st.SearchStrategy], object]
Build = Callable[[Draw], tuple[Callable, tuple]]


@dataclass(frozen=True)
class Case:
    op: str  # the registry key, as str(): "aten.add.Tensor"
    build: Build
    examples: int = 5  # hypothesis examples per run
    pre_dispatch: bool = False  # trace at the pre-dispatch level (ops a CPU build decomposes)
    error: type[Exception] | None = None  # the lowering refuses the operator with this error
    observe: bool = False  # trace data-dependent sizes as the inputs produce them


CASES: list[Case] = []


def case(op: object, examples: int = 5, **kw: object) -> Callable[[Build], Build]:
    def register(build: Build) -> Build:
        CASES.append(Case(str(op), build, examples, **kw))  # type: ignore[arg-type]
        return build

    return register


# ---------------------------------------------------------------------------- drawing


def shape(draw: Draw, lo: int = 1, hi: int = 3, side: int = 4) -> tuple[int, ...]:
    n = draw(st.integers(lo, hi))
    return tuple(draw(st.integers(1, side)) for _ in range(n))


def rand(shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if not dtype.is_floating_point:
        return torch.randint(-4, 5, shape, dtype=dtype)
    return torch.rand(shape, dtype=torch.float32).add(0.1).to(dtype)


def viewed(draw: Draw, shp: tuple[int, ...]) -> tuple[tuple[int, ...], Callable]:
    """A storage shape and a view of it with shape ``shp``: contiguous, transposed, a strided
    slice, or a zero-stride expand (broadcast) of a smaller tensor."""
    kind = draw(st.sampled_from(["plain", "transpose", "step", "expand"]))
    if kind == "transpose" and len(shp) >= 2:
        store = (*shp[:-2], shp[-1], shp[-2])
        return store, lambda x: x.transpose(-1, -2)
    if kind == "step":
        store = (*shp[:-1], 2 * shp[-1])
        return store, lambda x: x[..., ::2]
    if kind == "expand" and len(shp) >= 1:
        store = (1, *shp[1:])
        return store, lambda x: x.expand(shp)
    return shp, lambda x: x


def broadcast_partner(draw: Draw, shp: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts against ``shp`` (dims set to 1, leading dims dropped)."""
    drop = draw(st.integers(0, len(shp)))
    out = list(shp[drop:])
    for i in range(len(out)):
        if draw(st.booleans()):
            out[i] = 1
    return tuple(out)


def unary(op: object, dtype=torch.float32, extra=(), kwargs=None, **kw):
    def build(draw: Draw):
        shp = shape(draw)
        store, view = viewed(draw, shp)
        args = tuple(draw(a) if isinstance(a, st.SearchStrategy) else a for a in extra)
        kws = {k: draw(v) for k, v in (kwargs or {}).items()}
        return (lambda x: op(view(x), *args, **kws)), (rand(store, dtype),)

    case(op, **kw)(build)


def binary(op: object, dtype=torch.float32, other_dtype=None, scalar=None, swap=False):
    """``op(x, y)``: y a broadcasting tensor, or the Python number ``scalar`` (first if
    ``swap``)."""

    def build(draw: Draw):
        shp = shape(draw)
        store, view = viewed(draw, shp)
        x = rand(store, dtype)
        if scalar is not None:
            s = draw(scalar) if isinstance(scalar, st.SearchStrategy) else scalar
            if swap:
                return (lambda x: op(s, view(x))), (x,)
            return (lambda x: op(view(x), s)), (x,)
        y = rand(broadcast_partner(draw, shp), other_dtype or dtype)
        if draw(st.booleans()):
            return (lambda x, y: op(y, view(x))), (x, y)
        return (lambda x, y: op(view(x), y)), (x, y)

    case(op)(build)


# ------------------------------------------------------------------------- elementwise
for _n in [
    "abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "exp", "exp2", "expm1",
    "floor", "log", "log1p", "log2", "neg", "reciprocal", "relu", "round", "rsqrt",
    "sigmoid", "sign", "silu", "sin", "sinh", "sqrt", "tan", "tanh", "trunc", "mish",
    "isinf", "isnan", "isneginf", "isposinf", "hardsigmoid", "hardswish",
]:  # fmt: skip
    unary(getattr(aten, _n).default)
unary(aten.isfinite.default, pre_dispatch=True)  # CompositeImplicit: decomposed below that
unary(aten.logical_not.default, dtype=torch.bool)
unary(aten.bitwise_not.default, dtype=torch.int32)
unary(aten.gelu.default, kwargs={"approximate": st.sampled_from(["none", "tanh"])})
unary(aten.elu.default, extra=(st.sampled_from([1.0, 0.5]),))
unary(aten.celu.default, extra=(st.sampled_from([1.0, 2.0]),))
unary(aten.leaky_relu.default, extra=(st.sampled_from([0.01, 0.2]),))
unary(aten.hardtanh.default, extra=(-1.0, st.sampled_from([1.0, 6.0])))
unary(aten.softplus.default, extra=(st.sampled_from([1.0, 2.0]), 20.0))
unary(aten.softshrink.default, extra=(0.5,))
unary(aten.hardshrink.default, extra=(0.5,))
unary(aten.threshold.default, extra=(0.3, st.sampled_from([0.0, -1.0])))
unary(aten.clamp.default, extra=(st.sampled_from([None, 0.2]), st.sampled_from([0.8, 1.5])))
unary(aten.clamp_min.default, extra=(0.3,))
unary(aten.clamp_max.default, extra=(0.3,))
unary(aten.pow.Tensor_Scalar, extra=(st.sampled_from([2, 3, 0.5, -1, 2.5, 0, 1, -0.5]),))

NUMBERS = st.sampled_from([2.0, 0.5, -1.5, 3])
for _op in [aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor]:
    binary(_op)
for _op in [aten.atan2.default, aten.maximum.default, aten.minimum.default]:
    binary(_op)
for _op in [aten.fmod.Tensor, aten.remainder.Tensor]:
    binary(_op)
for _n in ["eq", "ne", "lt", "le", "gt", "ge"]:
    binary(getattr(aten, _n).Tensor)
    binary(getattr(aten, _n).Scalar, scalar=NUMBERS)
for _n in ["add", "sub", "mul", "div", "fmod", "remainder", "rsub"]:
    binary(getattr(aten, _n).Scalar, scalar=NUMBERS)
binary(aten.rsub.Tensor)
binary(aten.pow.Tensor_Tensor)
binary(aten.pow.Scalar, scalar=st.sampled_from([2.0, 0.5, 3.0]), swap=True)
binary(aten.remainder.Scalar_Tensor, scalar=NUMBERS, swap=True)
binary(aten.floor_divide.default)
binary(aten.floor_divide.Scalar, scalar=NUMBERS)
for _n in ["logical_and", "logical_or"]:
    binary(getattr(aten, _n).default, dtype=torch.bool)
for _n in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
    binary(getattr(aten, _n).Tensor, dtype=torch.int32)
    binary(getattr(aten, _n).Scalar, dtype=torch.int32, scalar=st.sampled_from([3, 6]))
    binary(getattr(aten, _n).Scalar_Tensor, dtype=torch.int32, scalar=3, swap=True)
binary(aten.xlogy.Tensor)
binary(aten.xlogy.Scalar_Other, scalar=NUMBERS)
binary(aten.xlogy.Scalar_Self, scalar=NUMBERS, swap=True)
binary(aten.clamp_min.Tensor)
binary(aten.clamp_max.Tensor)
binary(aten._prelu_kernel.default)


@case(aten.div.Tensor_mode)
def _div_mode(draw):
    shp = shape(draw)
    mode = draw(st.sampled_from(["floor", "trunc", None]))
    y = rand(broadcast_partner(draw, shp))
    return (lambda x, y: aten.div.Tensor_mode(x, y, rounding_mode=mode)), (rand(shp), y)


@case(aten.div.Scalar_mode)
def _div_scalar_mode(draw):
    mode = draw(st.sampled_from(["floor", "trunc", None]))
    return (lambda x: aten.div.Scalar_mode(x, 2.5, rounding_mode=mode)), (rand(shape(draw)),)


@case(aten.masked_fill.Scalar)
def _masked_fill(draw):
    shp = shape(draw)
    m = rand(broadcast_partner(draw, shp), torch.bool)
    return (lambda x, m: aten.masked_fill.Scalar(x, m, -2.0)), (rand(shp), m)


@case(aten.masked_fill.Tensor)
def _masked_fill_t(draw):
    shp = shape(draw)
    m = rand(broadcast_partner(draw, shp), torch.bool)
    return (lambda x, m, v: aten.masked_fill.Tensor(x, m, v)), (rand(shp), m, rand(()))


@case(aten.where.self)
def _where(draw):
    shp = shape(draw)
    c = rand(broadcast_partner(draw, shp), torch.bool)
    y = rand(broadcast_partner(draw, shp))
    return (lambda c, x, y: aten.where.self(c, x, y)), (c, rand(shp), y)


@case(aten.clamp.Tensor)
def _clamp_t(draw):
    shp = shape(draw)
    lo, hi = rand(broadcast_partner(draw, shp)), rand(broadcast_partner(draw, shp))
    return (lambda x, lo, hi: aten.clamp.Tensor(x, lo, hi)), (rand(shp), lo, hi)


for _op in (aten.addcmul.default, aten.addcdiv.default):

    def _addc(draw, op=_op):
        shp = shape(draw)
        a, b = rand(broadcast_partner(draw, shp)), rand(broadcast_partner(draw, shp))
        v = draw(st.sampled_from([1.0, 0.5]))
        return (lambda x, a, b: op(x, a, b, value=v)), (rand(shp), a, b)

    case(_op)(_addc)


@case(aten.tril.default)
def _tril(draw):
    shp = (*shape(draw, 0, 1), draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    k = draw(st.integers(-2, 2))
    return (lambda x: aten.tril.default(x, k)), (rand(shp),)


@case(aten.triu.default)
def _triu(draw):
    shp = (*shape(draw, 0, 1), draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    k = draw(st.integers(-2, 2))
    return (lambda x: aten.triu.default(x, k)), (rand(shp),)


# ---------------------------------------------------------------------- activations


@case(aten.glu.default)
def _glu(draw):
    shp = list(shape(draw))
    d = draw(st.integers(0, len(shp) - 1))
    shp[d] *= 2
    return (lambda x: aten.glu.default(x, d)), (rand(tuple(shp)),)


@case(aten.log_sigmoid_forward.default)
def _log_sigmoid(draw):
    return (lambda x: aten.log_sigmoid_forward.default(x)), (rand(shape(draw)),)


@case(aten.rrelu_with_noise.default)
def _rrelu(draw):
    shp = shape(draw)
    return (lambda x, n: aten.rrelu_with_noise.default(x, n, 0.1, 0.3, False)), (
        rand(shp),
        rand(shp),
    )


@case(aten.rrelu_with_noise_.default)
def _rrelu_(draw):
    shp = shape(draw)
    return (lambda x, n: aten.rrelu_with_noise_.default(x.clone(), n, 0.1, 0.3, False)), (
        rand(shp),
        rand(shp),
    )


# ------------------------------------------------------------------------ reductions


def dims_subset(draw: Draw, n: int) -> list[int]:
    return sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n)))


for _op in (aten.sum.dim_IntList, aten.mean.dim, aten.amax.default, aten.amin.default):

    def _red(draw, op=_op):
        shp = shape(draw)
        store, view = viewed(draw, shp)
        dims, keep = dims_subset(draw, len(shp)), draw(st.booleans())
        return (lambda x: op(view(x), dims, keep)), (rand(store),)

    case(_op)(_red)

for _op in (aten.sum.default, aten.mean.default, aten.max.default, aten.min.default):

    def _red_all(draw, op=_op):
        shp = shape(draw)
        store, view = viewed(draw, shp)
        return (lambda x: op(view(x))), (rand(store),)

    case(_op)(_red_all)


@case(aten.prod.default)
def _prod_all(draw):
    return (lambda x: aten.prod.default(x)), (rand(shape(draw)),)


@case(aten.prod.dim_int)
def _prod(draw):
    shp = shape(draw)
    d, keep = draw(st.integers(0, len(shp) - 1)), draw(st.booleans())
    return (lambda x: aten.prod.dim_int(x, d, keep)), (rand(shp),)


for _op in (aten.max.dim, aten.min.dim, aten.argmax.default, aten.argmin.default):

    def _arg(draw, op=_op):
        shp = shape(draw)
        d, keep = draw(st.integers(0, len(shp) - 1)), draw(st.booleans())
        return (lambda x: op(x, d, keep)), (rand(shp),)

    case(_op)(_arg)

for _op in (
    aten.var.correction,
    aten.std.correction,
    aten.var_mean.correction,
    aten.std_mean.correction,
):  # noqa: E501

    def _mom(draw, op=_op):
        shp = shape(draw)
        dims, keep = dims_subset(draw, len(shp)), draw(st.booleans())
        corr = draw(st.sampled_from([0, 1]))
        return (lambda x: op(x, dims, correction=corr, keepdim=keep)), (rand(shp),)

    case(_op)(_mom)


@case(aten.logsumexp.default)
def _lse(draw):
    shp = shape(draw)
    dims, keep = dims_subset(draw, len(shp)), draw(st.booleans())
    return (lambda x: aten.logsumexp.default(x, dims, keep)), (rand(shp),)


@case(aten.linalg_vector_norm.default)
def _vnorm(draw):
    shp = shape(draw)
    dims, keep = dims_subset(draw, len(shp)), draw(st.booleans())
    o = draw(st.sampled_from([2, 1, 3, math.inf, -math.inf, 0, 0.5]))
    return (lambda x: aten.linalg_vector_norm.default(x, o, dims, keep)), (rand(shp),)


@case(aten.norm.Scalar)
def _norm_all(draw):
    o = draw(st.sampled_from([2, 1, 3]))
    return (lambda x: aten.norm.Scalar(x, o)), (rand(shape(draw)),)


@case(aten.norm.ScalarOpt_dtype)
def _norm_all_dt(draw):
    o = draw(st.sampled_from([2, 1]))
    return (lambda x: aten.norm.ScalarOpt_dtype(x, o, dtype=torch.float64)), (rand(shape(draw)),)


@case(aten.norm.ScalarOpt_dim)
def _norm_dim(draw):
    shp = shape(draw)
    dims, keep = dims_subset(draw, len(shp)), draw(st.booleans())
    o = draw(st.sampled_from([2, 1, 3]))
    return (lambda x: aten.norm.ScalarOpt_dim(x, o, dims, keep)), (rand(shp),)


@case(aten.norm.ScalarOpt_dim_dtype)
def _norm_dim_dt(draw):
    shp = shape(draw)
    dims = dims_subset(draw, len(shp))
    return (lambda x: aten.norm.ScalarOpt_dim_dtype(x, 2, dims, False, dtype=torch.float64)), (
        rand(shp),
    )


# ---------------------------------------------------------------------------- scans

for _op in (aten.cumsum.default, aten.cumprod.default, aten.logcumsumexp.default):

    def _scan(draw, op=_op):
        shp = shape(draw)
        store, view = viewed(draw, shp)
        d = draw(st.integers(-len(shp), len(shp) - 1))
        return (lambda x: op(view(x), d)), (rand(store),)

    case(_op)(_scan)

for _op in (aten.cummax.default, aten.cummin.default):

    def _cumext(draw, op=_op):
        shp = shape(draw)
        d = draw(st.integers(0, len(shp) - 1))
        return (lambda x: op(x, d)), (rand(shp),)

    case(_op)(_cumext)


# ----------------------------------------------------------------------------- sorts


@case(aten.sort.default)
def _sort(draw):
    shp = shape(draw)
    d, desc = draw(st.integers(0, len(shp) - 1)), draw(st.booleans())
    return (lambda x: aten.sort.default(x, d, desc)), (rand(shp),)


@case(aten.sort.stable)
def _sort_stable(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    return (lambda x: aten.sort.stable(x, stable=True, dim=d)), (rand(shp),)


@case(aten.topk.default)
def _topk(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    k, largest = draw(st.integers(1, shp[d])), draw(st.booleans())
    return (lambda x: aten.topk.default(x, k, d, largest, True)), (rand(shp),)


@case(aten.kthvalue.default)
def _kth(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    k, keep = draw(st.integers(1, shp[d])), draw(st.booleans())
    return (lambda x: aten.kthvalue.default(x, k, d, keep)), (rand(shp),)


for _op in (aten.median.default, aten.nanmedian.default):
    case(_op)(lambda draw, op=_op: ((lambda x: op(x)), (rand(shape(draw)),)))

for _op in (aten.median.dim, aten.nanmedian.dim):

    def _med(draw, op=_op):
        shp = shape(draw)
        d, keep = draw(st.integers(0, len(shp) - 1)), draw(st.booleans())
        return (lambda x: op(x, d, keep)), (rand(shp),)

    case(_op)(_med)


# --------------------------------------------------------------------------- softmax

for _op in (aten._softmax.default, aten._log_softmax.default):

    def _sm(draw, op=_op):
        shp = shape(draw)
        store, view = viewed(draw, shp)
        d = draw(st.integers(0, len(shp) - 1))
        return (lambda x: op(view(x), d, False)), (rand(store),)

    case(_op)(_sm)


@case(aten._softmax.out)
def _softmax_in_place(draw):
    """``out=`` its own input, as nn.MultiheadAttention's weights (CUDA's _softmax_out(s, s))."""
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    return (lambda x: aten._softmax.out(x, d, False, out=x)), (rand(shp),)


@case(aten._safe_softmax.default)
def _safe_sm(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    return (lambda x: aten._safe_softmax.default(x, d)), (rand(shp),)


# ------------------------------------------------------------------------- matmuls


def mat(draw, *names: str) -> dict[str, int]:
    return {n: draw(st.integers(1, 5)) for n in names}


@case(aten.mm.default)
def _mm(draw):
    s = mat(draw, "m", "k", "n")
    store, view = viewed(draw, (s["k"], s["n"]))
    return (lambda a, b: aten.mm.default(a, view(b))), (rand((s["m"], s["k"])), rand(store))


@case(aten.bmm.default)
def _bmm(draw):
    s = mat(draw, "b", "m", "k", "n")
    store, view = viewed(draw, (s["b"], s["k"], s["n"]))
    a = rand((s["b"], s["m"], s["k"]))
    return (lambda a, b: aten.bmm.default(a, view(b))), (a, rand(store))


@case(aten.addmm.default)
def _addmm(draw):
    s = mat(draw, "m", "k", "n")
    bias = rand(broadcast_partner(draw, (s["m"], s["n"])))
    beta, alpha = draw(st.sampled_from([1, 0.5])), draw(st.sampled_from([1, 2.0]))
    return (lambda c, a, b: aten.addmm.default(c, a, b, beta=beta, alpha=alpha)), (
        bias,
        rand((s["m"], s["k"])),
        rand((s["k"], s["n"])),
    )


@case(aten.addbmm.default)
def _addbmm(draw):
    s = mat(draw, "b", "m", "k", "n")
    return (lambda c, a, b: aten.addbmm.default(c, a, b)), (
        rand((s["m"], s["n"])),
        rand((s["b"], s["m"], s["k"])),
        rand((s["b"], s["k"], s["n"])),
    )


@case(aten.baddbmm.default)
def _baddbmm(draw):
    s = mat(draw, "b", "m", "k", "n")
    beta = draw(st.sampled_from([1, 0.5, 0]))
    return (lambda c, a, b: aten.baddbmm.default(c, a, b, beta=beta)), (
        rand(broadcast_partner(draw, (s["b"], s["m"], s["n"]))),
        rand((s["b"], s["m"], s["k"])),
        rand((s["b"], s["k"], s["n"])),
    )


@case(aten.addmv.default)
def _addmv(draw):
    s = mat(draw, "m", "k")
    return (lambda c, a, v: aten.addmv.default(c, a, v)), (
        rand(broadcast_partner(draw, (s["m"],))),
        rand((s["m"], s["k"])),
        rand((s["k"],)),
    )


@case(aten.mv.default)
def _mv(draw):
    s = mat(draw, "m", "k")
    return (lambda a, v: aten.mv.default(a, v)), (rand((s["m"], s["k"])), rand((s["k"],)))


@case(aten.dot.default)
def _dot(draw):
    n = draw(st.integers(1, 6))
    return (lambda a, b: aten.dot.default(a, b)), (rand((n,)), rand((n,)))


@case(aten._int_mm.default)
def _int_mm(draw):
    m, k, n = draw(st.integers(17, 20)), 8 * draw(st.integers(1, 2)), 8 * draw(st.integers(1, 2))
    return (lambda a, b: aten._int_mm.default(a, b)), (
        rand((m, k), torch.int8),
        rand((k, n), torch.int8),
    )


@case(aten._scaled_mm.default)
def _scaled_mm(draw):
    m, k, n = 16, 16 * draw(st.integers(1, 2)), 16
    a = rand((m, k)).to(torch.float8_e4m3fn)
    b = rand((n, k)).to(torch.float8_e4m3fn).t()
    return (lambda a, b, sa, sb: aten._scaled_mm.default(a, b, sa, sb, out_dtype=torch.float32)), (
        a,
        b,
        torch.tensor(1.0),
        torch.tensor(1.0),
    )


@case(aten._trilinear.default)
def _trilinear(draw):
    b, i, j, o = (draw(st.integers(1, 4)) for _ in range(4))
    bl = torch.nn.Bilinear(i, j, o, bias=draw(st.booleans()))
    return bl, (rand((b, i)), rand((b, j)))


# ------------------------------------------------------------------ convolutions


@case(aten.convolution.default, examples=60)
def _conv(draw):
    nsp = draw(st.integers(1, 3))
    transposed = draw(st.booleans())
    groups = draw(st.sampled_from([1, 2]))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    side = {1: 7, 2: 5, 3: 3}[nsp]
    size = [draw(st.integers(1, side)) for _ in range(nsp)]
    k = [draw(st.integers(1, 3)) for _ in range(nsp)]
    stride = [draw(st.integers(1, 3)) for _ in range(nsp)]
    dil = [draw(st.integers(1, 2)) for _ in range(nsp)]
    if transposed:
        opad = [draw(st.integers(0, max(stride[i], dil[i]) - 1)) for i in range(nsp)]
        full = [(size[i] - 1) * stride[i] + dil[i] * (k[i] - 1) + opad[i] for i in range(nsp)]
        pad = [draw(st.integers(0, min(dil[i] * (k[i] - 1), full[i] // 2))) for i in range(nsp)]
        w = rand((cin, cout // groups, *k))
    else:
        pad = [draw(st.integers(0, k[i] // 2 + 1)) for i in range(nsp)]
        size = [max(s, dil[i] * (k[i] - 1) + 1 - 2 * pad[i]) for i, s in enumerate(size)]
        opad = [0] * nsp
        w = rand((cout, cin // groups, *k))
    bias = rand((cout,)) if draw(st.booleans()) else None
    x = rand((draw(st.integers(1, 2)), cin, *size))

    def fn(x, w, b=None):
        return aten.convolution.default(x, w, b, stride, pad, dil, transposed, opad, groups)

    return fn, (x, w) if bias is None else (x, w, bias)


# ------------------------------------------------------------------------- pooling


@case(aten.avg_pool2d.default, examples=10)
def _avg2(draw):
    return _avg(draw, 2, aten.avg_pool2d.default)


@case(aten.avg_pool3d.default, examples=6)
def _avg3(draw):
    return _avg(draw, 3, aten.avg_pool3d.default)


def _avg(draw, nsp, op):
    k = [draw(st.integers(1, 3)) for _ in range(nsp)]
    s = [draw(st.integers(1, 3)) for _ in range(nsp)]
    p = [draw(st.integers(0, kk // 2)) for kk in k]
    size = [draw(st.integers(kk, kk + 3)) for kk in k]
    ceil, inc = draw(st.booleans()), draw(st.booleans())
    div = draw(st.sampled_from([None, 2]))
    x = rand((draw(st.integers(1, 2)), 2, *size))
    return (lambda x: op(x, k, s, p, ceil, inc, div)), (x,)


for _op, _n in (
    (aten.max_pool2d_with_indices.default, 2),
    (aten.max_pool3d_with_indices.default, 3),
):

    def _maxp(draw, op=_op, nsp=_n):
        k = [draw(st.integers(1, 3)) for _ in range(nsp)]
        s = [draw(st.integers(1, 3)) for _ in range(nsp)]
        p = [draw(st.integers(0, kk // 2)) for kk in k]
        d = [draw(st.integers(1, 2)) for _ in range(nsp)]
        size = [draw(st.integers(dd * (kk - 1) + 1, dd * (kk - 1) + 4)) for kk, dd in zip(k, d)]
        ceil = draw(st.booleans())
        x = rand((1, 2, *size))
        return (lambda x: op(x, k, s, p, d, ceil)), (x,)

    case(_op, examples=8)(_maxp)

for _op, _n in (
    (aten._adaptive_avg_pool2d.default, 2),
    (aten._adaptive_avg_pool3d.default, 3),
    (aten.adaptive_max_pool2d.default, 2),
    (aten.adaptive_max_pool3d.default, 3),
):

    def _adapt(draw, op=_op, nsp=_n):
        size = [draw(st.integers(1, 6)) for _ in range(nsp)]
        out = [draw(st.integers(1, s + 1)) for s in size]
        return (lambda x: op(x, out)), (rand((1, 2, *size)),)

    case(_op, examples=6)(_adapt)


# -------------------------------------------------------------------- normalization


@case(aten.native_layer_norm.default)
def _ln(draw):
    shp = shape(draw, 1, 3)
    k = draw(st.integers(1, len(shp)))
    ns = shp[-k:]
    w, b = (rand(ns) if draw(st.booleans()) else None for _ in range(2))
    return (lambda x, w, b: aten.native_layer_norm.default(x, ns, w, b, 1e-5)), (rand(shp), w, b)


@case(aten.native_group_norm.default)
def _gn(draw):
    n, g = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    c, hw = g * draw(st.integers(1, 2)), draw(st.integers(1, 4))
    w = rand((c,)) if draw(st.booleans()) else None
    b = rand((c,)) if draw(st.booleans()) else None
    return (lambda x, w, b: aten.native_group_norm.default(x, w, b, n, c, hw, g, 1e-5)), (
        rand((n, c, hw)),
        w,
        b,
    )


def _bn_inputs(draw):  # at least two values per channel (the unbiased variance)
    shp = (draw(st.integers(2, 3)), draw(st.integers(1, 3)), *shape(draw, 0, 2, 3))
    c = shp[1]
    return shp, rand((c,)), rand((c,)), rand((c,)), rand((c,))


@case(aten.native_batch_norm.default)
def _bn(draw):
    shp, w, b, rm, rv = _bn_inputs(draw)
    train = draw(st.booleans())
    return (lambda x, w, b, rm, rv: aten.native_batch_norm.default(x, w, b, rm, rv, train, 0.1, 1e-5)), (  # noqa: E501
        rand(shp), w, b, rm, rv,
    )  # fmt: skip


@case(aten._native_batch_norm_legit.default)
def _bn_legit(draw):
    shp, w, b, rm, rv = _bn_inputs(draw)
    train = draw(st.booleans())
    return (lambda x, w, b, rm, rv: aten._native_batch_norm_legit.default(x, w, b, rm, rv, train, 0.1, 1e-5)), (  # noqa: E501
        rand(shp), w, b, rm, rv,
    )  # fmt: skip


@case(aten._native_batch_norm_legit.no_stats)
def _bn_nostats(draw):
    shp, w, b, _, _ = _bn_inputs(draw)
    return (lambda x, w, b: aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5)), (
        rand(shp),
        w,
        b,
    )


@case(aten._native_batch_norm_legit_functional.default)
def _bn_func(draw):
    shp, w, b, rm, rv = _bn_inputs(draw)
    return (lambda x, w, b, rm, rv: aten._native_batch_norm_legit_functional.default(x, w, b, rm, rv, True, 0.1, 1e-5)), (  # noqa: E501
        rand(shp), w, b, rm, rv,
    )  # fmt: skip


@case(aten._native_batch_norm_legit_no_training.default)
def _bn_eval(draw):
    shp, w, b, rm, rv = _bn_inputs(draw)
    return (lambda x, w, b, rm, rv: aten._native_batch_norm_legit_no_training.default(x, w, b, rm, rv, 0.1, 1e-5)), (  # noqa: E501
        rand(shp), w, b, rm, rv,
    )  # fmt: skip


for _op in (aten.cudnn_batch_norm.default, aten.miopen_batch_norm.default):

    def _bn_lib(draw, op=_op):
        shp, w, b, rm, rv = _bn_inputs(draw)
        train = draw(st.booleans())
        return (lambda x, w, b, rm, rv: op(x, w, b, rm, rv, train, 0.1, 1e-5)), (
            rand(shp),
            w,
            b,
            rm,
            rv,
        )  # noqa: E501

    case(_op)(_bn_lib)


@case(aten._fused_rms_norm.default, pre_dispatch=True)
def _frms(draw):
    shp = shape(draw)
    k = draw(st.integers(1, len(shp)))
    ns = list(shp[-k:])
    if draw(st.booleans()):
        return (lambda x: aten._fused_rms_norm.default(x, ns, None, 1e-6)), (rand(shp),)
    return (lambda x, w: aten._fused_rms_norm.default(x, ns, w, None)), (rand(shp), rand(tuple(ns)))


@case(solar_ops.rms_norm.default)
def _rms(draw):
    shp = shape(draw)
    ns = shp[-1:]
    w = rand(ns) if draw(st.booleans()) else None
    return (lambda x, w: F.rms_norm(x, ns, w, 1e-6)), (rand(shp), w)


# ---------------------------------------------------------------------------- losses

for _op in (aten.mse_loss.default, aten.soft_margin_loss.default):

    def _loss(draw, op=_op):
        shp = shape(draw)
        red = draw(st.integers(0, 2))
        return (lambda x, y: op(x, y, red)), (rand(shp), rand(shp))

    case(_op)(_loss)

for _op in (aten.huber_loss.default, aten.smooth_l1_loss.default):

    def _loss_d(draw, op=_op):
        shp = shape(draw)
        red, d = draw(st.integers(0, 2)), draw(st.sampled_from([1.0, 0.5]))
        return (lambda x, y: op(x, y, red, d)), (rand(shp), rand(shp))

    case(_op)(_loss_d)


@case(aten.binary_cross_entropy.default)
def _bce(draw):
    shp = shape(draw)
    w = rand(shp) if draw(st.booleans()) else None
    red = draw(st.integers(0, 2))
    return (lambda x, y, w: aten.binary_cross_entropy.default(x, y, w, red)), (
        torch.rand(shp) * 0.8 + 0.1,
        torch.rand(shp),
        w,
    )


@case(aten.binary_cross_entropy_with_logits.default)
def _bcel(draw):
    shp = shape(draw)
    w = rand(broadcast_partner(draw, shp)) if draw(st.booleans()) else None
    pw = rand(shp[-1:]) if draw(st.booleans()) else None
    red = draw(st.integers(0, 2))
    return (lambda x, y, w, pw: aten.binary_cross_entropy_with_logits.default(x, y, w, pw, red)), (
        rand(shp),
        torch.rand(shp),
        w,
        pw,
    )


@case(aten.multi_margin_loss.default)
def _mml(draw):
    n, c = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    p, red = draw(st.sampled_from([1, 2])), draw(st.integers(0, 2))
    w = rand((c,)) if draw(st.booleans()) else None
    t = torch.randint(0, c, (n,))
    return (lambda x, t, w: aten.multi_margin_loss.default(x, t, p, 1.0, w, red)), (
        rand((n, c)),
        t,
        w,
    )


@case(aten.nll_loss_forward.default)
def _nll(draw):
    n, c = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    red = draw(st.integers(0, 2))
    ignore = draw(st.sampled_from([-100, 0]))
    w = rand((c,)) if draw(st.booleans()) else None
    t = torch.randint(0, c, (n,))
    return (lambda x, t, w: aten.nll_loss_forward.default(x, t, w, red, ignore)), (
        rand((n, c)),
        t,
        w,
    )


@case(aten.nll_loss2d_forward.default)
def _nll2d(draw):
    n, c, h, w_ = (draw(st.integers(1, 3)) for _ in range(4))
    red = draw(st.integers(0, 2))
    w = rand((c,)) if draw(st.booleans()) else None
    t = torch.randint(0, c, (n, h, w_))
    return (lambda x, t, w: aten.nll_loss2d_forward.default(x, t, w, red, -100)), (
        rand((n, c, h, w_)),
        t,
        w,
    )


# ------------------------------------------------------------------------- indexing


def idx(n: int, shp) -> torch.Tensor:
    return torch.randint(0, n, tuple(shp))


@case(aten.embedding.default)
def _emb(draw):
    v, d = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    ids = idx(v, shape(draw, 1, 2))
    return (lambda w, i: aten.embedding.default(w, i)), (rand((v, d)), ids)


for _op in (aten._embedding_bag.default, aten._embedding_bag_forward_only.default):

    def _bag(draw, op=_op):  # regular bags: offsets arange(0, bags * n, n), as for 2-D ids
        v, d = draw(st.integers(1, 5)), draw(st.integers(1, 3))
        bags, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        mode = draw(st.integers(0, 2))
        psw = rand((bags * n,)) if mode == 0 and draw(st.booleans()) else None

        def fn(w, i, p):
            return op(w, i, torch.arange(0, bags * n, n), False, mode, False, p)

        return fn, (rand((v, d)), idx(v, (bags * n,)), psw)

    case(_op)(_bag)


@case(aten.gather.default)
def _gather(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    ishp = tuple(
        draw(st.integers(1, s)) if i != d else draw(st.integers(1, 4)) for i, s in enumerate(shp)
    )  # noqa: E501
    return (lambda x, i: aten.gather.default(x, d, i)), (rand(shp), idx(shp[d], ishp))


@case(aten.index_select.default)
def _isel(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    return (lambda x, i: aten.index_select.default(x, d, i)), (
        rand(shp),
        idx(shp[d], (draw(st.integers(1, 4)),)),
    )


@case(aten.index.Tensor)
def _index(draw):
    shp = shape(draw, 2, 3)
    which = draw(st.sampled_from(["first", "second", "both"]))
    ishape = shape(draw, 1, 2)
    if which == "first":
        return (lambda x, i: aten.index.Tensor(x, [i])), (rand(shp), idx(shp[0], ishape))
    if which == "second":
        return (lambda x, i: aten.index.Tensor(x, [None, i])), (rand(shp), idx(shp[1], ishape))
    return (lambda x, i, j: aten.index.Tensor(x, [i, j])), (
        rand(shp),
        idx(shp[0], ishape),
        idx(shp[1], ishape),
    )


@case(aten.take.default)
def _take(draw):
    shp = shape(draw)
    return (lambda x, i: aten.take.default(x, i)), (
        rand(shp),
        idx(math.prod(shp), shape(draw, 1, 2)),
    )  # noqa: E501


for _op in (aten.index_add.default, aten.index_copy.default):

    def _iadd(draw, op=_op):
        shp = shape(draw)
        d = draw(st.integers(0, len(shp) - 1))
        n = draw(st.integers(1, 4))
        i = (
            idx(shp[d], (n,))
            if op is aten.index_add.default
            else torch.randperm(shp[d])[: min(n, shp[d])]
        )  # noqa: E501
        src = rand(tuple(i.numel() if j == d else s for j, s in enumerate(shp)))
        return (lambda x, i, s: op(x, d, i, s)), (rand(shp), i, src)

    case(_op)(_iadd)


@case(aten.index_fill.int_Scalar)
def _ifill(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    return (lambda x, i: aten.index_fill.int_Scalar(x, d, i, -1.0)), (rand(shp), idx(shp[d], (2,)))


@case(aten.index_fill.int_Tensor)
def _ifill_t(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    return (lambda x, i, v: aten.index_fill.int_Tensor(x, d, i, v)), (
        rand(shp),
        idx(shp[d], (2,)),
        rand(()),
    )


@case(aten.index_put.default)
def _iput(draw):
    shp = shape(draw, 1, 3)
    acc = draw(st.booleans())
    n = draw(st.integers(1, 4))
    i = idx(shp[0], (n,)) if acc else torch.randperm(shp[0])[: min(n, shp[0])]
    v = rand(broadcast_partner(draw, (i.numel(), *shp[1:])))
    return (lambda x, i, v: aten.index_put.default(x, [i], v, acc)), (rand(shp), i, v)


def _scatter_index(draw, shp, d):
    return idx(shp[d], tuple(draw(st.integers(1, s)) for s in shp))


@case(aten.scatter.src)
def _scatter_src(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    i = _scatter_index(draw, shp, d)
    return (lambda x, i, s: aten.scatter.src(x, d, i, s)), (rand(shp), i, rand(i.shape))


@case(aten.scatter.value)
def _scatter_value(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    i = _scatter_index(draw, shp, d)
    return (lambda x, i: aten.scatter.value(x, d, i, 2.0)), (rand(shp), i)


@case(aten.scatter.reduce)
def _scatter_reduce_src(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    i = _scatter_index(draw, shp, d)
    r = draw(st.sampled_from(["add", "multiply"]))
    return (lambda x, i, s: aten.scatter.reduce(x, d, i, s, reduce=r)), (
        rand(shp),
        i,
        rand(i.shape),
    )  # noqa: E501


@case(aten.scatter.value_reduce)
def _scatter_value_reduce(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    i = _scatter_index(draw, shp, d)
    r = draw(st.sampled_from(["add", "multiply"]))
    return (lambda x, i: aten.scatter.value_reduce(x, d, i, 2.0, reduce=r)), (rand(shp), i)


@case(aten.scatter_add.default)
def _scatter_add(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    i = _scatter_index(draw, shp, d)
    return (lambda x, i, s: aten.scatter_add.default(x, d, i, s)), (rand(shp), i, rand(i.shape))


@case(aten.scatter_reduce.two)
def _scatter_reduce(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    i = _scatter_index(draw, shp, d)
    r = draw(st.sampled_from(["sum", "prod", "mean", "amax", "amin"]))
    inc = draw(st.booleans())
    return (lambda x, i, s: aten.scatter_reduce.two(x, d, i, s, r, include_self=inc)), (
        rand(shp),
        i,
        rand(i.shape),
    )


@case(solar_ops.one_hot.default)
def _one_hot(draw):
    c = draw(st.integers(1, 5))
    return (lambda i: F.one_hot(i, c)), (idx(c, shape(draw, 1, 2)),)


# ----------------------------------------------------------------------- shape ops


@case(aten.cat.default)
def _cat(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp) - 1))
    parts = [
        rand(tuple(draw(st.integers(1, 3)) if j == d else s for j, s in enumerate(shp)))
        for _ in range(draw(st.integers(1, 3)))
    ]
    return (lambda *xs: aten.cat.default(list(xs), d)), tuple(parts)


@case(aten.stack.default)
def _stack(draw):
    shp = shape(draw)
    d = draw(st.integers(0, len(shp)))
    parts = tuple(rand(shp) for _ in range(draw(st.integers(1, 3))))
    return (lambda *xs: aten.stack.default(list(xs), d)), parts


@case(aten.constant_pad_nd.default)
def _cpad(draw):
    shp = shape(draw)
    k = draw(st.integers(1, len(shp)))
    pads = [draw(st.integers(-1, 2)) for _ in range(2 * k)]
    pads = [max(p, 0) for p in pads] if min(shp) < 3 else pads
    return (lambda x: aten.constant_pad_nd.default(x, pads, 0.5)), (rand(shp),)


@case(aten.flip.default)
def _flip(draw):
    shp = shape(draw)
    return (lambda x: aten.flip.default(x, dims_subset(draw, len(shp)))), (rand(shp),)


@case(aten.roll.default)
def _roll(draw):
    shp = shape(draw)
    d = dims_subset(draw, len(shp))
    shifts = [draw(st.integers(-3, 3)) for _ in d]
    return (lambda x: aten.roll.default(x, shifts, d)), (rand(shp),)


@case(aten.rot90.default)
def _rot90(draw):
    shp = shape(draw, 2, 3)
    k = draw(st.integers(-2, 3))
    return (lambda x: aten.rot90.default(x, k, [0, 1])), (rand(shp),)


@case(aten.repeat.default)
def _repeat(draw):
    shp = shape(draw)
    reps = [draw(st.integers(1, 2)) for _ in range(len(shp) + draw(st.integers(0, 1)))]
    return (lambda x: aten.repeat.default(x, reps)), (rand(shp),)


@case(aten.pixel_shuffle.default)
def _pshuf(draw):
    r = draw(st.integers(1, 2))
    x = rand((1, 2 * r * r, draw(st.integers(1, 3)), draw(st.integers(1, 3))))
    return (lambda x: aten.pixel_shuffle.default(x, r)), (x,)


@case(aten.pixel_unshuffle.default)
def _punshuf(draw):
    r = draw(st.integers(1, 2))
    x = rand((1, 2, r * draw(st.integers(1, 3)), r * draw(st.integers(1, 3))))
    return (lambda x: aten.pixel_unshuffle.default(x, r)), (x,)


for _kind in ("reflection", "replication"):
    for _n in (1, 2, 3):
        _op = getattr(aten, f"{_kind}_pad{_n}d").default

        def _pad(draw, op=_op, n=_n, kind=_kind):
            size = [draw(st.integers(2, 4)) for _ in range(n)]
            hi = 1 if kind == "reflection" else 2
            pads = [draw(st.integers(0, hi)) for _ in range(2 * n)]
            return (lambda x: op(x, pads)), (rand((1, 2, *size)),)

        case(_op, examples=2)(_pad)


for _op in (aten.clone.default, aten.lift_fresh_copy.default):

    def _copy(draw, op=_op):
        shp = shape(draw)
        store, view = viewed(draw, shp)
        return (lambda x: op(view(x))), (rand(store),)

    case(_op)(_copy)


@case(aten._to_copy.default)
def _to_copy(draw):
    shp = shape(draw)
    store, view = viewed(draw, shp)
    dt = draw(st.sampled_from([torch.float16, torch.float64, torch.int32, torch.bfloat16]))
    return (lambda x: aten._to_copy.default(view(x), dtype=dt)), (rand(store),)


@case(aten.copy.default)
def _copy_f(draw):
    shp = shape(draw)
    src = rand(broadcast_partner(draw, shp))
    return (lambda x, s: aten.copy.default(x, s)), (rand(shp), src)


@case(aten.copy_.default)
def _copy_(draw):
    shp = shape(draw)
    src = rand(broadcast_partner(draw, shp))
    return (lambda x, s: aten.copy_.default(x, s)), (rand(shp), src)


# ------------------------------------------------------------------------ creation


def _fill_shape(draw):
    return list(shape(draw))


@case(aten.arange.default)
def _arange(draw):
    n = draw(st.integers(1, 6))
    return (lambda x: aten.arange.default(n) + x), (rand((n,)),)


@case(aten.arange.start)
def _arange_s(draw):
    a, n = draw(st.integers(-3, 3)), draw(st.integers(1, 5))
    return (lambda x: aten.arange.start(a, a + n) + x), (rand((n,)),)


@case(aten.arange.start_step)
def _arange_ss(draw):
    a, n, s = draw(st.integers(-3, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 3))
    return (lambda x: aten.arange.start_step(a, a + n * s, s) + x), (rand((n,)),)


for _op in (aten.empty.memory_format,):
    case(_op)(lambda draw, op=_op: ((lambda x: op(list(x.shape)) * 0 + x), (rand(shape(draw)),)))


@case(aten.empty_like.default)
def _empty_like(draw):
    return (lambda x: aten.empty_like.default(x).fill_(1.0) + x), (rand(shape(draw)),)


@case(aten.empty_strided.default)
def _empty_strided(draw):
    shp = shape(draw)
    strides = [math.prod(shp[i + 1 :]) for i in range(len(shp))]
    return (lambda x: aten.empty_strided.default(shp, strides).fill_(2.0) + x), (rand(shp),)


@case(aten.new_empty.default)
def _new_empty(draw):
    shp = _fill_shape(draw)
    return (lambda x: aten.new_empty.default(x, shp).fill_(1.0)), (rand((2,)),)


@case(aten.new_empty_strided.default)
def _new_empty_strided(draw):
    shp = shape(draw)
    strides = [math.prod(shp[i + 1 :]) for i in range(len(shp))]
    return (lambda x: aten.new_empty_strided.default(x, shp, strides).fill_(1.0)), (rand((2,)),)


@case(aten.fill.Scalar)
def _fill(draw):
    return (lambda x: aten.fill.Scalar(x, 3.0)), (rand(shape(draw)),)


@case(aten.fill.Tensor)
def _fill_t(draw):
    return (lambda x, v: aten.fill.Tensor(x, v)), (rand(shape(draw)), rand(()))


@case(aten.full.default)
def _full(draw):
    shp = _fill_shape(draw)
    return (lambda x: aten.full.default(shp, 2.0) * x), (rand((1,)),)


for _op in (aten.zeros.default, aten.ones.default):
    case(_op)(lambda draw, op=_op: ((lambda x: op(_fill_shape(draw)) + x), (rand((1,)),)))

for _op in (aten.zeros_like.default, aten.ones_like.default, aten.zero.default):
    case(_op)(lambda draw, op=_op: ((lambda x: op(x)), (rand(shape(draw)),)))


@case(aten.full_like.default)
def _full_like(draw):
    return (lambda x: aten.full_like.default(x, 7.0)), (rand(shape(draw)),)


for _op in (aten.new_zeros.default, aten.new_ones.default):
    case(_op)(lambda draw, op=_op: ((lambda x: op(x, _fill_shape(draw))), (rand((2,)),)))


@case(aten.new_full.default)
def _new_full(draw):
    shp = _fill_shape(draw)
    return (lambda x: aten.new_full.default(x, shp, 5.0)), (rand((2,)),)


@case(aten.scalar_tensor.default)
def _scalar_tensor(draw):
    v = draw(st.sampled_from([1.0, -2.5]))
    return (lambda x: aten.scalar_tensor.default(v) * x), (rand(shape(draw)),)


# -------------------------------------------------------------- fused library calls


@case(solar_ops.sdpa.default, examples=15)
def _sdpa(draw):
    b, h, lq, lk, e = (draw(st.integers(1, 4)) for _ in range(5))
    gqa = draw(st.booleans()) and h > 1
    kvh = 1 if gqa else h
    causal = draw(st.booleans())
    mask = None
    if not causal and draw(st.booleans()):
        mask = rand((lq, lk), torch.bool) if draw(st.booleans()) else rand((1, h, lq, lk))
    scale = draw(st.sampled_from([None, 0.3]))
    q, k, v = rand((b, h, lq, e)), rand((b, kvh, lk, e)), rand((b, kvh, lk, e))

    def fn(q, k, v, m):
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=m, is_causal=causal, scale=scale, enable_gqa=gqa
        )

    return fn, (q, k, v, mask)


for _name in ("lstm", "gru", "rnn_tanh", "rnn_relu"):

    def _rnn(draw, name=_name):
        i, h, t, b = (draw(st.integers(1, 3)) for _ in range(4))
        layers, bi = draw(st.integers(1, 2)), draw(st.booleans())
        bias, bf = draw(st.booleans()), draw(st.booleans())
        cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}.get(name, torch.nn.RNN)
        kw = {} if cls is not torch.nn.RNN else {"nonlinearity": name.split("_")[1]}
        m = cls(i, h, layers, bias=bias, batch_first=bf, bidirectional=bi, **kw)
        x = rand((b, t, i) if bf else (t, b, i))
        return m, (x,)

    case(getattr(solar_ops, _name).default, examples=4)(_rnn)
import oracle_cases_bits  # noqa: E402,F401  (shifts, logaddexp, in-place views)
import oracle_cases_complex  # noqa: E402,F401  (FFT, linear algebra, complex numbers)
import oracle_cases_dynamic  # noqa: E402,F401  (data-dependent sizes, grouped GEMM)
import oracle_cases_families  # noqa: E402,F401  (weight norm, vdot)
import oracle_cases_models  # noqa: E402,F401  (view copies, random, transformer, cells)
import oracle_cases_training  # noqa: E402,F401  (registers the training-step cases)
import oracle_cases_upsampling  # noqa: E402,F401  (upsampling; it imports the backward and pdist cases)
