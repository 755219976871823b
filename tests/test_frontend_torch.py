"""The PyTorch frontend: every supported operator traced, lowered, executed as IR, and compared
with eager PyTorch; kernel grouping, views, precision policy, sources, and errors."""

from __future__ import annotations

import math
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from eager_oracle import check

from solar.frontend.lowering.pointwise import pointwise
from solar.frontend.torch import (
    LOWERINGS,
    DataDependentOperatorError,
    UnsupportedDtypeError,
    UnsupportedOperatorError,
    lowering,
    trace_torch,
)
from solar.interp.torch.execute import execute
from solar.ir.cost import kernel_io
from solar.ir.scalar import call

aten = torch.ops.aten
HERE = os.path.basename(__file__)


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + 17 * len(shape) + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def pos(*shape, dtype=torch.float32):
    return (rand(*shape).abs() + 0.1).to(dtype)


def ints(*shape, lo=-5, hi=6, dtype=torch.int64):
    return torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(1)).to(dtype)


def case(fn, *inputs, id):  # noqa: A002
    return pytest.param(fn, inputs, id=id)


X = rand(3, 4)
# ---------------------------------------------------------------------------- elementwise
UNARY = [
    *(
        case(getattr(torch, n), X, id=n)
        for n in [
            "abs",
            "neg",
            "exp",
            "exp2",
            "expm1",
            "relu",
            "sigmoid",
            "tanh",
            "erf",
            "sin",
            "cos",
            "floor",
            "ceil",
            "sign",
        ]
    ),
    *(case(getattr(torch, n), pos(3, 4), id=n) for n in ["log", "log2", "log1p", "sqrt", "rsqrt"]),
    case(torch.reciprocal, pos(3, 4), id="reciprocal"),
    case(lambda x: torch.round(x * 3), X, id="round"),
    case(F.silu, X, id="silu"),
    case(F.gelu, X, id="gelu"),
    case(lambda x: F.gelu(x, approximate="tanh"), X, id="gelu_tanh"),
    case(torch.logical_not, X.gt(0), id="logical_not"),
    case(F.leaky_relu, X, id="leaky_relu"),
    case(lambda x: F.leaky_relu(x, 0.2), X, id="leaky_relu_slope"),
    case(F.hardtanh, X, id="hardtanh"),
    case(F.relu6, X * 5, id="relu6"),
    case(F.elu, X, id="elu"),
    case(lambda x: F.softplus(x * 10, beta=2, threshold=5), X, id="softplus"),
    case(F.hardsigmoid, X * 4, id="hardsigmoid"),
    case(F.hardswish, X * 4, id="hardswish"),
    case(F.mish, X, id="mish"),
    case(lambda x: x.clamp(-0.5, 0.5), X, id="clamp"),
    case(lambda x: x.clamp(min=0), X, id="clamp_min_only"),
    case(lambda x: torch.clamp_min(x, 0.1), X, id="clamp_min"),
    case(lambda x: torch.clamp_max(x, 0.1), X, id="clamp_max"),
    case(lambda x, lo, hi: x.clamp(lo, hi), X, -pos(4), pos(3, 1), id="clamp_tensor"),
    case(lambda x: x**2, X, id="pow_2"),
    case(lambda x: x**3, X, id="pow_3"),
    case(lambda x: x**0.5, pos(3, 4), id="pow_half"),
    case(lambda x: x**-1, pos(3, 4), id="pow_m1"),
    case(lambda x: x**1.7, pos(3, 4), id="pow_general"),
    case(lambda x: 2**x, X, id="pow_scalar_base"),
    case(torch.triu, X, id="triu"),
    case(lambda x: torch.tril(x, -1), rand(2, 4, 4), id="tril"),
]

