"""Fused library kernels (SDPA, cuDNN RNNs) kept as one graph node while tracing, and einsum.

Every case is traced, lowered, executed as IR on CPU and compared with eager PyTorch; kernel
grouping is checked; and cost facts are asserted against numbers derived by hand.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import opt_einsum
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from eager_oracle import check
from torch.nn.functional import scaled_dot_product_attention as attention_alias
from torch.utils import _pytree as pytree

import solar
from solar.frontend.torch import UnsupportedOperatorError, trace_torch
from solar.frontend.torch.fused import FUSED_OPS, fused_op
from solar.interp.torch.execute import execute
from solar.ir.cost import kernel_io, program_io, statement_ops
from solar.ir.program import Dim

SDPA = "solar.sdpa.default"


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + 31 * len(shape) + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def meta(*shape, dtype=torch.bfloat16):
    return torch.empty(*shape, dtype=dtype, device="meta")


def case(fn, *inputs, id):  # noqa: A002
    return pytest.param(fn, inputs, id=id)


def bound(trace):
    return solar.bound_program(trace.program, "H100")


# ------------------------------------------------------------------------ the interception
def test_table_lists_the_intercepted_calls():
    names = [row.name for row in FUSED_OPS]
    assert names == ["sdpa", "lstm", "rms_norm", "one_hot", "gru", "rnn_tanh", "rnn_relu"]
    assert fused_op(torch.rms_norm).name == "rms_norm"
    assert fused_op(F.scaled_dot_product_attention).name == "sdpa"
    assert fused_op(torch._VF.lstm).name == "lstm"
    assert fused_op(torch.matmul) is None
    for row in FUSED_OPS:
        assert row.why and row.op is getattr(torch.ops.solar, row.name).default


def test_sdpa_is_one_graph_node_with_the_original_arguments():
    q, k, v = rand(2, 3, 5, 8), rand(2, 3, 7, 8, seed=1), rand(2, 3, 7, 8, seed=2)

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, scale=0.5)

    trace = trace_torch(f, (q, k, v))
    calls = [n for n in trace.graph.graph.nodes if n.op == "call_function"]
    assert [n.target for n in calls] == [torch.ops.solar.sdpa.default]
    assert calls[0].kwargs == {"scale": 0.5}
    # the eager kernel is the original function: the traced graph runs on real tensors (and
    # returns the program's output tensors as a flat list)
    torch.testing.assert_close(trace.graph(q, k, v), [f(q, k, v)])


def test_eager_kernels_match_the_original_functions():
    q, k, v = rand(2, 4, 5, 8), rand(2, 2, 6, 8, seed=1), rand(2, 2, 6, 8, seed=2)
    got = torch.ops.solar.sdpa(q, k, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(
        got, F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    )
    m = nn.LSTM(3, 4)
    x, hx = rand(5, 2, 3), (rand(1, 2, 4), rand(1, 2, 4, seed=1))
    args = (x, hx, m._flat_weights, True, 1, 0.0, False, False, False)
    for a, b in zip(torch.ops.solar.lstm(*args), torch._VF.lstm(*args), strict=True):
        torch.testing.assert_close(a, b)


def test_nothing_is_intercepted_outside_tracing():
    q = rand(1, 2, 3, 4)
    out = F.scaled_dot_product_attention(q, q, q)  # plain eager call: no solar op involved
    torch.testing.assert_close(out, torch.softmax(q @ q.transpose(-2, -1) / 2, -1) @ q)


# --------------------------------------------------------------------------- attention
def sdpa(**kw):
    return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw)


def sdpa_mask(**kw):
    return lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)


Q, K, V = rand(2, 3, 5, 8), rand(2, 3, 7, 8, seed=1), rand(2, 3, 7, 6, seed=2)
BOOL = rand(5, 7, seed=3) > -0.3
BOOL[2] = False  # a fully masked row: PyTorch gives 0
ADD = rand(2, 1, 1, 7, seed=4)
ADD_INF = torch.where(BOOL, 0.0, -math.inf).expand(2, 3, 5, 7).contiguous()

ATTENTION = [
    case(sdpa(), Q, K, V, id="plain_Lq_ne_Lk_Ev_ne_E"),
    case(sdpa(), Q, Q, Q, id="self"),
    case(lambda x: F.scaled_dot_product_attention(x, x, x), Q, id="same_tensor"),
    case(sdpa(is_causal=True), Q, Q, Q, id="causal"),
    case(sdpa(is_causal=True), Q, K, V, id="causal_Lq_lt_Lk"),
    case(sdpa(is_causal=True), K, Q, Q[..., :6], id="causal_Lq_gt_Lk"),
    case(sdpa(scale=0.3), Q, K, V, id="scale"),
    case(sdpa(scale=-0.2), Q, K, V, id="negative_scale"),
    case(sdpa_mask(), Q, K, V, BOOL, id="bool_mask_broadcast"),
    case(sdpa_mask(scale=2.0), Q, K, V, ADD, id="additive_mask_broadcast"),
    case(sdpa_mask(), Q, K, V, ADD_INF, id="additive_minus_inf_full"),
    case(sdpa_mask(is_causal=True), Q, K, K, BOOL, id="causal_and_bool_mask"),  # CPU flash
    case(sdpa(enable_gqa=True), rand(2, 4, 5, 8), K[:, :1], V[:, :1], id="gqa_one_kv_head"),
    case(
        sdpa(enable_gqa=True, is_causal=True),
        rand(2, 6, 5, 8),
        rand(2, 2, 5, 8, seed=1),
        rand(2, 2, 5, 4, seed=2),
        id="gqa_causal",
    ),
    case(
        sdpa_mask(enable_gqa=True),
        rand(1, 6, 5, 8),
        rand(1, 3, 7, 8, seed=1),
        rand(1, 3, 7, 8, seed=2),
        rand(1, 6, 5, 7, seed=3) > 0,
        id="gqa_per_head_mask",
    ),
    case(sdpa(), rand(4, 5, 8), rand(4, 7, 8, seed=1), rand(4, 7, 8, seed=2), id="3d"),
    case(
        sdpa(), *(t.transpose(1, 2).contiguous().transpose(1, 2) for t in (Q, K, V)), id="strided"
    ),
    case(
        sdpa(is_causal=True),
        *(rand(2, 2, 9, 16, dtype=torch.bfloat16, seed=s) for s in range(3)),
        id="bf16_causal",
    ),
    case(sdpa(), *(rand(2, 2, 9, 16, dtype=torch.float16, seed=s) for s in range(3)), id="fp16"),
    # scale 0.5: the executor holds Python-float constants in float32 (1/sqrt(8) would be off
    # by 1e-8 in float64)
    case(
        sdpa(scale=0.5),
        *(rand(1, 2, 4, 8, dtype=torch.float64, seed=s) for s in range(3)),
        id="fp64",
    ),
]


@pytest.mark.parametrize("fn, inputs", ATTENTION)
def test_sdpa_executes_like_pytorch_as_one_kernel(fn, inputs):
    check(fn, *inputs, kernels=[SDPA])


def test_sdpa_on_meta_tensors_is_one_kernel_too():
    real = (Q, K, V)
    trace = trace_torch(sdpa(is_causal=True), tuple(t.to("meta") for t in real))
    assert [k.op for k in trace.program.kernels] == [SDPA]
    (name,) = trace.output_names
    got = execute(trace.program, trace.values(sdpa(is_causal=True), real))[name]
    torch.testing.assert_close(got, sdpa(is_causal=True)(*real))


def test_sdpa_kernel_structure():
    """Scores, max, sum and the accumulator are kernel-local; the causal guard is s <= l."""
    trace = trace_torch(sdpa(is_causal=True), (Q, Q, Q))
    p = trace.program
    (k,) = p.kernels
    # the output is written in CUDA's (B, L, H, E) layout: a view of its storage
    scratch = {n for n in p.tensors if n.startswith("sdpa_") and n != p.base("sdpa")}
    assert {p.role(n) for n in scratch} == {"local"}
    assert p.role("sdpa") == "output"
    qk, pv = k.statements[0], k.statements[4]
    assert qk.reduce == pv.reduce == "sum" and qk.precision == "tf32"  # fp32: TF32 tensor cores
    for st in k.statements[:-1]:
        (g,) = st.guards
        assert str(g) == "-4 <= -l+s < 1"
    assert not k.statements[-1].guards


def test_gqa_splits_heads_into_affine_loops():
    trace = trace_torch(sdpa(enable_gqa=True), (rand(2, 6, 5, 8), K[:, :2], V[:, :2]))
    qk = trace.program.kernels[0].statements[0]
    assert [(d.name, d.extent) for d in qk.dims[:3]] == [("b0", 2), ("kv", 2), ("g", 3)]
    q_load, k_load = qk.expr.args
    assert str(q_load) == "q[b0,g+3kv,l,e]" and str(k_load) == "k[b0,kv,s,e]"


def test_sdpa_in_a_module_keeps_module_and_source():
    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(16, 48)
            self.out = nn.Linear(16, 16)

        def forward(self, x):
            q, k, v = self.qkv(x).view(2, 5, 3, 2, 8).permute(2, 0, 3, 1, 4)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # SDPA LINE
            return self.out(o.transpose(1, 2).reshape(2, 5, 16))

    trace = check(Attn(), rand(2, 5, 16))
    ops = [k.op for k in trace.program.kernels]
    assert ops.count(SDPA) == 1 and "aten._softmax.default" not in ops
    (k,) = [k for k in trace.program.kernels if k.op == SDPA]
    with open(__file__) as f:
        line = next(i for i, s in enumerate(f, 1) if "# SDPA LINE" in s and "next(" not in s)
    assert k.source == f"test_frontend_attention_rnn.py:{line}"
    assert k.module == "(Attn)"


@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention(need_weights):
    """nn.MultiheadAttention runs SDPA without weights (one fused kernel) and an explicit
    bmm + softmax with them, in eager as in the trace."""

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(16, 2, batch_first=True)

        def forward(self, x):
            return self.mha(x, x, x, need_weights=need_weights)

    torch.manual_seed(0)
    trace = check(SelfAttention().eval(), rand(2, 5, 16))
    ops = [k.op for k in trace.program.kernels]
    assert (SDPA in ops) == (not need_weights)
    # the weights' softmax runs in place over the scores, as CUDA's _softmax_out(s, s)
    assert ("aten._softmax.out" in ops) == need_weights


def test_transformer_layer_runs_one_attention_kernel():
    """SDPA nested in F.multi_head_attention_forward (which the torch-function mode does not
    see) is caught through the patched module attribute."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True).eval()
    trace = check(layer, rand(2, 5, 16))
    ops = [k.op for k in trace.program.kernels]
    assert ops.count(SDPA) == 1 and not any("softmax" in op for op in ops)


