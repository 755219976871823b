"""Models as people call them: any input/output structure, Hugging Face models with their
defaults, LLM prefill and decode steps (the decode bound checked by hand), train mode and random
kernels, the kernels CUDA really launches (fused dropout, RNN cells, the transformer fast
paths), constructors that cannot run on meta, and view copies.

Every count below is derived by hand in the comment next to it; every executed IR is compared
with eager PyTorch on CPU.
"""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import pytest
import torch
import torch.nn.functional as F
from console import run_solar
from torch import nn

import solar
from solar.frontend.torch import UnsupportedOperatorError, trace_torch
from solar.frontend.torch.structure import tensors
from solar.gpu.randomness import compare_statistics, random_outputs
from solar.gpu.subject import make_subject
from solar.gpu.validate import validate, validate_subject
from solar.hw import load_spec
from solar.interp.torch.execute import execute
from solar.ir.cost import program_io
from solar.llm import decode_step, prefill
from solar.problem import load_problem

transformers = pytest.importorskip("transformers")
BW = load_spec("H100").dram_bandwidth


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def run_ir(fn, inputs, kwargs=None, seed=None):
    """The IR's outputs and eager's, in the trace's output order (both re-seeded if asked)."""
    t = trace_torch(fn, inputs, kwargs=kwargs)
    if seed is not None:
        torch.manual_seed(seed)
    got = execute(t.program, t.values(fn, inputs, kwargs))
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        want = tensors(fn(*inputs, **(kwargs or {})), unique=False)
    assert len(want) == len(t.output_names)
    return t, [got[n] for n in t.output_names], want


def assert_same(got, want, tol=1e-5):
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=tol, atol=tol)


# ------------------------------------------------------------------------------ structures


@dataclasses.dataclass
class Pair:
    first: torch.Tensor
    second: torch.Tensor


class Holder:
    """An object that merely holds tensors (like a KV cache)."""

    def __init__(self, layers):
        self.layers = layers
        self.device = layers[0]["k"].device


Out = namedtuple("Out", "y z")


def test_any_output_structure_is_flattened_in_order():
    def f(x):
        return {"a": x + 1, "pair": Pair(x * 2, x - 1), "nt": Out(x.sum(0), None), "n": 3}

    x = rand(3, 4)
    t, got, want = run_ir(f, (x,))
    assert len(t.output_names) == 4  # a, pair.first, pair.second, nt.y (None and 3 are not)
    assert_same(got, want)


def test_inputs_dicts_dataclasses_objects_and_kwargs():
    def f(x, cache, pair, *, scale):
        k = cache.layers[0]["k"] + cache.layers[1]["k"]
        return (x @ k) * scale + pair.first - pair.second

    layers = [{"k": rand(4, 5, seed=1)}, {"k": rand(4, 5, seed=2)}]
    cache, pair = Holder(layers), Pair(rand(3, 5, seed=3), rand(3, 5, seed=4))
    before = (cache.layers, cache.layers[0], cache.layers[0]["k"])
    t, got, want = run_ir(f, (rand(3, 4), cache, pair), {"scale": rand(5, seed=5)})
    assert_same(got, want)
    assert set(t.bindings.values()) >= {
        ("input", 0),
        ("input", (1, solar.frontend.torch.structure.Attr("layers"), 0, "k")),
        ("kwarg", ("scale",)),
    }
    # the caller's objects are untouched by the trace
    assert (cache.layers, cache.layers[0], cache.layers[0]["k"]) == before


def test_one_tensor_passed_twice_is_one_input():
    x = torch.empty(1024, dtype=torch.float32, device="meta")
    b = solar.bound(lambda a, c: a * c, [x, x])
    assert b.bytes_fused == 1024 * 4 + 1024 * 4  # x read once, the product written


# ------------------------------------------------------------------------- Hugging Face


def tiny_llama(layers=2, dtype=torch.float32, device="meta", seed=0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
        max_position_embeddings=256,
    )
    with torch.device(device):
        return transformers.LlamaForCausalLM(cfg).to(dtype).eval()


def test_hf_llama_called_with_defaults_returns_logits_and_its_cache():
    model = tiny_llama(device="cpu")
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(0))
    t, got, want = run_ir(model, (ids,))
    # logits, then the DynamicCache's keys and values of 2 layers
    assert len(t.output_names) == 1 + 2 * 2
    assert [tuple(w.shape) for w in want[1:]] == [(2, 2, 8, 16)] * 4
    assert_same(got, want, tol=2e-3)  # fp32 SDPA runs on TF32 tensor cores in the IR
    assert model.training is False