BINARY = [
    case(torch.add, X, rand(3, 4, seed=1), id="add"),
    case(lambda a, b: torch.add(a, b, alpha=2), X, rand(4), id="add_alpha_bcast"),
    case(lambda a: a + 2.5, X, id="add_scalar"),
    case(lambda a, b: a - b, X, rand(3, 1), id="sub_bcast"),
    case(lambda a, b: torch.sub(a, b, alpha=3), X, rand(3, 4, seed=1), id="sub_alpha"),
    case(lambda a: 1 - a, X, id="rsub"),
    case(lambda a, b: a * b, rand(2, 1, 4), rand(3, 1), id="mul_bcast_3d"),
    case(lambda a: a * 3, X, id="mul_scalar"),
    case(lambda a, b: a / b, X, pos(4), id="div"),
    case(lambda a: a / 3, X, id="div_scalar"),
    case(lambda a, b: torch.div(a, b, rounding_mode="floor"), X * 5, pos(4), id="div_floor"),
    case(lambda a: a // 2, ints(3, 4), id="floor_divide_int"),
    case(torch.pow, pos(3, 4), rand(4), id="pow_tensor"),
    case(torch.maximum, X, rand(3, 4, seed=1), id="maximum"),
    case(torch.minimum, X, rand(4, seed=1), id="minimum"),
    case(lambda s, a, b: torch.addcmul(s, a, b, value=0.5), X, X, rand(4), id="addcmul"),
    case(lambda s, a, b: torch.addcdiv(s, a, b, value=2), X, X, pos(4), id="addcdiv"),
    *(
        case(getattr(torch, n), X, rand(4, seed=2), id=n)
        for n in ["eq", "ne", "lt", "le", "gt", "ge"]
    ),
    case(lambda a: a > 0, X, id="gt_scalar"),
    case(lambda a: a == 2, ints(3, 4), id="eq_scalar_int"),
    case(lambda a, b: a < b, ints(3, 4), X, id="lt_int_float"),
    case(torch.logical_and, X.gt(0), X.lt(0.5), id="logical_and"),
    case(torch.logical_or, X.gt(0), X.lt(-0.5), id="logical_or"),
    case(lambda a, b: torch.where(a > 0, a, b), X, rand(4), id="where"),
    case(lambda a: torch.where(a > 0, a, 0.0), X, id="where_scalar"),
    case(lambda a: a.masked_fill(a > 0, -1.0), X, id="masked_fill"),
    case(lambda a, v: a.masked_fill(a > 0, v), X, torch.tensor(7.0), id="masked_fill_tensor"),
    # broadcasting and type promotion
    case(lambda a, b: a + b, rand(3, 1, 4), rand(5, 1), id="bcast_both"),
    case(lambda a, s: a * s, X, torch.tensor(3.0), id="zero_dim_tensor"),
    case(lambda a: a * 0.5, ints(3, 4), id="int_times_float"),
    case(lambda a, b: a + b, ints(3, 4, dtype=torch.int32), ints(4), id="int32_plus_int64"),
    case(lambda a, b: a + b, rand(3, 4, dtype=torch.bfloat16), X, id="bf16_plus_fp32"),
    case(lambda a, b: a * b + 1, rand(3, 4, dtype=torch.bfloat16), X.bfloat16(), id="bf16"),
]

CONVERSIONS = [
    case(lambda a: a.to(torch.bfloat16), X, id="to_bf16"),
    case(lambda a: a.half(), X, id="to_half"),
    case(lambda a: (a * 3).to(torch.int32), X, id="to_int32"),
    case(lambda a: a.float(), ints(3, 4), id="int_to_float"),
    case(lambda a: a.clone(), X, id="clone"),
    case(lambda a: a.t().contiguous(), X, id="contiguous"),
]


@pytest.mark.parametrize("fn, inputs", UNARY + BINARY + CONVERSIONS)
def test_elementwise(fn, inputs):
    trace = check(fn, *inputs)
    assert len(trace.program.kernels) <= 3  # one per op (plus a comparison feeding it)


# ------------------------------------------------------------------------------ in place
INPLACE = [
    case(lambda a: a.add_(1), X, id="add_"),
    case(lambda a: (a * 2).relu_(), X, id="relu_"),
    case(lambda a: F.relu(a * 2, inplace=True), X, id="relu_inplace"),
    case(lambda a: a[1:, ::2].mul_(3), X, id="mul_on_slice"),
    case(lambda a: (a.t() + 1).mul_(2), X, id="on_transposed_output"),
    case(lambda a: a.fill_(3.0), X, id="fill_"),
    case(lambda a: a.zero_(), X, id="zero_"),
    case(lambda a, b: a.copy_(b), X, rand(4), id="copy_bcast"),
    case(lambda a, b: a[:, :2].copy_(b), X, ints(3, 2), id="copy_into_slice_cast"),
    case(lambda a: (a.exp_(), a)[1], X, id="mutated_input_is_output"),
]


@pytest.mark.parametrize("fn, inputs", INPLACE)
def test_in_place(fn, inputs):
    check(fn, *inputs)


# ------------------------------------------------------------------------------ creation
def test_creation():
    def f(x):
        return (
            torch.zeros(2, 3),
            torch.ones(4, dtype=torch.int32),
            torch.full((2, 2), 3.5),
            torch.zeros_like(x),
            torch.ones_like(x),
            torch.full_like(x, 7),
            x.new_zeros(3),
            x.new_ones(2, 2),
            x.new_full((2,), -1.0),
            torch.arange(5),
            torch.arange(2, 11, 3),
            torch.arange(0.0, 1.0, 0.25),
            torch.arange(1, 4) * x[0, 0],
        )

    trace = check(f, X)
    assert len(trace.program.kernels) == 14  # one fill/iota per tensor, and the final mul


def test_empty_launches_nothing():
    trace = trace_torch(lambda x: torch.empty(3, 4).copy_(x), X)
    assert [k.op for k in trace.program.kernels] == ["aten.copy_.default"]


# ------------------------------------------------------------------------------ matmuls
MATMULS = [
    case(torch.mm, rand(3, 5), rand(5, 4), id="mm"),
    case(torch.bmm, rand(2, 3, 5), rand(2, 5, 4), id="bmm"),
    case(torch.mv, rand(3, 5), rand(5), id="mv"),
    case(torch.dot, rand(5), rand(5, seed=1), id="dot"),
    case(torch.outer, rand(3), rand(4), id="outer"),
    case(torch.addmm, rand(4), rand(3, 5), rand(5, 4), id="addmm"),
    case(
        lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2),
        rand(3, 1),
        rand(3, 5),
        rand(5, 4),
        id="addmm_beta_alpha",
    ),
    case(
        lambda b, x, y: torch.addmm(b, x, y, beta=0),
        rand(3, 4),
        rand(3, 5),
        rand(5, 4),
        id="addmm_beta0",
    ),
    case(
        lambda b, x, y: torch.addmm(b, x, y, alpha=-1),
        rand(3, 4),
        rand(3, 5),
        rand(5, 4),
        id="addmm_alpha",
    ),
    case(lambda x, y: torch.mm(x, y) * 1, rand(3, 5), rand(5, 4), id="mm_then_mul"),
    case(torch.baddbmm, rand(3, 4), rand(2, 3, 5), rand(2, 5, 4), id="baddbmm"),
    case(torch.addmv, rand(3), rand(3, 5), rand(5), id="addmv"),
    case(torch.addbmm, rand(3, 4), rand(2, 3, 5), rand(2, 5, 4), id="addbmm"),
    case(torch.matmul, rand(2, 3, 4), rand(4, 6), id="matmul_3d_2d"),
    case(torch.matmul, rand(2, 1, 3, 4), rand(5, 4, 6), id="matmul_batch_broadcast"),
    case(torch.matmul, rand(4), rand(2, 4, 3), id="matmul_vec_batch"),
    case(lambda x, w, b: F.linear(x, w, b), rand(2, 3, 4), rand(5, 4), rand(5), id="linear_3d"),
    case(lambda x, w: F.linear(x, w), rand(3, 4), rand(5, 4), id="linear_nobias"),
    case(lambda a, b: torch.einsum("bij,jk->bik", a, b), rand(2, 3, 4), rand(4, 6), id="einsum"),
    case(lambda a, b: a.t() @ b, rand(5, 3), rand(5, 4), id="transpose_then_mm"),
    case(lambda a: a @ a.T, rand(3, 5), id="gram"),
    case(
        torch.mm, rand(3, 5, dtype=torch.bfloat16), rand(5, 4, dtype=torch.bfloat16), id="mm_bf16"
    ),
    case(torch.mm, rand(3, 5, dtype=torch.float64), rand(5, 4, dtype=torch.float64), id="mm_fp64"),
]