def test_sdpa_imported_under_another_name_is_intercepted():
    """The mode sees the builtin under any name (the attribute patch would not)."""
    check(lambda q: attention_alias(q, q, q, is_causal=True), Q, kernels=[SDPA])


def test_sdpa_dropout_draws_one_value_per_score():
    """Training-mode attention: one kernel still; each probability is kept with probability
    1 - p and scaled (kernel-local): per score one draw, the scale of the kept mask and the
    multiply, 3 CUDA-core ops more than without dropout."""
    xs = (meta(1, 2, 64, 32), meta(1, 2, 64, 32), meta(1, 2, 64, 32))
    plain = bound(trace_torch(sdpa(), xs))
    traced = trace_torch(sdpa(dropout_p=0.1), xs)
    dropped = bound(traced)
    (k,) = dropped.kernels
    assert k.op == SDPA and dropped.bytes_unfused == plain.bytes_unfused
    scores = 1 * 2 * 64 * 64
    assert k.flops["cuda_fp32"] == plain.kernels[0].flops["cuda_fp32"] + 3 * scores
    assert any("1 random kernel(s) (solar.sdpa.default)" in a for a in traced.assumptions)


# -------------------------------------------------------- attention costs, derived by hand
B, H, L, D = 2, 8, 1024, 64
QKV_BYTES = B * H * L * D * 2  # one bf16 operand: 2 MiB