def test_gpt2_left_in_train_mode_draws_dropout_and_says_so():
    cfg = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=50, n_positions=64)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).train()
    ids = torch.randint(0, 50, (1, 16))
    t = trace_torch(model, (ids,))
    ops = [k.op for k in t.program.kernels]
    assert ops.count("aten.native_dropout.default") == 3  # embeddings, attention out, MLP out
    assert any("traced in train mode" in a for a in t.assumptions)
    assert any("random kernel(s)" in a and "solar.sdpa" in a for a in t.assumptions)
    report = validate(model, [ids])
    assert report.ok, report.summary()
    assert any(n.startswith("random kernels:") for n in report.notes)


# ----------------------------------------------------------------------------- LLM phases


def test_decode_step_bound_by_hand():
    """A bf16 decode step, batch 4, 64 cached tokens, 2 layers of width 64 (2 KV heads of 16):
    the fused bound is the bytes every weight, the KV cache and the I/O need, once."""
    model = tiny_llama(dtype=torch.bfloat16)
    batch, context, layers, hidden, kv_width, vocab = 4, 64, 2, 64, 2 * 16, 100
    b = solar.bound(*decode_step(model, batch=batch, context=context), hw="H100")
    params = sum(p.numel() for p in model.parameters())
    weights = (params - vocab * hidden) * 2  # every weight but the embedding table, bf16
    embedding = hidden * 2  # a gather reads at least one row (the provable minimum)
    inv_freq = 8 * 2  # the rotary buffer (head dim 16 / 2), bf16
    kv_read = 2 * layers * batch * context * kv_width * 2  # the cached keys and values
    kv_written = 2 * layers * batch * 1 * kv_width * 2  # the new token's, in place
    ids = 2 * batch * 8  # input ids and positions, int64
    counters = layers * 8  # the cache's position counters, set to `context` (int64)
    logits = batch * vocab * 2
    total = weights + embedding + inv_freq + kv_read + kv_written + ids + counters + logits
    assert params == 86_848
    assert b.bytes_fused == total == 228_480
    # DRAM binds the throughput bound; so small a step is below one kernel launch (0.5 us)
    assert b.latency.throughput["fused"] == pytest.approx(total / BW, rel=1e-12)
    assert b.fused == max(total / BW, 0.5e-6) and b.fused_bound_by == "latency"


def test_dynamic_cache_decode_rewrites_the_whole_cache():
    """HF's DynamicCache concatenates: the step reads the S cached tokens and writes S + 1
    (returned), where the static cache writes one slot."""
    model = tiny_llama(dtype=torch.bfloat16)
    batch, context, layers, kv_width = 4, 64, 2, 32
    static = solar.bound(*decode_step(model, batch=batch, context=context))
    dynamic = solar.bound(*decode_step(model, batch=batch, context=context, cache="dynamic"))
    slot = 2 * layers * batch * kv_width * 2  # one token's keys and values, all layers
    counters = layers * 8
    assert dynamic.bytes_fused - static.bytes_fused == context * slot - counters


def test_prefill_outputs_logits_and_the_new_cache():
    model = tiny_llama()
    t = trace_torch(*prefill(model, batch=2, context=32))
    assert len(t.output_names) == 1 + 2 * 2
    cache_io = program_io(t.program).writes
    assert (
        sum(f.elements for n, f in cache_io.items() if n != t.output_names[0])
        >= 4 * 2 * 2 * 32 * 16
    )


@pytest.mark.parametrize("cache", ["static", "dynamic"])
def test_decode_step_validates_and_can_run_again(cache):
    model = tiny_llama(device="cpu")
    phase = decode_step(model, batch=2, context=16, cache=cache)
    first = validate(*phase)
    second = validate(*phase)  # the step leaves the cache ready for the next run
    assert first.ok and second.ok, (first.summary(), second.summary())
    assert second.outputs[0].rel_err == pytest.approx(first.outputs[0].rel_err)