@pytest.mark.parametrize("fn, inputs", MATMULS)
def test_matmul(fn, inputs):
    check(fn, *inputs)


def test_addmm_is_one_kernel_bias_then_accumulate():
    trace = check(torch.addmm, rand(4), rand(3, 5), rand(5, 4), kernels=["aten.addmm.default"])
    (k,) = trace.program.kernels
    bias, product = k.statements
    assert bias.reduce is None and not bias.reduction_dims
    assert product.reduce == "sum" and product.accumulate
    assert [d.name for d in product.reduction_dims] == ["k"]
    assert product.expr.op == "mul"


# ------------------------------------------------------------------------------ reductions
R = rand(2, 3, 4)
REDUCTIONS = [
    case(torch.sum, R, id="sum_all"),
    case(lambda x: x.sum(-1), R, id="sum_neg_dim"),
    case(lambda x: x.sum(1, keepdim=True), R, id="sum_keepdim"),
    case(lambda x: x.sum((0, 2)), R, id="sum_dims"),
    case(lambda x: x.sum(-1, dtype=torch.float64), R, id="sum_dtype"),
    case(lambda x: x.sum(0), ints(3, 4, dtype=torch.int32), id="sum_int32"),
    case(lambda x: (x > 0).sum(), R, id="sum_bool"),
    case(torch.mean, R, id="mean_all"),
    case(lambda x: x.mean(-1, keepdim=True), R, id="mean_keepdim"),
    case(lambda x: x.mean((0, 1)), R, id="mean_dims"),
    case(lambda x: x.mean(-1), rand(3, 64, dtype=torch.bfloat16), id="mean_bf16"),
    case(lambda x: x.prod(1), R, id="prod_dim"),
    case(torch.prod, rand(5), id="prod_all"),
    case(lambda x: x.amax(-1), R, id="amax"),
    case(lambda x: x.amin((0, 2), keepdim=True), R, id="amin"),
    case(torch.max, R, id="max_all"),
    case(torch.min, R, id="min_all"),
    case(lambda x: x.max(1), R, id="max_dim"),
    case(lambda x: x.min(-1, keepdim=True), R, id="min_dim_keepdim"),
    case(lambda x: x.argmax(-1), R, id="argmax"),
    case(lambda x: x.argmin(0, keepdim=True), R, id="argmin"),
    case(torch.argmax, R, id="argmax_flat"),
    case(lambda x: x.sum(0), rand(7), id="sum_1d"),
    case(lambda x: x.var(-1), R, id="var"),
    case(lambda x: x.var((0, 2), correction=0, keepdim=True), R, id="var_population"),
    case(torch.std, R, id="std_all"),
    case(lambda x: torch.var_mean(x, 1), R, id="var_mean"),
    case(lambda x: torch.std_mean(x, -1, keepdim=True), R, id="std_mean"),
    case(lambda x: x.std(-1), rand(3, 16, dtype=torch.bfloat16), id="std_bf16"),
]