def qkv(*shape, dtype=torch.bfloat16):
    """Three distinct meta tensors (one tensor passed three times is one graph input, read
    once)."""
    return tuple(meta(*shape, dtype=dtype) for _ in range(3))


def attention_bound(causal):
    return bound(trace_torch(sdpa(is_causal=causal), qkv(B, H, L, D)))


def test_sdpa_cost_non_causal():
    b = attention_bound(False)
    (k,) = b.kernels
    rows = B * H * L  # query rows; keys S = L
    scores = rows * L
    assert k.flops["tc_bf16"] == 4 * B * H * L * L * D  # 2·L·L·D (QK^T) + 2·L·L·D (PV)
    assert k.flops["sfu"] == scores  # one exp per score
    # per score: max (1), FFMA scale-and-subtract (2), sum (1), minus the first term of each
    # row's max and sum; per row: m·scale (1); per output element: the divide (1)
    assert k.flops["cuda_fp32"] == 4 * scores - 2 * rows + rows + rows * D == 68_141_056
    assert set(k.flops) == {"tc_bf16", "sfu", "cuda_fp32"}
    assert k.bytes_read == 3 * QKV_BYTES and k.bytes_written == QKV_BYTES and k.exact
    assert b.bytes_unfused == b.bytes_fused == 4 * QKV_BYTES == 8_388_608