def test_decode_roofline_tokens_per_second_grows_with_batch():
    model = tiny_llama(dtype=torch.bfloat16)
    sw = solar.sweep(None, lambda n: decode_step(model, n, 64), [1, 8, 64], param="batch")
    rates = [n / t for n, t in zip(sw.sizes, sw.times("fused"), strict=True)]
    assert rates[0] < rates[1] < rates[2]
    b = sw.bounds[0]  # batch 1: the bytes bind the throughput bound (below one launch here)
    assert b.latency.throughput["fused"] == pytest.approx(b.bytes_fused / BW, rel=1e-12)


# ---------------------------------------------------------------------- random and train


RANDOM = [
    ("rand", lambda x: x + torch.rand(8, 64)),
    ("randn", lambda x: x + torch.randn(8, 64)),
    ("randint", lambda x: x + torch.randint(0, 5, (8, 64))),
    ("randint_like", lambda x: torch.randint_like(x, 3, 9)),
    ("rand_like", lambda x: torch.rand_like(x) * x),
    ("normal", lambda x: torch.normal(x, 2.0)),
    ("normal_tt", lambda x: torch.normal(x, x.abs())),
    ("bernoulli_p", lambda x: torch.bernoulli(x, 0.3)),
    ("bernoulli", lambda x: torch.bernoulli(x.sigmoid())),
    ("bernoulli_", lambda x: torch.empty_like(x).bernoulli_(0.3)),
    ("uniform_", lambda x: x.clone().uniform_(-2, 3)),
    ("normal_", lambda x: x.clone().normal_(1, 2)),
    ("exponential_", lambda x: x.clone().exponential_(2.0)),
    ("random_", lambda x: x.clone().random_(9)),
    ("random_from", lambda x: x.clone().random_(-3, 5)),
    ("randperm", lambda x: x[torch.randperm(8)]),
    ("native_dropout", lambda x: torch.ops.aten.native_dropout(x, 0.25, True)),
    ("native_dropout_train_none", lambda x: torch.ops.aten.native_dropout(x, 0.25, None)),
]


@pytest.mark.parametrize("fn", [f for _, f in RANDOM], ids=[n for n, _ in RANDOM])
def test_random_kernels_reproduce_eager_when_reseeded(fn):
    """Each random operator is a kernel whose values are drawn with the generator call the
    operator makes: after the same seed, the IR gives eager's values exactly (on CPU)."""
    t, got, want = run_ir(fn, (rand(8, 64),), seed=7)
    assert_same(got, want, tol=0)
    assert any("random kernel(s)" in a for a in t.assumptions)


def test_dropout_in_eval_mode_is_a_copy_of_a_strided_input():
    """The fake kernel returns its input; the CPU and CUDA kernels a (contiguous) clone."""
    fn = lambda x: torch.ops.aten.native_dropout(x[1:, ::2], 0.25, False)  # noqa: E731
    t, got, want = run_ir(fn, (rand(8, 64),))
    assert_same(got, want, tol=0)
    assert [k.op for k in t.program.kernels] == ["aten.native_dropout.default"]


def test_a_random_value_costs_one_op():
    b = solar.bound(lambda x: torch.randn(8, 64), [torch.empty(1)])
    (k,) = b.kernels
    assert k.flops == {"cuda_fp32": 8 * 64} and k.bytes_written == 8 * 64 * 4


def test_dropout_in_train_mode_is_cudas_fused_kernel():
    """``nn.Dropout`` in train mode: ONE kernel reading x and writing the output and the bool
    mask (the CPU would record empty_like, bernoulli_, div_, mul); in eval: nothing."""
    x = torch.empty(256, 1024, device="meta")
    drop = nn.Dropout(0.1)
    b = solar.bound(drop.train(), [x])
    (k,) = b.kernels
    assert k.op == "aten.native_dropout.default"
    n = 256 * 1024
    assert k.bytes_read == 4 * n and k.bytes_written == 4 * n + 1 * n
    # per element: the draw into the bool mask (an integer op), then mask * x and * 1/(1-p)
    assert k.flops == {"cuda_int32": n, "cuda_fp32": 2 * n}
    assert any("traced in train mode" in a for a in b.assumptions)
    assert trace_torch(drop.eval(), (x,)).program.kernels == []


def test_statistics_tell_two_draws_apart_from_a_wrong_kernel():
    x = rand(64, 256)
    torch.manual_seed(1)
    a = F.dropout(x, 0.2, True)
    torch.manual_seed(2)
    b = F.dropout(x, 0.2, True)
    assert not torch.equal(a, b)
    assert compare_statistics(a, b, tol=1e-4, name="out").ok
    assert not compare_statistics(a * 1.5, b, tol=1e-4, name="out").ok  # wrong scale
    assert not compare_statistics(x, b, tol=1e-4, name="out").ok  # no dropout at all