@pytest.mark.parametrize("fn, inputs", REDUCTIONS)
def test_reduction(fn, inputs):
    trace = check(fn, *inputs)
    assert len(trace.program.kernels) <= 2  # (a comparison feeding it), then one kernel


# ------------------------------------------------------------------------------ softmax
SOFTMAX = [
    case(lambda x: torch.softmax(x, -1), R, id="softmax_last"),
    case(lambda x: torch.softmax(x, 0), R, id="softmax_dim0"),
    case(lambda x: F.log_softmax(x, 1), R, id="log_softmax"),
    case(lambda x: torch.softmax(x, -1), rand(3, 8, dtype=torch.bfloat16), id="softmax_bf16"),
    case(
        lambda x: torch.softmax(x, -1, dtype=torch.float32),
        rand(3, 8, dtype=torch.float16),
        id="softmax_half_to_float",
    ),
    case(lambda x: torch.softmax(x.t(), -1), rand(4, 3), id="softmax_of_view"),
    case(lambda x: aten._safe_softmax(x.masked_fill(x > 0.5, -math.inf), -1), R, id="safe"),
    case(lambda x: aten._safe_softmax(torch.full_like(x, -math.inf), -1), R, id="safe_masked"),
]


@pytest.mark.parametrize("fn, inputs", SOFTMAX)
def test_softmax(fn, inputs):
    trace = check(fn, *inputs)
    softmax_kernels = [k for k in trace.program.kernels if "softmax" in k.op]
    assert len(softmax_kernels) == 1