def test_sdpa_cost_causal_counts_the_unmasked_triangle_exactly():
    b = attention_bound(True)
    (k,) = b.kernels
    rows = B * H * L
    scores = B * H * L * (L + 1) // 2  # key s <= query l: l + 1 keys in row l
    assert k.flops["tc_bf16"] == 4 * B * H * D * L * (L + 1) // 2 == 2_149_580_800
    assert k.flops["sfu"] == scores
    assert k.flops["cuda_fp32"] == 4 * scores - rows + rows * D == 34_619_392
    assert b.bytes_unfused == 4 * QKV_BYTES


def test_sdpa_fp32_runs_on_tf32_tensor_cores():
    b = bound(trace_torch(sdpa(), qkv(1, 2, 64, 32, dtype=torch.float32)))
    assert b.kernels[0].flops["tc_tf32"] == 4 * 2 * 64 * 64 * 32


def test_sdpa_gqa_cost():
    hq, hkv = 8, 2
    q, k, v = meta(B, hq, 256, D), meta(B, hkv, 256, D), meta(B, hkv, 256, D)
    b = bound(trace_torch(sdpa(enable_gqa=True), (q, k, v)))
    assert b.kernels[0].flops["tc_bf16"] == 4 * B * hq * 256 * 256 * D
    assert b.bytes_unfused == 2 * B * D * 256 * (hq + 2 * hkv + hq)  # Q, K, V, O once


def test_sdpa_mask_is_read_once():
    mask = meta(B, 1, 1, L)  # additive padding mask, broadcast over heads and queries
    fn = sdpa_mask()
    b = bound(trace_torch(fn, (*qkv(B, H, L, D), mask)))
    assert b.bytes_unfused == 4 * QKV_BYTES + B * L * 2
    rows, scores = B * H * L, B * H * L * L
    # per score: scale FFMA... here mul + add (2), max (1), sub (1), sum (1); per row: the
    # all-masked test (1); per output element: divide and select (2)
    assert b.kernels[0].flops["cuda_fp32"] == 5 * scores - 2 * rows + rows + 2 * rows * D