def test_random_outputs_follow_the_dataflow():
    t = trace_torch(lambda x: (x + 1, F.dropout(x, 0.5, True) * 2), (rand(4, 8),))
    first, second = t.output_names
    assert random_outputs(t.program, t.output_names) == {second}


def test_lstm_with_a_randn_initial_state():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(8, 16, batch_first=True)

        def forward(self, x):
            h0, c0 = torch.randn(1, x.size(0), 16), torch.randn(1, x.size(0), 16)
            return self.lstm(x, (h0, c0))[0]

    torch.manual_seed(0)
    t, got, want = run_ir(M().eval(), (rand(2, 5, 8),), seed=3)
    assert [k.op for k in t.program.kernels][:2] == ["aten.randn.default"] * 2
    assert_same(got, want)


# ------------------------------------------------------------- what CUDA really launches


def test_multihead_attention_eval_fast_path():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(64, 4, batch_first=True).eval()
    x = rand(2, 8, 64)
    t, got, want = run_ir(mha, (x, x, x))  # need_weights=True: the math path
    assert [k.op.removeprefix("aten.") for k in t.program.kernels] == [
        "mm.default", "_transform_bias_rescale_qkv.default", "bmm.default",
        "_softmax.out", "bmm.default", "clone.default", "addmm.default",
        "sum.dim_IntList", "div.Tensor",
    ]  # fmt: skip
    scores, probs = t.program.kernels[2], t.program.kernels[3]
    assert probs.statements[-1].out.tensor == scores.statements[-1].out.tensor  # in place
    assert_same(got, want)


def test_transformer_encoder_layer_eval_fast_path():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True).eval()
    t, got, want = run_ir(layer, (rand(2, 8, 64),))
    assert [k.op.removeprefix("aten.") for k in t.program.kernels] == [
        "addmm.default", "solar.sdpa.default", "addmm.default", "add_.Tensor",
        "native_layer_norm.default", "_addmm_activation.default", "addmm.default",
        "add_.Tensor", "native_layer_norm.default",
    ]  # fmt: skip
    assert_same(got, want, tol=2e-3)  # attention on TF32 tensor cores
    # train mode (or grad) takes the slow path, as eager does
    train = [k.op for k in trace_torch(layer.train(), (rand(2, 8, 64),)).program.kernels]
    assert "aten._addmm_activation.default" not in train