def test_softmax_is_one_kernel():
    check(lambda x: torch.softmax(x, -1), R, kernels=["aten._softmax.default"])


# ------------------------------------------------------------------------------ normalization
NORMS = [
    case(lambda x, w, b: F.layer_norm(x, (4,), w, b), R, rand(4), rand(4, seed=1), id="affine"),
    case(lambda x: F.layer_norm(x, (3, 4), eps=1e-3), R, id="two_dims_no_affine"),
    case(lambda x: F.layer_norm(x, (2, 3, 4)), R, id="all_dims"),
    case(
        lambda x, w: F.layer_norm(x, (8,), w),
        rand(3, 8, dtype=torch.bfloat16),
        rand(8, dtype=torch.bfloat16),
        id="bf16",
    ),
    case(nn.LayerNorm(4), R, id="module"),
]


@pytest.mark.parametrize("fn, inputs", NORMS)
def test_layer_norm_is_one_kernel(fn, inputs):
    check(fn, *inputs, kernels=["aten.native_layer_norm.default"])


# ------------------------------------------------------------------------------ views
VIEWS = [
    case(lambda x: x.t(), X, id="t"),
    case(lambda x: x.transpose(0, 2).reshape(4, 6), R, id="transpose_reshape_copy"),
    case(lambda x: x.permute(2, 0, 1) * 2, R, id="permute_mul"),
    case(lambda x: x.view(6, 4) + 1, R, id="view"),
    case(lambda x: x.reshape(-1), R, id="reshape_view"),
    case(lambda x: x.flatten(1).unflatten(1, (6, 2)) + 1, R, id="flatten_unflatten"),
    case(lambda x, y: x.expand(2, 3, 4) + y, rand(3, 1), R, id="expand_add"),
    case(lambda x: x[1:, ::2] * 2, rand(5, 6), id="slice_step"),
    case(lambda x: x[:, 1] + x[-1], rand(4, 4), id="select"),
    case(lambda x: x.unsqueeze(1).squeeze(1).unsqueeze(0) + 1, X, id="unsqueeze_squeeze"),
    case(lambda x: x.narrow(1, 1, 2) * 1, X, id="narrow"),
    case(lambda x: x.diagonal() + 1, rand(4, 4), id="diagonal"),
    case(lambda x: x.as_strided((2, 2), (1, 2), 1) + 0, X, id="as_strided"),
    case(lambda x: [t * 2 for t in x.split(2, dim=1)], rand(3, 5), id="split"),
    case(lambda x: [t + 1 for t in x.chunk(3)], rand(6, 2), id="chunk"),
    case(lambda x: [t * t for t in x.unbind(1)], X, id="unbind"),
    case(lambda x: x.t(), X.t(), id="non_contiguous_input"),
    case(lambda x: x[1:].t() @ x[:-1], rand(5, 3), id="views_feed_mm"),
    case(lambda x: (x.t() * 2)[0], X, id="view_of_permuted_output"),
    case(lambda x: (x.t() * 2).reshape(-1), X, id="reshape_of_permuted_output"),
]


@pytest.mark.parametrize("fn, inputs", VIEWS)
def test_views(fn, inputs):
    check(fn, *inputs)


def test_views_launch_no_kernel():
    trace = check(
        lambda x: x.t().unsqueeze(0).expand(2, 4, 3)[:, 1:, ::2].transpose(1, 2).squeeze(), X
    )
    assert trace.program.kernels == []
    assert trace.program.outputs[0] != "x"  # a view of the input, declared as such
    assert trace.program.tensors[trace.program.outputs[0]].view.base == "x"