def test_explicit_attention_pays_the_score_round_trips():
    """Written with matmul + softmax, attention is the kernels eager runs (bmm, mul, softmax,
    bmm): the score matrix goes through DRAM between them. SDPA does not; the fused bounds
    agree (both tensor-core bound, same graph inputs and outputs)."""

    def explicit(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) * (1 / math.sqrt(D)), -1) @ v

    xs = qkv(B, H, L, D)
    fused_b = bound(trace_torch(sdpa(), xs))
    explicit_b = bound(trace_torch(explicit, xs))
    ops = [k.op for k in explicit_b.kernels]
    assert ops == ["aten.bmm.default", "aten.mul.Tensor", "aten._softmax.default"] + [
        "aten.bmm.default"
    ]
    s_bytes = B * H * L * L * 2  # the bf16 score matrix
    # written by bmm, read and written by mul and by softmax, read by bmm
    assert explicit_b.bytes_unfused == 4 * QKV_BYTES + 6 * s_bytes
    assert fused_b.bytes_unfused == 4 * QKV_BYTES
    assert explicit_b.bytes_fused == fused_b.bytes_fused == 4 * QKV_BYTES
    assert explicit_b.flops["tc_bf16"] == fused_b.flops["tc_bf16"]
    assert explicit_b.fused == fused_b.fused
    assert fused_b.unfused == fused_b.fused < explicit_b.unfused


# ---------------------------------------------------------------------------- recurrent
def lstm(*a, **kw):
    torch.manual_seed(0)
    return nn.LSTM(*a, **kw).eval()


def gru(*a, **kw):
    torch.manual_seed(0)
    return nn.GRU(*a, **kw).eval()


def rnn(*a, **kw):
    torch.manual_seed(0)
    return nn.RNN(*a, **kw).eval()


X = rand(4, 2, 3)  # (T, B, I)
XB = rand(2, 4, 3)  # batch first
H0 = rand(1, 2, 5, seed=1)
C0 = rand(1, 2, 5, seed=2)

RECURRENT = [
    case(lstm(3, 5), X, id="lstm"),
    case(lstm(3, 5), X, (H0, C0), id="lstm_h0_c0"),
    case(lstm(3, 5, bias=False), X, id="lstm_no_bias"),
    case(lstm(3, 5, batch_first=True), XB, id="lstm_batch_first"),
    case(lstm(3, 5, num_layers=2), X, id="lstm_2_layers"),
    case(lstm(3, 5, bidirectional=True), X, id="lstm_bidirectional"),
    case(
        lstm(3, 5, num_layers=2, bidirectional=True, batch_first=True),
        XB,
        (rand(4, 2, 5, seed=3), rand(4, 2, 5, seed=4)),
        id="lstm_deep_bi_batch_first_h0_c0",
    ),
    case(lstm(3, 5, proj_size=2), X, id="lstm_proj"),
    case(lstm(3, 5, num_layers=2, bidirectional=True, proj_size=2), X, id="lstm_proj_deep_bi"),
    case(lstm(3, 5), X[:, 0], id="lstm_unbatched"),
    case(lstm(3, 5, num_layers=3, dropout=0.5), X, id="lstm_dropout_eval"),
    case(gru(3, 5), X, id="gru"),
    case(gru(3, 5, bias=False), X, H0, id="gru_no_bias_h0"),
    case(gru(3, 5, num_layers=2, bidirectional=True, batch_first=True), XB, id="gru_deep_bi"),
    case(rnn(3, 5), X, id="rnn_tanh"),
    case(rnn(3, 5, nonlinearity="relu", bias=False), X, H0, id="rnn_relu_no_bias_h0"),
    case(rnn(3, 5, num_layers=2, bidirectional=True), X, id="rnn_deep_bi"),
    case(rnn(3, 5, nonlinearity="relu", batch_first=True, bidirectional=True), XB, id="relu_bi"),
]


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("fn, inputs", RECURRENT)
def test_recurrent_executes_like_pytorch(fn, inputs):
    trace = check(fn, *inputs)
    layers = [k for k in trace.program.kernels if k.op.startswith("solar.")]
    assert len(layers) == fn.num_layers  # ONE kernel per layer, both directions in it
    steps = inputs[0].shape[1 if fn.batch_first and inputs[0].ndim == 3 else 0]
    assert all(k.loops == (Dim("t", steps),) for k in layers)
    others = {k.op for k in trace.program.kernels} - {k.op for k in layers}
    assert others <= {"aten.zeros.default"}  # nn.RNN* create a zero initial state, as in eager