def test_transformer_encoder_with_padding_mask_reads_k_and_v_from_their_own_slices():
    """With a key padding mask the fast path runs ``_transform_bias_rescale_qkv`` and
    ``_masked_softmax``. The transposed K that feeds ``bmm`` is a view the trace declares at
    k's own offset: an IR laying q, k, v out differently from the trace read q for k (found on
    an H100, where the 6-layer example failed validation from its second layer on)."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    with torch.no_grad():
        for p in enc.parameters():
            p.normal_()  # default biases are zero: k's and q's slices would look alike
    mask = torch.zeros(2, 8, dtype=torch.bool)
    mask[1, 6:] = True

    class Encoder(nn.Module):  # the example's form: the module's parameters are weights
        def __init__(self):
            super().__init__()
            self.enc = enc

        def forward(self, x, m):
            return self.enc(x, src_key_padding_mask=m)

    t, got, want = run_ir(Encoder().eval(), (rand(2, 8, 16), mask))
    assert sum(k.op == "aten._transform_bias_rescale_qkv.default" for k in t.program.kernels) == 2
    assert_same(got, want, tol=2e-3)


def test_lstm_cell_is_two_gemms_and_the_fused_cell_kernel():
    torch.manual_seed(0)
    cell = nn.LSTMCell(32, 16)
    hx = (rand(4, 16, seed=1), rand(4, 16, seed=2))
    t, got, want = run_ir(cell, (rand(4, 32), hx))
    assert [k.op for k in t.program.kernels] == [
        "aten.mm.default", "aten.mm.default", "solar.lstm_cell.default"
    ]  # fmt: skip
    assert_same(got, want)
    b = solar.bound_program(t.program)
    k = b.kernels[2]
    # reads both gate blocks (4 x 64), cx (4 x 16) and both biases (64); writes hy and cy
    assert k.bytes_read == 4 * (2 * 4 * 64 + 4 * 16 + 2 * 64)
    assert k.bytes_written == 4 * (2 * 4 * 16)


def test_gru_cell_is_two_gemms_and_the_fused_cell_kernel():
    torch.manual_seed(0)
    t, got, want = run_ir(nn.GRUCell(32, 16), (rand(4, 32), rand(4, 16, seed=1)))
    assert [k.op for k in t.program.kernels][-1] == "solar.gru_cell.default"
    assert_same(got, want)


VIEW_COPIES = [
    ("view_copy", lambda x: torch.ops.aten.view_copy(x, (48,))),
    ("view_copy_reshape", lambda x: torch.ops.aten.view_copy(x.t(), (6, 8))),
    ("permute_copy", lambda x: torch.ops.aten.permute_copy(x.t(), (1, 0))),
    ("as_strided_copy", lambda x: torch.ops.aten.as_strided_copy(x, (3, 3), (9, 1))),
    ("unbind_copy", lambda x: torch.ops.aten.unbind_copy(x, 1)),
    ("as_strided_", lambda x: x.clone().as_strided_((4, 4), (8, 1)) * 3),
    ("as_strided_scatter", lambda x: torch.as_strided_scatter(x, x[:3, :3] * 2, (3, 3), (9, 1))),
    (
        "as_strided_scatter_gaps",
        lambda x: torch.as_strided_scatter(x[1:, ::2], x[:3, :3] * 2, (3, 3), (9, 1)),
    ),
]


@pytest.mark.parametrize("fn", [f for _, f in VIEW_COPIES], ids=[n for n, _ in VIEW_COPIES])
def test_view_copies(fn):
    _, got, want = run_ir(fn, (rand(6, 8),))
    assert_same(got, want, tol=0)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.complex64])
def test_view_copy_to_another_dtype_copies_the_bytes(dtype):
    fn = lambda x: torch.ops.aten.view_copy(x, dtype)  # noqa: E731
    t, got, want = run_ir(fn, (rand(6, 8),))
    assert [k.op for k in t.program.kernels] == ["aten.view_copy.dtype"]
    assert_same(got, want, tol=0)


# ----------------------------------------------------------------------------- programs


def test_a_constructor_that_reads_values_is_built_on_the_cpu_and_says_so():
    problem = load_problem("examples/model_swin_block.py")
    assert any("built on the CPU with real weights" in n for n in problem.notes)
    _, g = solar.api.lift_problem(problem)
    b = solar.api.bound_graph(g, "H100")
    assert any("built on the CPU" in a for a in b.assumptions)


def test_train_mode_problem_files_stay_in_train_mode():
    problem = load_problem("examples/model_mlp_dropout_train.py")
    assert problem.model.training
    assert not load_problem("examples/mlp.py").model.training


def test_tracing_leaves_a_forwards_plain_attributes_alone():
    from solar.problem import load_module

    module = load_module("examples/model_vanilla_rnn_state.py")
    module.BATCH, module.INPUT, module.HIDDEN, module.OUTPUT = 2, 8, 16, 4
    model = module.Model()
    hidden = model.hidden
    subject = make_subject(model, [rand(2, 8)])
    assert model.hidden is hidden  # not a fake tensor left by the trace
    assert validate_subject(subject).ok


def test_keyword_arguments_reach_validation():
    lin = nn.Linear(4, 4)
    subject = make_subject(lambda x, *, bias: lin(x) + bias, [rand(2, 4)], kwargs={"bias": rand(4)})
    assert validate_subject(subject).ok


def test_a_value_read_in_forward_is_a_one_line_error(tmp_path):
    f = tmp_path / "problem.py"
    f.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        n = int(x.sum().item())\n"
        "        return x * n\n"
        "def get_inputs():\n"
        "    return [torch.randn(4, 4)]\n"
    )
    code, out, err = run_solar("bound", f)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "aten._local_scalar_dense" in err and "problem.py:4" in err


def test_a_padded_batch_turned_into_nested_tensors_is_refused_with_a_way_out():
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2).eval()  # enable_nested_tensor=True by default
    mask = torch.zeros(2, 8, dtype=torch.bool)
    with pytest.raises(UnsupportedOperatorError, match="enable_nested_tensor=False"):
        trace_torch(lambda x, m: enc(x, src_key_padding_mask=m), (rand(2, 8, 64), mask))