CATS = [
    case(lambda a, b: torch.cat([a, b]), X, rand(2, 4), id="cat_dim0"),
    case(lambda a, b, c: torch.cat([a, b, c], -1), X, rand(3, 1), rand(3, 2), id="cat_last"),
    case(lambda a, b: torch.cat([a, b.t()], 1), X, rand(2, 3), id="cat_view_input"),
    case(lambda a, b: torch.cat([a, b]), X, rand(3, 4, dtype=torch.bfloat16), id="cat_promote"),
    case(lambda a, b: torch.stack([a, b]), X, rand(3, 4, seed=1), id="stack"),
    case(lambda a, b: torch.stack([a, b], -1), X, rand(3, 4, seed=1), id="stack_last"),
]


@pytest.mark.parametrize("fn, inputs", CATS)
def test_cat_stack(fn, inputs):
    trace = check(fn, *inputs)
    (k,) = trace.program.kernels
    assert len(k.statements) == len(inputs)


def causal_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def test_attention_is_one_fused_kernel_traced_on_meta():
    """SDPA is intercepted as the one fused kernel CUDA eager launches; the IR traced on meta
    runs on real values and matches eager."""
    real = (rand(2, 3, 5, 8), rand(2, 3, 5, 8, seed=1), rand(2, 3, 5, 8, seed=2))
    trace = trace_torch(causal_attention, tuple(t.to("meta") for t in real))
    assert [k.op for k in trace.program.kernels] == ["solar.sdpa.default"]
    (name,) = trace.output_names
    got = execute(trace.program, trace.values(causal_attention, real))[name]
    torch.testing.assert_close(got, causal_attention(*real), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ models
class MLP(nn.Module):
    def __init__(self, d=4, h=8, o=3):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, o))

    def forward(self, x):
        return self.layers(x)


def test_mlp():
    torch.manual_seed(0)
    m = MLP()
    trace = check(
        m, rand(5, 4), kernels=["aten.addmm.default", "aten.relu.default", "aten.addmm.default"]
    )
    assert trace.bindings == {
        "layers_0_weight": ("param", "layers.0.weight"),
        "layers_0_bias": ("param", "layers.0.bias"),
        "layers_2_weight": ("param", "layers.2.weight"),
        "layers_2_bias": ("param", "layers.2.bias"),
        "x": ("input", 0),
    }
    roles = {n: trace.program.role(n) for n in trace.bindings}
    assert roles["x"] == "input" and roles["layers_0_weight"] == "weight"
    modules = [k.module for k in trace.program.kernels]
    assert modules == ["layers.0 (Linear)", "layers.1 (ReLU)", "layers.2 (Linear)"]


class _ReluLinear(nn.Linear):
    def forward(self, x):
        return super().forward(x).relu()  # Linear.forward runs on the same module


class _Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = _ReluLinear(4, 4)
        self.b = self.a  # one module under two names: it keeps its first path
        self.inner = nn.Sequential(nn.Linear(4, 4))

    def forward(self, x):
        return self.inner(self.b(x))


def test_module_paths_of_subclassed_shared_and_nested_modules():
    m = _Shared()
    weight = m.a.weight
    trace = check(m, rand(2, 4))
    assert m.a.weight is weight and m.b.weight is weight  # torch's functional_call left fakes
    assert [k.module for k in trace.program.kernels] == [
        "a (_ReluLinear)",
        "a (_ReluLinear)",
        "inner.0 (Linear)",
    ]


def test_mlp_bf16_3d():
    torch.manual_seed(0)
    m = MLP().to(torch.bfloat16)
    check(m, rand(2, 5, 4, dtype=torch.bfloat16))


def test_meta_module_is_traced_without_weights():
    with torch.device("meta"):
        m = MLP(4096, 11008, 4096)
    trace = trace_torch(m, torch.empty(2, 16, 4096, device="meta"))
    p = trace.program
    assert [k.op for k in p.kernels] == [
        "aten.addmm.default",
        "aten.relu.default",
        "aten.addmm.default",
    ]
    shapes = [p.tensors[k.statements[-1].out.tensor].shape for k in p.kernels]
    assert shapes == [(32, 11008), (2, 16, 11008), (32, 4096)]
    assert p.tensors[p.outputs[0]].shape == (2, 16, 4096)
    assert p.tensors["layers_0_weight"].shape == (11008, 4096)
    assert {p.role(n) for n in p.inputs} == {"weight", "input"}