def test_recurrent_bf16():
    m = lstm(8, 16, num_layers=2).to(torch.bfloat16)
    x = rand(6, 3, 8, dtype=torch.bfloat16)
    trace = trace_torch(m, x)
    got = execute(trace.program, trace.values(m, (x,)))
    with torch.no_grad():
        want = pytree.tree_leaves(m(x))
    for name, w in zip(trace.output_names, want, strict=True):  # gates in fp32 here, bf16 on CPU
        torch.testing.assert_close(got[name].float(), w.float(), rtol=0.05, atol=0.05)


def test_recurrent_training_dropout_is_refused():
    m = nn.LSTM(3, 5, num_layers=2, dropout=0.3)  # training mode
    with pytest.raises(UnsupportedOperatorError, match=r"solar\.lstm.*dropout=0\.3"):
        trace_torch(m, X)


def test_packed_sequence_is_refused():
    m = lstm(3, 5)

    def packed(x, batch_sizes):
        hx = (torch.zeros(1, 2, 5), torch.zeros(1, 2, 5))
        return torch._VF.lstm(x, batch_sizes, hx, m._flat_weights, True, 1, 0.0, False, False)

    with pytest.raises(UnsupportedOperatorError, match="PackedSequence"):
        trace_torch(packed, (rand(7, 3), torch.tensor([2, 2, 2, 1])))


def test_lstm_kernel_structure():
    trace = trace_torch(lstm(3, 5, bidirectional=True), (X, (rand(2, 2, 5), rand(2, 2, 5))))
    (k,) = trace.program.kernels
    text = str(trace.program)
    assert "for t<4 (sequential):" in text
    assert "input[t,b,i]" in text and "input[-t+3,b,i]" in text  # forward and reverse steps
    assert "lstm_output[-t+3,b,p+5]" in text  # the reverse half of the output
    locals_ = {n for n, t in trace.program.tensors.items() if t.role == "local"}
    assert {"lstm_l0_gates", "lstm_l0_h", "lstm_l0_c", "lstm_l0_reverse_gates"} <= locals_


T_, B_, I_, H_ = 16, 4, 32, 64


@dataclass
class KernelCost:
    flops: dict[str, int]
    bytes_read: int
    bytes_written: int
    exact: bool


@dataclass
class Costs:
    kernels: list[KernelCost]
    bytes_fused: int

    @property
    def bytes_unfused(self) -> int:
        return sum(k.bytes_read + k.bytes_written for k in self.kernels)


def ir_costs(program):
    """The IR's cost facts (solar.ir.cost) per kernel, as the bounds report them."""
    kernels = []
    for k in program.kernels:
        flops: Counter[str] = Counter()
        for st in k.statements:
            flops.update(statement_ops(program, st, k))
        io = kernel_io(program, k)
        kernels.append(KernelCost(dict(flops), io.read_bytes, io.write_bytes, io.exact))
    return Costs(kernels, program_io(program).bytes)


def costs_of(trace):
    """The IR's cost facts, checked to be what the bounds report (einsum graph and backend)."""
    costs = ir_costs(trace.program)
    b = bound(trace)
    assert [k.flops for k in b.kernels] == [k.flops for k in costs.kernels]
    assert [(k.bytes_read, k.bytes_written) for k in b.kernels] == [
        (k.bytes_read, k.bytes_written) for k in costs.kernels
    ]
    assert (b.bytes_unfused, b.bytes_fused) == (costs.bytes_unfused, costs.bytes_fused)
    assert b.fused <= b.unfused
    return costs


def recurrent_kernel(module, *state):
    x = meta(T_, B_, I_)
    b = costs_of(trace_torch(module.to(torch.bfloat16), (x, *state)))
    (k,) = b.kernels
    return k, b


