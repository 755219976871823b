"""Normalization layers, activations, norms/logsumexp and losses: traced, lowered, executed as IR
on CPU and compared with eager PyTorch for every option that changes the loop nest; kernel
grouping of the fused ones; and cost facts (flops, SFU ops, DRAM bytes) derived by hand."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from eager_oracle import by_dtype_and_magnitude, compare, outputs, trace_pre_dispatch
from eager_oracle import check as _check

from solar.frontend.torch import UnsupportedOperatorError, trace_torch
from solar.interp.torch.execute import execute
from solar.ir.cost import kernel_io, program_io, statement_ops

aten = torch.ops.aten


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + 13 * len(shape) + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def pos(*shape, dtype=torch.float32, seed=0):
    return (rand(*shape, seed=seed).abs() + 0.1).to(dtype)


def prob(*shape, seed=0):
    return torch.sigmoid(rand(*shape, seed=seed))


def signs(*shape, seed=0):
    return torch.where(rand(*shape, seed=seed) > 0, 1.0, -1.0)


def check(fn, *inputs, kernels=None, reference=None):
    """The oracle, bf16 relative to the magnitude."""
    return _check(fn, *inputs, kernels=kernels, reference=reference, tol=by_dtype_and_magnitude)


def case(fn, *inputs, id, kernels=None):  # noqa: A002
    return pytest.param(fn, inputs, kernels, id=id)


def total_ops(program, kernels=None):
    """Operations by op class, summed over the statements of ``kernels`` (default: all)."""
    tot: dict[str, int] = {}
    for i, k in enumerate(program.kernels):
        if kernels is not None and i not in kernels:
            continue
        for st in k.statements:
            for cls, v in statement_ops(program, st).items():
                tot[cls] = tot.get(cls, 0) + v
    return tot


# ------------------------------------------------------------------------------ batch norm
X4, X3, X2 = rand(2, 3, 4, 5), rand(4, 3, 6), rand(6, 3)
C3 = rand(3, seed=1)
B3 = rand(3, seed=2)
RM, RV = rand(3, seed=3), pos(3, seed=4)
BN = "aten.native_batch_norm.default"


def bn_train_with_stats(x, rm, rv, w, b):
    return F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3), rm, rv


class WithStats(nn.Module):
    """A norm layer whose outputs include its running statistics (updated in place)."""

    def __init__(self, norm):
        super().__init__()
        self.norm = norm

    def forward(self, x):
        return self.norm(x), self.norm.running_mean, self.norm.running_var


def bn_module(cls, c, train, **kw):
    torch.manual_seed(0)
    m = cls(c, **kw)
    with torch.no_grad():
        if m.weight is not None:
            m.weight.copy_(rand(c, seed=5))
            m.bias.copy_(rand(c, seed=6))
        if m.running_mean is not None:
            m.running_mean.copy_(rand(c, seed=7))
            m.running_var.copy_(pos(c, seed=8))
    return WithStats(m.train(train)) if m.running_mean is not None else m.train(train)


BATCH_NORMS = [
    case(lambda x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b), X4, RM, RV, C3, B3, id="eval4d"),
    case(lambda x, rm, rv: F.batch_norm(x, rm, rv), X3, RM, RV, id="eval3d_no_affine"),
    case(lambda x, rm, rv, w: F.batch_norm(x, rm, rv, w, eps=0.1), X2, RM, RV, C3, id="eval2d_w"),
    case(
        lambda x, rm, rv, b: F.batch_norm(x, rm, rv, None, b), X4, RM, RV, B3, id="eval_bias_only"
    ),
    case(
        lambda x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b),
        rand(2, 3, 4, 5, dtype=torch.bfloat16),
        RM,
        RV,
        C3,
        B3,
        id="eval_bf16_fp32_stats",
    ),
    case(bn_train_with_stats, X4, RM, RV, C3, B3, id="train_running_stats"),
    case(bn_train_with_stats, X2, RM, RV, C3, B3, id="train2d_running_stats"),
    case(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), X3, C3, B3, id="train"),
    case(lambda x: F.batch_norm(x, None, None, training=True), X4, id="train_no_affine"),
    case(
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        rand(4, 3, 8, dtype=torch.bfloat16),
        C3,
        B3,
        id="train_bf16",
    ),
    case(bn_module(nn.BatchNorm2d, 3, False), X4, id="module_eval"),
    case(bn_module(nn.BatchNorm1d, 3, True), X3, id="module_train"),
    case(bn_module(nn.BatchNorm3d, 3, True, affine=False), rand(2, 3, 2, 3, 2), id="module3d"),
    case(bn_module(nn.BatchNorm2d, 3, True, track_running_stats=False), X4, id="module_no_stats"),
]


@pytest.mark.parametrize("fn, inputs, kernels", BATCH_NORMS)
def test_batch_norm_is_one_kernel(fn, inputs, kernels):
    trace = check(fn, *inputs)
    ops = [k.op for k in trace.program.kernels]
    assert ops.count(BN) == 1 and set(ops) <= {BN, "aten.add_.Tensor"}  # num_batches_tracked


def legit_train(x, w, b, rm, rv):
    out = aten._native_batch_norm_legit(x, w, b, rm, rv, True, 0.2, 1e-3)
    return (*out, rm, rv)


def native_reference(x, w, b, rm, rv, training, momentum=0.1, eps=1e-5):
    return aten.native_batch_norm(x, w, b, rm, rv, training, momentum, eps)


BATCH_NORM_VARIANTS = [
    case(
        lambda x, w, b, rm, rv: (*aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5), rm),
        X4,
        C3,
        B3,
        RM,
        RV,
        id="native_train_all_outputs",
    ),
    case(
        lambda x, w, b, rm, rv: aten.native_batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5),
        X4,
        C3,
        B3,
        RM,
        RV,
        id="native_eval_all_outputs",
    ),
    case(legit_train, X4, C3, B3, RM, RV, id="legit_train_in_place_stats"),
    case(
        lambda x, w, b: aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5),
        X3,
        C3,
        B3,
        id="legit_no_stats",
    ),
    case(
        lambda x, w, b, rm, rv: aten._native_batch_norm_legit_no_training(
            x, w, b, rm, rv, 0.1, 0.01
        ),
        X4,
        None,
        B3,
        RM,
        RV,
        id="legit_no_training",
    ),
    case(
        lambda x, w, b, rm, rv: aten._native_batch_norm_legit_functional(
            x, w, b, rm, rv, True, 0.3, 1e-5
        ),
        X4,
        C3,
        B3,
        RM,
        RV,
        id="legit_functional_train",
    ),
    case(
        lambda x, w, b, rm, rv: aten._native_batch_norm_legit_functional(
            x, w, b, rm, rv, False, 0.3, 1e-5
        ),
        X4,
        C3,
        B3,
        RM,
        RV,
        id="legit_functional_eval",
    ),
]


@pytest.mark.parametrize("fn, inputs, kernels", BATCH_NORM_VARIANTS)
def test_batch_norm_variants(fn, inputs, kernels):
    trace = check(fn, *inputs)
    assert len(trace.program.kernels) == 1


@pytest.mark.parametrize("training", [True, False])
def test_cudnn_batch_norm_matches_native(training):
    """``cudnn_batch_norm`` (what eager CUDA records for float32) has no CPU kernel: its IR is
    compared with ``native_batch_norm`` (same outputs, plus an empty ``reserve``)."""

    def cudnn(x, w, b, rm, rv):
        out, mean, invstd, reserve = aten.cudnn_batch_norm(x, w, b, rm, rv, training, 0.2, 1e-5)
        return out, mean, invstd, rm, rv

    def native(x, w, b, rm, rv):
        out, mean, invstd = aten.native_batch_norm(x, w, b, rm, rv, training, 0.2, 1e-5)
        if not training:
            mean, invstd = mean.new_empty(0), invstd.new_empty(0)
        return out, mean, invstd, rm, rv

    trace = check(cudnn, X4, C3, B3, RM, RV, reference=native)
    assert [k.op for k in trace.program.kernels] == ["aten.cudnn_batch_norm.default"]


def test_batch_norm_eval_cost():
    """Eval batch norm is one FMA per element, ``x * s[c] + t[c]``, with per channel
    ``s = w * rsqrt(rv + eps)`` (add, rsqrt, mul) and ``t = b - rm * s`` (mul, sub)."""
    n, c, h, w = 2, 3, 4, 5
    numel = n * c * h * w
    trace = check(
        lambda x, rm, rv, wt, b: F.batch_norm(x, rm, rv, wt, b), X4, RM, RV, C3, B3, kernels=[BN]
    )
    p = trace.program
    assert total_ops(p) == {"cuda_fp32": 2 * numel + 4 * c, "sfu": c}
    io = kernel_io(p, p.kernels[0])
    assert io.exact
    assert io.read_bytes == 4 * (numel + 4 * c)  # x and the four per-channel vectors
    assert io.write_bytes == 4 * numel


def test_batch_norm_train_writes_running_stats_in_place():
    trace = check(bn_train_with_stats, X4, RM, RV, C3, B3, kernels=[BN])
    p = trace.program
    io = program_io(p)
    rm, rv = trace.output_names[1:]
    assert p.role(rm) == "input" and io.writes[rm].elements == 3 and io.writes[rv].elements == 3


# ------------------------------------------------------------------------------ group norm
GN = "aten.native_group_norm.default"
GROUP_NORMS = [
    case(lambda x, w, b: F.group_norm(x, 3, w, b), rand(2, 6, 4, 5), rand(6), rand(6), id="affine"),
    case(lambda x: F.group_norm(x, 1), X4, id="one_group"),
    case(lambda x, w: F.group_norm(x, 3, w), X4, C3, id="group_per_channel_w"),
    case(lambda x, b: F.group_norm(x, 2, None, b, 1e-2), rand(3, 4, 7), rand(4), id="3d_bias"),
    case(lambda x: F.group_norm(x, 2), rand(3, 4), id="2d"),
    case(lambda x: F.group_norm(x, 2), rand(2, 4, 2, 3, 2), id="5d"),
    case(
        lambda x, w, b: F.group_norm(x, 2, w, b),
        rand(2, 4, 8, dtype=torch.bfloat16),
        rand(4, dtype=torch.bfloat16),
        rand(4, dtype=torch.bfloat16),
        id="bf16",
    ),
    case(nn.GroupNorm(2, 4), rand(2, 4, 3, 3), id="module"),
    case(
        lambda x: aten.native_group_norm(x, None, None, 2, 6, 20, 3, 1e-5),
        rand(2, 6, 4, 5),
        id="all_outputs",
    ),
]


@pytest.mark.parametrize("fn, inputs, kernels", GROUP_NORMS)
def test_group_norm_is_one_kernel(fn, inputs, kernels):
    check(fn, *inputs, kernels=[GN])


def test_group_norm_cost_is_one_fma_per_element():
    """Per element ``x * s[n, c] + t[n, c]``; per (n, c) ``s = rstd * w``, ``rstd * ... `` and
    ``t = b - mean * s``: 3 ops; per (n, g) the statistics; per element of the two reduction
    passes: combine, and sub + square + combine."""
    n, c, g, hw = 2, 6, 3, 20
    numel = n * c * hw
    trace = check(lambda x, w, b: F.group_norm(x, g, w, b), rand(n, c, 4, 5), rand(c), rand(c))
    per_group = numel // (n * g)
    mean = n * g * (per_group - 1) + n * g  # sum, then divide
    var = 2 * numel + n * g * (per_group - 1)  # sub, square; combine
    rstd = 2 * n * g  # divide, add eps
    apply = 2 * numel + 3 * n * c
    assert total_ops(trace.program) == {"cuda_fp32": mean + var + rstd + apply, "sfu": n * g}


# ------------------------------------------------------------------------- layer / RMS norm
LN = "aten.native_layer_norm.default"
LAYER_NORMS = [
    case(lambda x: F.layer_norm(x, (5,)), X4, id="no_affine"),
    case(lambda x, w: F.layer_norm(x, (5,), w), X4, rand(5), id="weight_only"),
    case(lambda x, b: F.layer_norm(x, (4, 5), None, b), X4, rand(4, 5), id="bias_only_2d"),
    case(lambda x: F.layer_norm(x, (16,)), rand(3, 16, dtype=torch.bfloat16), id="bf16_no_affine"),
    case(
        lambda x, w, b: F.layer_norm(x, (16,), w, b),
        rand(3, 16, dtype=torch.bfloat16),
        rand(16, dtype=torch.bfloat16),
        rand(16, dtype=torch.bfloat16),
        id="bf16_affine",
    ),
    case(
        lambda x, w, b: aten.native_layer_norm(x, [5], w, b, 1e-5),
        X4,
        rand(5),
        rand(5),
        id="all_outputs",
    ),
    case(
        lambda x: aten.native_layer_norm(x, [16], None, None, 1e-5),
        rand(3, 16, dtype=torch.bfloat16),
        id="bf16_all_outputs",
    ),
]


@pytest.mark.parametrize("fn, inputs, kernels", LAYER_NORMS)
def test_layer_norm(fn, inputs, kernels):
    check(fn, *inputs, kernels=[LN])


def test_layer_norm_cost_per_row():
    """Per row of N elements: mean: N-1 adds + 1 divide; variance: N subs, N squares, N-1
    adds; rstd: divide, add eps, 1 rsqrt; output: sub, mul, mul weight, add bias per element:
    8N + 1 flops and 1 SFU op per row. DRAM: x, weight, bias in; out, mean, rstd out."""
    rows, n = 6, 5
    trace = check(lambda x, w, b: F.layer_norm(x, (n,), w, b), rand(rows, n), rand(n), rand(n))
    p = trace.program
    assert total_ops(p) == {"cuda_fp32": rows * (8 * n + 1), "sfu": rows}
    io = kernel_io(p, p.kernels[0])
    assert io.read_bytes == 4 * (rows * n + 2 * n)
    assert io.write_bytes == 4 * (rows * n + 2 * rows)


RMS = "aten._fused_rms_norm.default"
FUSED_RMS_NORMS = [
    case(lambda x, w: aten._fused_rms_norm(x, [5], w, 1e-6), X4, rand(5), id="weight"),
    case(lambda x: aten._fused_rms_norm(x, [4, 5], None, None), X4, id="eps_default_2d"),
    case(
        lambda x, w: aten._fused_rms_norm(x, [16], w, None),
        rand(3, 16, dtype=torch.bfloat16) * 1e-2,
        rand(16, dtype=torch.bfloat16),
        id="bf16_eps_default",
    ),
]


@pytest.mark.parametrize("fn, inputs, kernels", FUSED_RMS_NORMS)
def test_fused_rms_norm(fn, inputs, kernels):
    """``F.rms_norm`` on CUDA records ``_fused_rms_norm`` (one kernel; outputs and rstd)."""
    program, values, names = trace_pre_dispatch(fn, *inputs)
    assert [k.op for k in program.kernels] == [RMS]
    compare(execute(program, values), outputs(fn(*inputs)), names, by_dtype_and_magnitude)


def test_fused_rms_norm_cost_per_row():
    """Per row: N squares + N-1 adds, divide, add eps, 1 rsqrt; per element two multiplies."""
    rows, n = 6, 5
    program, _, _ = trace_pre_dispatch(
        lambda x, w: aten._fused_rms_norm(x, [n], w, 1e-6), rand(rows, n), rand(n)
    )
    assert total_ops(program) == {"cuda_fp32": rows * (4 * n + 1), "sfu": rows}


RMS_NORMS = [
    case(lambda x, w: F.rms_norm(x, (5,), w, 1e-6), X4, rand(5), id="weight"),
    case(lambda x: F.rms_norm(x, (4, 5)), X4, id="no_weight"),
    case(nn.RMSNorm(16, dtype=torch.bfloat16), rand(3, 16, dtype=torch.bfloat16), id="module_bf16"),
]


@pytest.mark.parametrize("fn, inputs, kernels", RMS_NORMS)
def test_rms_norm_decomposed_on_cpu(fn, inputs, kernels):
    """A CPU-only build records ``F.rms_norm`` as its decomposition (pow, mean, add, rsqrt,
    mul): each piece is lowered as such."""
    trace = check(fn, *inputs)
    assert RMS not in [k.op for k in trace.program.kernels]


# -------------------------------------------------------------------- instance norm, dropout
NORM_MISC = [
    case(F.instance_norm, X4, id="instance_norm"),
    case(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), X3, C3, B3, id="instance_affine"),
    case(
        bn_module(nn.InstanceNorm2d, 3, True, affine=True, track_running_stats=True),
        X4,
        id="instance_running_stats",
    ),
    case(lambda x: F.dropout(x, 0.3, training=False), X4, id="dropout_eval", kernels=[]),
    case(nn.Dropout(0.5).eval(), X4, id="dropout_module_eval", kernels=[]),
    case(nn.Dropout2d(0.5).eval(), X4, id="dropout2d_eval", kernels=[]),
    case(nn.AlphaDropout(0.5).eval(), X4, id="alpha_dropout_eval", kernels=[]),
]


@pytest.mark.parametrize("fn, inputs, kernels", NORM_MISC)
def test_instance_norm_and_dropout(fn, inputs, kernels):
    trace = check(fn, *inputs, kernels=kernels)
    assert [k.op for k in trace.program.kernels].count(BN) <= 1


# ------------------------------------------------------------------------------ activations
A = rand(2, 4, 3, 6) * 3


ACTIVATIONS = [
    case(nn.ReLU(), A, id="ReLU"),
    case(nn.ReLU6(), A, id="ReLU6"),
    case(nn.LeakyReLU(0.2), A, id="LeakyReLU"),
    case(nn.PReLU(), A, id="PReLU_one"),
    case(nn.PReLU(4), A, id="PReLU_channels"),
    case(lambda x, w: F.prelu(x, w), rand(5, 4), rand(4), id="prelu_2d"),
    case(nn.RReLU(0.1, 0.3).eval(), A, id="RReLU_eval"),
    case(lambda x: F.rrelu(x, 0.2, 0.4, training=False), A, id="rrelu_eval"),
    case(nn.ELU(0.5), A, id="ELU"),
    case(nn.SELU(), A, id="SELU"),
    case(nn.CELU(0.7), A, id="CELU"),
    case(nn.GELU(), A, id="GELU"),
    case(nn.GELU("tanh"), A, id="GELU_tanh"),
    case(nn.SiLU(), A, id="SiLU"),
    case(nn.Mish(), A, id="Mish"),
    case(nn.Softplus(), A, id="Softplus"),
    case(nn.Softplus(2, 3), A, id="Softplus_beta_threshold"),
    case(nn.Softsign(), A, id="Softsign"),
    case(nn.Softshrink(0.7), A, id="Softshrink"),
    case(nn.Hardshrink(0.7), A, id="Hardshrink"),
    case(nn.Tanhshrink(), A, id="Tanhshrink"),
    case(nn.Hardtanh(-2, 1.5), A, id="Hardtanh"),
    case(nn.Hardsigmoid(), A, id="Hardsigmoid"),
    case(nn.Hardswish(), A, id="Hardswish"),
    case(nn.LogSigmoid(), A * 10, id="LogSigmoid"),
    case(nn.Sigmoid(), A, id="Sigmoid"),
    case(nn.Tanh(), A, id="Tanh"),
    case(nn.Threshold(0.5, -2.0), A, id="Threshold"),
    case(nn.Threshold(0.5, -2.0), torch.tensor([math.nan, 0.5, 1.0]), id="Threshold_nan"),
    case(nn.Hardshrink(0.5), torch.tensor([math.nan, -0.5, 1.0]), id="Hardshrink_nan"),
    case(nn.GLU(), A, id="GLU_last"),
    case(nn.GLU(1), A, id="GLU_dim1"),
    case(nn.Softmin(1), A, id="Softmin"),
    case(nn.Softmax2d(), A, id="Softmax2d"),
    case(nn.Softmax(-1), A, id="Softmax"),
    case(nn.LogSoftmax(1), A, id="LogSoftmax"),
    case(lambda x: F.logsigmoid(x), rand(3, 4, dtype=torch.bfloat16) * 5, id="logsigmoid_bf16"),
    case(lambda x: F.celu(x), rand(3, 4, dtype=torch.bfloat16), id="celu_bf16"),
    # in place
    *(
        case(lambda x, m=m: m(x.clone()), A, id=f"{type(m).__name__}_inplace")
        for m in [
            nn.ReLU(inplace=True),
            nn.ReLU6(inplace=True),
            nn.LeakyReLU(inplace=True),
            nn.ELU(inplace=True),
            nn.SELU(inplace=True),
            nn.CELU(inplace=True),
            nn.SiLU(inplace=True),
            nn.Mish(inplace=True),
            nn.Hardtanh(inplace=True),
            nn.Hardsigmoid(inplace=True),
            nn.Hardswish(inplace=True),
            nn.Threshold(0.1, 20.0, inplace=True),
            nn.RReLU(inplace=True).eval(),
        ]
    ),
]


@pytest.mark.parametrize("fn, inputs, kernels", ACTIVATIONS)
def test_activation(fn, inputs, kernels):
    trace = check(fn, *inputs)
    assert 1 <= len(trace.program.kernels) <= 3  # Softsign: abs, add, div


def test_rrelu_training_is_refused():
    with pytest.raises(UnsupportedOperatorError, match="random"):
        trace_torch(nn.RReLU().train(), A)


def test_log_sigmoid_cost():
    """``min(x, 0) - log1p(exp(-|x|))`` per element: minimum 1, sub 1, log1p 1 + 1 MUFU, exp 1
    MUFU (abs, neg free); the CPU trace's second output, the ``exp(-|x|)`` buffer, is another
    statement with one more exp: 3 flops and 3 MUFU ops per element."""
    trace = check(nn.LogSigmoid(), A)
    n = A.numel()
    assert total_ops(trace.program) == {"cuda_fp32": 3 * n, "sfu": 3 * n}


# ---------------------------------------------------------------------- norms, logsumexp
R = rand(2, 3, 4)
NORMS = [
    case(lambda x: torch.logsumexp(x, 1), R, id="logsumexp", kernels=["aten.logsumexp.default"]),
    case(lambda x: torch.logsumexp(x, (0, 2), keepdim=True), R, id="logsumexp_dims_keepdim"),
    case(lambda x: torch.logsumexp(x, -1), rand(3, 8, dtype=torch.bfloat16), id="logsumexp_bf16"),
    case(lambda x: torch.logsumexp(x, 0), torch.arange(6).view(2, 3), id="logsumexp_int"),
    case(
        lambda x: torch.logsumexp(x, -1),
        torch.tensor([[-math.inf, -math.inf], [math.inf, 1.0], [1.0, -math.inf]]),
        id="logsumexp_infinities",
    ),
    *(
        case(lambda x, p=p: torch.linalg.vector_norm(x, p, dim=-1), R, id=f"vector_norm_{p}")
        for p in [2, 1, math.inf, -math.inf, 0, 3, 1.5, 0.5, -1]
    ),
    case(lambda x: torch.linalg.vector_norm(x), R, id="vector_norm_all"),
    case(lambda x: torch.linalg.vector_norm(x, 3, (0, 2), True), R, id="vector_norm_dims_keep"),
    case(
        lambda x: torch.linalg.vector_norm(x, dim=-1, dtype=torch.float32),
        rand(3, 8, dtype=torch.bfloat16),
        id="vector_norm_dtype",
    ),
    case(
        lambda x: torch.linalg.vector_norm(x, dim=-1),
        rand(3, 8, dtype=torch.bfloat16),
        id="vector_norm_bf16",
    ),
    case(lambda x: torch.norm(x), R, id="frobenius"),
    case(lambda x: torch.linalg.matrix_norm(x), R, id="matrix_norm_fro"),
    case(lambda x: torch.norm(x, p="fro", dim=(1, 2)), R, id="norm_fro_dims"),
    case(lambda x: x.norm(1, dim=-1), R, id="tensor_norm_1"),
    case(lambda x: aten.norm.Scalar(x, 3), R, id="aten_norm_scalar"),
    case(lambda x: aten.norm.ScalarOpt_dim(x, None, [1], True), R, id="aten_norm_dim_none_p"),
    case(
        lambda x: aten.norm.ScalarOpt_dim_dtype(x, 2, [1], False, dtype=torch.float64),
        R,
        id="aten_norm_dim_dtype",
    ),
    case(lambda x, y: F.pairwise_distance(x, y), rand(4, 5), rand(4, 5, seed=1), id="pairwise"),
    case(lambda x: F.normalize(x, dim=1), R, id="normalize"),
    case(lambda x: F.normalize(x, p=1, dim=-1), R, id="normalize_p1"),
    # reductions that already existed: var/std corrections and dims, min/max with indices, clamp
    case(lambda x: x.var(1, unbiased=False), R, id="var_biased"),
    case(lambda x: x.var((0, 2), correction=2, keepdim=True), R, id="var_correction2"),
    case(lambda x: x.std(), R, id="std_all"),
    case(lambda x: x.std(-1, correction=0), R, id="std_population"),
    case(lambda x: torch.var_mean(x, (1, 2), correction=0), R, id="var_mean"),
    case(lambda x: x.max(1), R, id="max_indices"),
    case(lambda x: x.min(-1, keepdim=True), R, id="min_indices_keepdim"),
    case(lambda x: x.max(0), torch.tensor([[1.0, 2.0], [1.0, 3.0], [0.0, 3.0]]), id="max_ties"),
    case(lambda x: x.clamp(-0.5, 0.5), R, id="clamp"),
    case(lambda x: x.clamp(max=0.2), R, id="clamp_max"),
    case(lambda x: x.clamp(min=torch.tensor(0.1)), R, id="clamp_min_tensor"),
]


@pytest.mark.parametrize("fn, inputs, kernels", NORMS)
def test_norms_and_reductions(fn, inputs, kernels):
    trace = check(fn, *inputs, kernels=kernels)
    assert len(trace.program.kernels) <= 4


def test_logsumexp_is_one_kernel_and_its_cost():
    """Per row of N: max (N-1 combines), fix infinities (abs free, eq, where), N subs, N exps,
    N-1 adds, log, add."""
    rows, n = 6, 7
    trace = check(lambda x: torch.logsumexp(x, -1), rand(rows, n))
    assert [k.op for k in trace.program.kernels] == ["aten.logsumexp.default"]
    per_row = (n - 1) + 2 + n + (n - 1) + 1
    assert total_ops(trace.program) == {"cuda_fp32": rows * per_row, "sfu": rows * (n + 1)}


# ------------------------------------------------------------------------------------ losses
P, Q = rand(4, 5), rand(4, 5, seed=1)
LOSSES = []
for red in ("mean", "sum", "none"):
    LOSSES += [
        case(lambda x, y, r=red: F.mse_loss(x, y, reduction=r), P, Q, id=f"mse_{red}"),
        case(lambda x, y, r=red: F.l1_loss(x, y, reduction=r), P, Q, id=f"l1_{red}"),
        case(
            lambda x, y, r=red: F.huber_loss(x, y, reduction=r, delta=0.5), P, Q, id=f"huber_{red}"
        ),
        case(
            lambda x, y, r=red: F.smooth_l1_loss(x, y, reduction=r, beta=0.5),
            P,
            Q,
            id=f"smooth_l1_{red}",
        ),
        case(
            lambda x, y, r=red: F.smooth_l1_loss(x, y, reduction=r, beta=0.0),
            P,
            Q,
            id=f"smooth_l1_beta0_{red}",
        ),
        case(
            lambda x, y, r=red: F.kl_div(x, y, reduction=r, log_target=True),
            F.log_softmax(P, -1),
            F.log_softmax(Q, -1),
            id=f"kl_div_log_target_{red}",
        ),
        case(
            lambda x, y, r=red: F.binary_cross_entropy(x, y, reduction=r),
            prob(4, 5),
            prob(4, 5, seed=1),
            id=f"bce_{red}",
        ),
        case(
            lambda x, y, w, r=red: F.binary_cross_entropy(x, y, w, reduction=r),
            prob(4, 5),
            prob(4, 5, seed=1),
            pos(5),
            id=f"bce_weight_{red}",
        ),
        case(
            lambda x, y, r=red: F.binary_cross_entropy_with_logits(x, y, reduction=r),
            P * 5,
            prob(4, 5, seed=1),
            id=f"bce_logits_{red}",
        ),
        case(
            lambda x, y, w, pw, r=red: F.binary_cross_entropy_with_logits(
                x, y, w, reduction=r, pos_weight=pw
            ),
            P * 5,
            prob(4, 5, seed=1),
            pos(4, 1),
            pos(5, seed=2),
            id=f"bce_logits_weights_{red}",
        ),
        case(
            lambda x, y, r=red: F.hinge_embedding_loss(x, y, margin=0.5, reduction=r),
            P,
            signs(4, 5),
            id=f"hinge_embedding_{red}",
        ),
        case(
            lambda x, y, t, r=red: F.margin_ranking_loss(x, y, t, margin=0.1, reduction=r),
            rand(6),
            rand(6, seed=1),
            signs(6),
            id=f"margin_ranking_{red}",
        ),
        case(
            lambda x, y, r=red: F.soft_margin_loss(x, y, reduction=r),
            P,
            signs(4, 5),
            id=f"soft_margin_{red}",
        ),
        case(
            lambda a, p, n, r=red: F.triplet_margin_loss(a, p, n, reduction=r),
            P,
            Q,
            rand(4, 5, seed=2),
            id=f"triplet_{red}",
        ),
        case(
            lambda a, p, n, r=red: F.triplet_margin_loss(a, p, n, p=1, swap=True, reduction=r),
            P,
            Q,
            rand(4, 5, seed=2),
            id=f"triplet_p1_swap_{red}",
        ),
        case(
            lambda x, y, t, r=red: F.cosine_embedding_loss(x, y, t, margin=0.2, reduction=r),
            P,
            Q,
            signs(4),
            id=f"cosine_embedding_{red}",
        ),
        case(
            lambda x, y, r=red: F.poisson_nll_loss(x, y, reduction=r),
            P,
            pos(4, 5),
            id=f"poisson_nll_{red}",
        ),
        case(
            lambda x, y, r=red: F.poisson_nll_loss(x, y, log_input=False, full=True, reduction=r),
            pos(4, 5),
            pos(4, 5, seed=1) * 3,
            id=f"poisson_nll_full_{red}",
        ),
    ]
LOSSES += [
    case(lambda x, y: F.kl_div(x, y, reduction="batchmean", log_target=True), P, Q, id="kl_bm"),
    case(lambda x, y: F.cosine_similarity(x, y), P, Q, id="cosine_similarity"),
    case(lambda x, y: F.cosine_similarity(x, y, -1), rand(3, 1, 5), Q, id="cosine_sim_bcast"),
    case(lambda x, y: F.mse_loss(x, y), rand(3, 1, 5), Q, id="mse_broadcast"),
    case(
        lambda x, y: F.mse_loss(x, y),
        rand(4, 8, dtype=torch.bfloat16),
        rand(4, 8, dtype=torch.bfloat16, seed=1),
        id="mse_bf16",
    ),
    case(
        lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="sum"),
        rand(4, 8, dtype=torch.bfloat16),
        prob(4, 8).bfloat16(),
        id="bce_logits_bf16_sum",
    ),
]


@pytest.mark.parametrize("fn, inputs, kernels", LOSSES)
def test_loss(fn, inputs, kernels):
    trace = check(fn, *inputs)
    assert trace.program.kernels


@pytest.mark.parametrize(
    "fn, op",
    [
        (F.mse_loss, "mse_loss"),
        (F.huber_loss, "huber_loss"),
        (lambda x, y: F.smooth_l1_loss(x, y, beta=2.0), "smooth_l1_loss"),
        (F.soft_margin_loss, "soft_margin_loss"),
        (lambda x, y: F.binary_cross_entropy(torch.sigmoid(x), y), "binary_cross_entropy"),
        (F.binary_cross_entropy_with_logits, "binary_cross_entropy_with_logits"),
    ],
)
def test_recorded_losses_are_one_kernel(fn, op):
    trace = check(fn, P, prob(4, 5))
    assert [k.op for k in trace.program.kernels][-1] == f"aten.{op}.default"


def test_kl_div_with_probability_target_uses_xlogy():
    """``log_target=False`` records ``aten.xlogy``."""
    y = prob(4, 5, seed=1)
    y[0, 0] = 0.0
    for red in ("mean", "sum", "none", "batchmean"):
        check(lambda x, t, r=red: F.kl_div(x, t, reduction=r), F.log_softmax(P, -1), y)
    check(
        lambda x, t: torch.xlogy(x, t),
        torch.tensor([0.0, 1.0, 2.0]),
        torch.tensor([0.0, 2.0, math.nan]),
    )
    check(lambda t: torch.xlogy(2, t), pos(3))


def test_gaussian_nll_is_data_dependent():
    from solar.frontend.torch import DataDependentOperatorError

    with pytest.raises(DataDependentOperatorError):
        trace_torch(F.gaussian_nll_loss, (P, Q, pos(4, 5)))


def test_mse_mean_cost():
    """``mean((x - y)^2)`` over n elements: n subs + n squares + (n - 1) adds + 1 divide =
    3n flops; DRAM: both inputs once (8n bytes), one float32 out."""
    n = P.numel()
    trace = check(F.mse_loss, P, Q, kernels=["aten.mse_loss.default"])
    p = trace.program
    assert total_ops(p) == {"cuda_fp32": 3 * n}
    io = kernel_io(p, p.kernels[0])
    assert io.exact and io.read_bytes == 8 * n and io.write_bytes == 4
    assert program_io(p).bytes == 8 * n + 4


def test_rms_norm_is_one_fused_kernel_as_on_cuda():
    """``F.rms_norm`` is intercepted as the single ``_fused_rms_norm`` kernel CUDA launches
    (a CPU trace would record six kernels and over-charge the unfused bound)."""
    for fn, x in (
        (nn.RMSNorm(16), rand(4, 16)),
        (lambda x: F.rms_norm(x, (16,), eps=1e-5), rand(2, 3, 16).bfloat16()),
    ):
        trace = check(fn, x)
        assert [k.op for k in trace.program.kernels] == ["solar.rms_norm.default"]