class Block(nn.Module):
    """Buffers, a captured constant, a helper function and nested outputs."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.register_buffer("scale", torch.tensor([1.0, 2.0, 3.0, 4.0]))

    def forward(self, x, mask):
        h = helper(self.proj(x)) * self.scale
        return {"h": h, "rest": [torch.softmax(h.masked_fill(mask, -1e9), -1), h.sum()]}


def helper(y):
    return F.gelu(y) + torch.tensor(0.5)  # HELPER LINE


def test_module_with_buffers_constants_and_nested_outputs():
    torch.manual_seed(0)
    b = Block()
    trace = check(b, rand(3, 4), rand(3, 4) > 0.5)
    assert trace.bindings["scale"] == ("buffer", "scale")
    assert trace.bindings["mask"] == ("input", 1)
    assert any(trace.program.role(n) == "constant" for n in trace.program.tensors)
    assert len(trace.output_names) == 3


def source_line(marker):
    with open(__file__) as f:
        return next(
            i for i, line in enumerate(f, 1) if marker in line and "source_line" not in line
        )


def test_source_points_at_the_user_line():
    trace = trace_torch(Block(), (rand(3, 4), rand(3, 4) > 0.5))
    gelu = next(k for k in trace.program.kernels if k.op == "aten.gelu.default")
    assert gelu.source == f"{HERE}:{source_line('# HELPER LINE')}"
    assert gelu.module == "(Block)"

    def f(x):
        return x.exp()  # EXP LINE

    (k,) = trace_torch(f, X).program.kernels
    assert k.source == f"{HERE}:{source_line('# EXP LINE')}"


# ------------------------------------------------------------------------------ precision
@pytest.fixture
def restore_matmul_precision():
    old = torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(old)


def matmul_precisions(trace):
    return {st.precision for k in trace.program.kernels for st in k.statements if st.reduce}


@pytest.mark.parametrize(
    "setting, value, override, expected",
    [
        ("allow_tf32", False, None, "ieee"),
        ("allow_tf32", True, None, "tf32"),
        ("float32_matmul_precision", "highest", None, "ieee"),
        ("float32_matmul_precision", "high", None, "tf32"),
        ("float32_matmul_precision", "medium", None, "tf32"),
        ("allow_tf32", True, "ieee", "ieee"),
        ("allow_tf32", False, "tf32", "tf32"),
    ],
)
def test_precision_policy(restore_matmul_precision, setting, value, override, expected):
    if setting == "allow_tf32":
        torch.backends.cuda.matmul.allow_tf32 = value
    else:
        torch.set_float32_matmul_precision(value)
    trace = trace_torch(MLP(), rand(5, 4), precision=override)
    assert matmul_precisions(trace) == {expected}
    assert all(st.precision is None for st in trace.program.kernels[1].statements)  # relu


def test_precision_policy_conv_family():
    from solar.frontend.torch.precision import torch_policy

    old = torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32 = False
        assert torch_policy().conv("float32") == "ieee"
        torch.backends.cudnn.allow_tf32 = True
        assert torch_policy().conv("float32") == "tf32"
        assert torch_policy("ieee").conv("float32") == "ieee"
        assert torch_policy().conv("bfloat16") is None
    finally:
        torch.backends.cudnn.allow_tf32 = old


def test_precision_only_for_float32():
    a, b = rand(3, 5, dtype=torch.bfloat16), rand(5, 4, dtype=torch.bfloat16)
    trace = trace_torch(torch.mm, (a, b), precision="tf32")
    assert trace.program.kernels[0].statements[0].precision is None


def test_bad_precision_is_rejected():
    with pytest.raises(ValueError, match="precision"):
        trace_torch(torch.mm, (rand(3, 5), rand(5, 4)), precision="fast")


# ------------------------------------------------------------------------------ errors
def test_unsupported_operator_names_op_line_and_way_out():
    def f(x):
        return torch.special.zeta(x, 2.0)  # ZETA LINE

    with pytest.raises(UnsupportedOperatorError) as e:
        trace_torch(f, X)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("aten.special_zeta.other_scalar")
    assert f"{HERE}:{source_line('# ZETA LINE')}" in msg
    assert "@solar.frontend.torch.lowering(torch.ops.aten.special_zeta.other_scalar)" in msg
    assert "solar/frontend/torch/ops/" in msg
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize(
    "fn, op",
    [
        (lambda x: x * x.sum().item(), "aten._local_scalar_dense.default"),
        (lambda x: x * 2 if x.sum() > 0 else x, "aten._local_scalar_dense.default"),
    ],
)
def test_data_dependent_operator(fn, op):
    with pytest.raises(DataDependentOperatorError) as e:
        trace_torch(fn, X)
    assert op in str(e.value) and "data-dependent" in str(e.value) and "\n" not in str(e.value)


def test_unsupported_dtype_names_the_tensor():
    with pytest.raises(UnsupportedDtypeError, match="input 'z'.*uint16"):
        trace_torch(lambda z: z * 2, torch.zeros(3, dtype=torch.uint16))


def test_registering_a_lowering_is_one_small_function():
    def f(x, y):
        return torch.hypot(x, y)

    with pytest.raises(UnsupportedOperatorError):
        trace_torch(f, (X, pos(3, 4)))
    with LOWERINGS.scoped():  # the registration is undone at the end

        @lowering(aten.hypot.default)
        def hypot(ctx, x, y):
            pointwise(
                ctx,
                lambda a, b: call("sqrt", call("add", call("square", a), call("square", b))),
                [x, y],
            )

        assert LOWERINGS[aten.hypot.default] is hypot
        check(f, X, pos(3, 4))
    assert aten.hypot.default not in LOWERINGS


def test_trunc_division_matches_eager():
    check(lambda a: torch.div(a, 2.5, rounding_mode="trunc"), X)


def test_captured_tensors_are_constants():
    w, wt = rand(4, 5), rand(5, 4).t()  # wt is not contiguous

    def f(x):
        return x @ w + (x @ wt)[:, :1]

    trace = check(f, X)
    p = trace.program
    assert len(p.constants) == 2  # wt as its (transposed) storage, declared with a view
    assert {p.role(n) for n in p.tensors if p.tensors[n].view is None} >= {"constant"}


def test_nested_inputs_bind_by_path():
    def f(xs, d):
        return xs[0] * xs[1] + d["b"]

    trace = check(f, [X, rand(4)], {"b": rand(3, 1)})
    assert trace.bindings == {
        "xs_0": ("input", (0, 0)),
        "xs_1": ("input", (0, 1)),
        "d_b": ("input", (1, "b")),
    }


def test_non_tensor_inputs_are_constants():
    trace = check(lambda x, k: x * k, X, 3)
    assert list(trace.bindings) == ["x"]


class CopiedCache(nn.Module):
    """transformers' looped models (Dory, Inkling-loop) deep-copy their cache layers."""

    def forward(self, x):
        import copy

        buf = torch.zeros(2 * x.shape[0], x.shape[1])
        buf[x.shape[0] :] = x * 2
        cache = [buf[x.shape[0] :]]  # a CPU view at an offset: copied through its storage
        cache += [copy.deepcopy(c) for c in cache * 2]
        return cache[0] + cache[1] + cache[2]


def test_a_deep_copy_of_a_traced_tensor_is_one_copy_kernel():
    """Each deep copy is one clone: (4, 8) fp32 read and written once, 128 bytes each way."""
    check(CopiedCache(), torch.randn(4, 8))
    trace = trace_torch(CopiedCache(), (torch.empty(4, 8, device="meta"),))
    ops = [k.op for k in trace.program.kernels]
    assert ops[-4:] == ["aten.clone.default"] * 2 + ["aten.add.Tensor"] * 2
    io = kernel_io(trace.program, trace.program.kernels[-4])
    assert (io.read_bytes, io.write_bytes) == (128, 128)