def test_lstm_layer_cost_by_hand():
    """One bf16 LSTM layer, h0 and c0 given. Per step, the gate contractions W_ih·x_t and
    W_hh·h_{t-1} on tensor cores; per step and hidden unit the cell: c = σ(i)·tanh(g) + σ(f)·c
    (σ = 2 flops + 1 MUFU, tanh = 1 MUFU, 2 mul, 1 add: 7 flops, 3 MUFU) and h = σ(o)·tanh(c)
    (3 flops, 2 MUFU); once per layer the combined bias b_ih + b_hh (4H adds). The biases are
    the gate accumulators' initial values (no per-step add)."""
    with torch.device("meta"):
        m = nn.LSTM(I_, H_)
    k, b = recurrent_kernel(m, (meta(1, B_, H_), meta(1, B_, H_)))
    assert k.flops["tc_bf16"] == T_ * B_ * 2 * 4 * H_ * (I_ + H_) == 3_145_728
    assert k.flops["cuda_fp32"] == 10 * T_ * B_ * H_ + 4 * H_ == 41_216
    assert k.flops["sfu"] == 5 * T_ * B_ * H_ == 20_480
    assert set(k.flops) == {"tc_bf16", "cuda_fp32", "sfu"}
    # reads x, W_ih, W_hh, b_ih, b_hh, h0, c0; writes the sequence, h_n, c_n (bf16, once each)
    reads = T_ * B_ * I_ + 4 * H_ * I_ + 4 * H_ * H_ + 2 * 4 * H_ + 2 * B_ * H_
    assert k.bytes_read == 2 * reads == 55_296
    assert k.bytes_written == 2 * (T_ * B_ * H_ + 2 * B_ * H_) == 9_216
    assert b.bytes_unfused == b.bytes_fused


def test_gru_layer_cost_by_hand():
    """r = σ(gi_r + gh_r), z = σ(gi_z + gh_z): 3 flops + 1 MUFU each; n = tanh(gi_n + r·gh_n):
    2 flops + 1 MUFU; h = n + z·(h - n): 3 flops. Both biases initialise their accumulators."""
    with torch.device("meta"):
        m = nn.GRU(I_, H_)
    k, _ = recurrent_kernel(m, meta(1, B_, H_))
    assert k.flops["tc_bf16"] == T_ * B_ * 2 * 3 * H_ * (I_ + H_)
    assert k.flops["cuda_fp32"] == 11 * T_ * B_ * H_
    assert k.flops["sfu"] == 3 * T_ * B_ * H_


@pytest.mark.parametrize("nonlinearity, alu, sfu", [("tanh", 0, 1), ("relu", 1, 0)])
def test_rnn_layer_cost_by_hand(nonlinearity, alu, sfu):
    with torch.device("meta"):
        m = nn.RNN(I_, H_, nonlinearity=nonlinearity)
    k, _ = recurrent_kernel(m, meta(1, B_, H_))
    assert k.flops["tc_bf16"] == T_ * B_ * 2 * H_ * (I_ + H_)
    assert k.flops.get("cuda_fp32", 0) == alu * T_ * B_ * H_ + H_  # + the bias combine
    assert k.flops.get("sfu", 0) == sfu * T_ * B_ * H_


def test_layers_pass_their_sequence_through_dram():
    """Two layers are two kernels: the first writes its output sequence, the second reads it
    (cuDNN's standard algorithm does the same); the fused bound keeps it on chip."""
    with torch.device("meta"):
        m = nn.GRU(I_, H_, num_layers=2)
    b = costs_of(trace_torch(m.to(torch.bfloat16), (meta(T_, B_, I_), meta(2, B_, H_))))
    k0, k1 = b.kernels
    seq = 2 * T_ * B_ * H_
    assert k0.bytes_written == seq + 2 * B_ * H_
    weights1 = 2 * (3 * H_ * H_ * 2 + 2 * 3 * H_)
    assert k1.bytes_read == seq + weights1 + 2 * B_ * H_
    assert b.bytes_unfused - b.bytes_fused == 2 * seq


# ------------------------------------------------------------------------------- einsum
def run_einsum(eq, *shapes, dtype=torch.float64):
    xs = [rand(*s, dtype=dtype, seed=i) for i, s in enumerate(shapes)]

    def f(*ops):
        return torch.einsum(eq, *ops)

    trace = check(f, *xs)
    flops = sum(bound(trace).flops.values())
    return trace, flops, xs


def ein(eq, *shapes):
    return pytest.param(eq, shapes, id=eq)


EINSUMS = [
    ein("ij,jk->ik", (3, 4), (4, 5)),
    ein("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    ein("bij,jk->bik", (2, 3, 4), (4, 6)),
    ein("ij,jk,kl->il", (20, 2), (2, 30), (30, 3)),
    ein("bij,bjk,bkl->bil", (2, 3, 4), (2, 4, 5), (2, 5, 6)),
    ein("abc,cd,de,ef->abf", (2, 3, 4), (4, 5), (5, 6), (6, 7)),
    ein("bi,oij,bj->bo", (4, 3), (5, 3, 6), (4, 6)),
    ein("ii,ij->j", (3, 3), (3, 4)),
    ein("...ij,...jk->...ik", (2, 1, 3, 4), (5, 4, 6)),
    ein("ij,jk->ijk", (2, 3), (3, 4)),
    ein("ij,ij->ij", (2, 3), (2, 3)),
    ein("i,j,k->ijk", (2,), (3,), (4,)),
    ein("bij,bij->b", (2, 3, 4), (2, 3, 4)),
]


@pytest.mark.parametrize("eq, shapes", EINSUMS)
def test_einsum_flops_are_opt_einsums_path_cost(eq, shapes):
    """torch.einsum contracts pairwise along opt_einsum's path (≥ 3 operands), each pair as a
    bmm (or a mul when nothing is summed). opt_einsum's cost of a pairwise step is
    Π(extents of its indices) · (1 + [some index is summed]): 2 flops per multiply-add of a
    contraction, 1 per product otherwise, the same convention as the IR's (an FMA is 2 flops,
    a lone mul 1). So when no index is summed inside a single operand, the totals agree."""
    with torch.backends.opt_einsum.flags(enabled=True, strategy="auto"):
        trace, flops, xs = run_einsum(eq, *shapes)
        path, info = opt_einsum.contract_path(eq, *xs, optimize="auto")
    assert flops == info.opt_cost
    ops = {k.op for k in trace.program.kernels}
    assert ops <= {"aten.bmm.default", "aten.mul.Tensor", "aten.clone.default"}


def test_einsum_path_matters():
    """Left to right (opt_einsum disabled) the chain costs 2·(20·2·30 + 20·30·3) = 6000 flops;
    opt_einsum's path contracts jk,kl first: 2·(2·30·3 + 20·2·3) = 600."""
    shapes = (20, 2), (2, 30), (30, 3)
    with torch.backends.opt_einsum.flags(enabled=False):
        _, flops, _ = run_einsum("ij,jk,kl->il", *shapes)
    assert flops == 6000
    with torch.backends.opt_einsum.flags(enabled=True, strategy="auto"):
        _, flops, _ = run_einsum("ij,jk,kl->il", *shapes)
    assert flops == 600


def test_einsum_lone_summed_index_is_reduced_first():
    """``k`` appears only in the second operand: torch sums it out first (J·(K-1) adds), then
    contracts ``ij,j->i`` (2·I·J); opt_einsum prices the step 2·I·J·K."""
    i, j, k = 3, 4, 5
    trace, flops, xs = run_einsum("ij,jk->i", (i, j), (j, k))
    assert flops == j * (k - 1) + 2 * i * j
    assert opt_einsum.contract_path("ij,jk->i", *xs)[1].opt_cost == 2 * i * j * k


@pytest.mark.parametrize(
    "eq, shapes",
    [
        ein("ii->i", (3, 3)),
        ein("ii->", (4, 4)),
        ein("bii->bi", (2, 3, 3)),
        ein("ij->ji", (2, 3)),
        ein("ij->", (2, 3)),
        ein("i,i->", (5,), (5,)),
        ein("ij,kj->ikj", (2, 3), (4, 3)),
        ein("bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5)),
        ein("...d,...d->...", (2, 3, 4), (3, 4)),
        ein("ab,bc,cd,de->ae", (2, 3), (3, 4), (4, 5), (5, 6)),
    ],
)
def test_einsum_executes(eq, shapes):
    run_einsum(eq, *shapes, dtype=torch.float32)
