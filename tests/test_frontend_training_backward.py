"""Training steps of real transformers models (GPT-2, BERT, T5, LLaMA; tiny configs, train mode,
the config's default dropout) bounded end to end, and the operators added for them and for
other real models executed against PyTorch: slice/select backward and scatters, the pointwise
backward of activations and losses, average-pooling backward, ``_cdist_backward``,
``searchsorted``/``bucketize``. Counts are checked by the counting oracle
(``oracle_cases_backward``); here, values and a few counts by hand."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from eager_oracle import check
from test_training import run_and_compare

import solar
from solar.frontend.torch import trace_torch
from solar.ir.cost import kernel_io, statement_ops

transformers = pytest.importorskip("transformers")
aten = torch.ops.aten


def rand(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def tiny(name: str, dropout: bool = True):
    """A tiny model of each family, its default dropout kept (or every dropout set to 0)."""
    tf = transformers
    off = {} if dropout else {"gpt2": dict(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)}
    if name == "gpt2":
        cfg = dict(n_layer=2, n_head=2, n_embd=32, vocab_size=101, n_positions=32)
        return tf.GPT2LMHeadModel(tf.GPT2Config(**cfg, **off.get(name, {})))
    if name == "bert":
        p = {} if dropout else dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        cfg = dict(num_hidden_layers=2, num_attention_heads=2, hidden_size=32, vocab_size=101)
        return tf.BertForMaskedLM(
            tf.BertConfig(**cfg, intermediate_size=64, max_position_embeddings=32, **p)
        )
    if name == "t5":
        p = {} if dropout else dict(dropout_rate=0.0)
        cfg = dict(num_layers=2, num_decoder_layers=2, num_heads=2, d_model=32, d_kv=16)
        return tf.T5ForConditionalGeneration(tf.T5Config(**cfg, d_ff=64, vocab_size=101, **p))
    cfg = dict(num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, hidden_size=32)
    return tf.LlamaForCausalLM(
        tf.LlamaConfig(**cfg, intermediate_size=64, vocab_size=101, max_position_embeddings=32)
    )


def _inputs(name: str, ids: torch.Tensor) -> tuple:
    return (ids, torch.ones_like(ids), ids[:, :5].contiguous()) if name == "t5" else (ids,)


def _loss(name: str, ids: torch.Tensor):
    labels = ids[:, :5].contiguous() if name == "t5" else ids
    return lambda out: F.cross_entropy(out.logits.flatten(0, 1).float(), labels.flatten())


MODELS = ["gpt2", "bert", "t5", "llama"]


@pytest.mark.parametrize("name", MODELS)
def test_transformers_training_step_with_default_dropout_is_bounded(name):
    """Train mode, the config's dropout, ``loss.backward()``, AdamW: every operator lowered
    (LLaMA's rotary ``rotate_half`` differentiates into ``slice_backward``)."""
    torch.manual_seed(0)
    model = tiny(name).train()
    ids = torch.randint(0, 101, (2, 8))
    b = solar.bound_training(model, _inputs(name, ids), "H100", loss=_loss(name, ids))
    ops = {k.op for k in b.kernels}
    assert b.fused > 0 and {k.phase for k in b.kernels} == {"forward", "backward", "optimizer"}
    if name != "llama":  # LLaMA's config has no dropout
        assert "aten.native_dropout_backward.default" in ops
    if name == "llama":
        assert "aten.slice_backward.default" in ops


@pytest.mark.parametrize("name", MODELS)
def test_transformers_training_step_ir_equals_the_real_step(name):
    """The same step with dropout off (random masks are not reproduced by the executor) and
    SGD, its IR executed against the real step: loss and parameters. (SGD, not AdamW: some
    gradients are exactly zero in exact arithmetic, such as BERT's key biases, which softmax
    cancels, and AdamW's m/√v turns their float rounding into unit-size updates; AdamW's own
    IR is validated in test_training.)"""
    torch.manual_seed(0)
    model = tiny(name, dropout=False).train()
    for m in model.modules():  # biases off zero: a gradient that is zero in exact arithmetic
        if isinstance(m, torch.nn.Linear) and m.bias is not None:  # (BERT's key bias) adds
            torch.nn.init.normal_(m.bias, std=0.02)  # rounding noise to a value, not replaces it
    ids = torch.randint(0, 101, (2, 8))
    inputs, loss = _inputs(name, ids), _loss(name, ids)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(*batch):
        opt.zero_grad()
        out = loss(model(*batch))
        out.backward()
        opt.step()
        return out

    run_and_compare(step, inputs, tol=1e-5)


# ------------------------------------------------------------------------- slices by hand


def test_slice_backward_writes_each_element_once():
    """``x[:, 1:6:2]`` of a 2x8 (fp32): the gradient's 6 elements copied, the other 10 zeroed,
    16 elements written, 6 read, no operation."""
    t = trace_torch(lambda g: aten.slice_backward(g, [2, 8], 1, 1, 6, 2), (rand(2, 3),))
    (k,) = t.program.kernels
    io = kernel_io(t.program, k)
    assert io.writes[t.program.outputs[0]].elements == 16
    assert io.reads["g"].elements == 6
    assert all(not statement_ops(t.program, s, k) for s in k.statements)
    # along dim 1: the slice {1, 3, 5}, then [0, 1), {7} (residue 0 past the slice), {2, 4, 6}
    extents = [next(d.extent for d in s.dims if d.name == "i1") for s in k.statements]
    assert extents == [3, 1, 1, 3]


def test_slice_and_select_forms_equal_pytorch():
    check(lambda g: aten.slice_backward(g, [2, 7, 5], 1, -6, 2**62, 1), rand(2, 6, 5))
    check(lambda g: aten.slice_backward(g, [2, 8, 5], 1, 0, 8, 3), rand(2, 3, 5))
    check(lambda g: aten.select_backward(g, [2, 7, 5], 1, -2), rand(2, 5))
    check(lambda x, s: aten.slice_scatter(x, s, 1, 1, None, 2), rand(2, 7, 5), rand(2, 3, 5))
    check(lambda x, s: aten.select_scatter(x, s, 2, 0), rand(2, 7, 5), rand(2, 7))


# ------------------------------------------------------------- activations, losses, pooling


GRADS = {
    "elu": lambda x: F.elu(x, 1.3),
    "selu": F.selu,
    "celu": lambda x: F.celu(x, 0.7),
    "leaky_relu": F.leaky_relu,
    "hardtanh": F.hardtanh,
    "relu6": F.relu6,
    "mish": F.mish,
    "softplus": lambda x: F.softplus(x, beta=2.0, threshold=3.0),
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "logsigmoid": F.logsigmoid,
    "softshrink": F.softshrink,
    "hardshrink": F.hardshrink,
    "l1": lambda x: F.l1_loss(x, torch.ones_like(x)),
    "bce": lambda x: F.binary_cross_entropy(x.sigmoid(), torch.full_like(x, 0.3)),
    "huber": lambda x: F.huber_loss(x, torch.ones_like(x), delta=0.8),
    "smooth_l1": lambda x: F.smooth_l1_loss(x, torch.ones_like(x), beta=0.5),
    "avg_pool": lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    "avg_pool3d": lambda x: F.avg_pool3d(x.unsqueeze(2), (1, 2, 2), (1, 2, 1)),
    "adaptive": lambda x: F.adaptive_avg_pool2d(x, (4, 3)),
    "adaptive_up": lambda x: F.adaptive_avg_pool2d(x, (9, 4)),
    "adaptive3d": lambda x: F.adaptive_avg_pool3d(x.unsqueeze(2), (1, 4, 5)),
    "area": lambda x: F.interpolate(x, size=(3, 2), mode="area"),
    "reflect_pad": lambda x: F.pad(x, (2, 1, 0, 3), mode="reflect"),
    "replicate_pad": lambda x: F.pad(x, (-1, 2, 3, 1), mode="replicate"),
    "reflect_pad1d": lambda x: F.pad(x.flatten(2), (4, 2), mode="reflect"),
    "replicate_pad3d": lambda x: F.pad(x.unsqueeze(2), (1, 1, 1, 0, 2, 1), mode="replicate"),
    "adaptive_max": lambda x: F.adaptive_max_pool2d(x, (4, 3)),
    "adaptive_max3d": lambda x: F.adaptive_max_pool3d(x.unsqueeze(2), (1, 3, 2)),
    "prelu": lambda x: F.prelu(x, torch.tensor([0.1, 0.2, 0.3])),
    "rrelu_eval": lambda x: F.rrelu(x, training=False),
    "diagonal": lambda x: torch.diagonal(x, 1, 2, 3),
    "unfold": lambda x: x.unfold(2, 3, 2),
    "cdist": lambda x: torch.cdist(x.flatten(2), x.flatten(2)[:, :2] * 0.5, p=1.5),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_backward_equals_autograd(name):
    """The whole gradient program (forward, then what autograd launches) as IR, against
    ``torch.autograd.grad``."""
    x = rand(2, 3, 6, 5) * 3

    def grad(x, g):
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            return torch.autograd.grad(GRADS[name](x), x, g)

    y = GRADS[name](x)
    check(grad, x, rand(*y.shape, seed=1))


def test_avg_pool_backward_counts_by_hand():
    """2x2 windows, stride 2, on 1x1x4x4 (fp32): each input element in exactly one window, so
    one divide each and no add (a sum of one term), 4 gradients read, 16 written."""
    t = trace_torch(
        lambda g, x: aten.avg_pool2d_backward(g, x, [2, 2], [2, 2], [0, 0], False, True, None),
        (rand(1, 1, 2, 2), rand(1, 1, 4, 4)),
    )
    (k,) = t.program.kernels
    ops = {}
    for s in k.statements:
        for cls, n in statement_ops(t.program, s, k).items():
            ops[cls] = ops.get(cls, 0) + n
    assert ops == {"cuda_fp32": 16}
    io = kernel_io(t.program, k)
    assert io.reads["g"].elements == 4 and io.writes[t.program.outputs[0]].elements == 16


# ------------------------------------------------------------------------------ searching


@pytest.mark.parametrize("n", [0, 1, 2, 5, 8, 9])
def test_searchsorted_and_bucketize_equal_pytorch(n):
    b = torch.randint(-5, 6, (n,)).float().sort()[0]
    bb = torch.randint(-5, 6, (3, n)).float().sort(-1)[0]
    x = torch.randint(-7, 8, (3, 4)).float()
    for right in (False, True):
        check(lambda x, b, r=right: torch.bucketize(x, b, right=r), x, b)
        check(lambda x, b, r=right: torch.bucketize(x, b, right=r, out_int32=True), x, b)
        check(lambda x, b, r=right: torch.searchsorted(b, x, right=r), x, b)
        check(lambda x, b, r=right: torch.searchsorted(b, x, right=r), x, bb)
    check(lambda b: torch.searchsorted(b, 0.5, side="right"), b)


def test_searchsorted_is_a_binary_search():
    """8 boundaries: ⌈log2 9⌉ = 4 statements, each one boundary load, compare and select per
    value (the first step writes a select of constants; the others add to the position)."""
    x, b = rand(3, 4), torch.arange(8.0)
    t = trace_torch(lambda x, b: torch.bucketize(x, b), (x, b))
    (k,) = t.program.kernels
    assert len(k.statements) == 4
    ops = [sum(statement_ops(t.program, s, k).values()) for s in k.statements]
    assert ops == [2 * 12, 3 * 12, 3 * 12, 3 * 12]


def test_searchsorted_with_sorter_is_refused_in_one_line():
    b, x = torch.arange(5.0), rand(3)
    with pytest.raises(solar.frontend.torch.UnsupportedOperatorError, match="sorter"):
        trace_torch(lambda b, x, s: torch.searchsorted(b, x, sorter=s), (b, x, torch.arange(5)))


# ---------------------------------------------------------------------- grid sampling backward


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_backward_equals_autograd(mode, padding):
    """Input and grid gradients of ``F.grid_sample`` (some points outside the input)."""
    x, grid = rand(2, 3, 5, 6), rand(2, 4, 7, 2, seed=3).clamp(-1.3, 1.3)
    for align in (False, True):

        def grad(x, grid, g, a=align):
            with torch.enable_grad():
                x, grid = x.detach().requires_grad_(), grid.detach().requires_grad_()
                y = F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=a)
                return torch.autograd.grad(y, (x, grid), g)

        t = check(grad, x, grid, rand(2, 3, 4, 7, seed=5))
        assert "aten.grid_sampler_2d_backward.default" in [k.op for k in t.program.kernels]


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_backward_of_a_one_pixel_input(padding, align):
    """A 1 x 1 input: with reflection and aligned corners every sample's coordinate folds to
    the constant 0, so the input gradient's scatter-add meets itself at every grid point (it
    accumulates, as CUDA's atomics do)."""
    x, grid = rand(2, 3, 1, 1), rand(2, 2, 3, 2, seed=3) * 2.6 - 1.4
    g = rand(2, 3, 2, 3, seed=5)

    def grad(x, grid, g):
        with torch.enable_grad():
            x, grid = x.detach().requires_grad_(), grid.detach().requires_grad_()
            y = F.grid_sample(x, grid, padding_mode=padding, align_corners=align)
            return torch.autograd.grad(y, (x, grid), g)

    check(grad, x, grid, g)


# ------------------------------------------------------------- repeat_interleave with a tensor


@pytest.mark.parametrize("repeats", [[1, 0, 2, 3], [0, 0, 0], [3], [0, 2, 0, 1, 0]])
def test_repeat_interleave_with_tensor_repeats_equals_pytorch(repeats):
    """Observed sizes (the real run's length), and a given ``output_size``."""
    r = torch.tensor(repeats)
    x, size = rand(len(repeats), 3), sum(repeats)
    check(lambda x, r: torch.repeat_interleave(x, r, dim=0), x, r, observe=True)
    check(lambda r: torch.repeat_interleave(r), r, observe=True)
    check(lambda x, r: torch.repeat_interleave(x, r, dim=0, output_size=size), x, r)


def test_repeat_interleave_size_is_zero_by_default_and_reported():
    """Every repeat may be 0: the traced length is 0 (the repeats still read and scanned) and
    the report says which size was assumed."""
    r = torch.tensor([1, 0, 2, 3])
    t = trace_torch(lambda x, r: torch.repeat_interleave(x, r, dim=0), (rand(4, 3), r))
    assert t.program.tensors[t.program.outputs[0]].shape == (0, 3)
    (k, *_) = t.program.kernels
    assert k.op == "aten.repeat_interleave.Tensor"
    assert kernel_io(t.program, k).reads["r"].elements == 4
    b = solar.bound(lambda x, r: torch.repeat_interleave(x, r, dim=0), (rand(4, 3), r))
    assert any("aten.repeat_interleave.Tensor" in a for a in b.assumptions)


# ------------------------------------------------------------------------------- any / all


def test_any_and_all_equal_pytorch():
    x = (rand(3, 4, 5) > 0.8).float()
    x[1], x[2] = 0, 1
    for f in (
        lambda x: x.any(),
        lambda x: x.all(),
        lambda x: x.any(1),
        lambda x: x.all(-1, keepdim=True),
        lambda x: torch.any(x, dim=(0, 2)),
        lambda x: (x > 0).any(0),
        lambda x: x.to(torch.uint8).all(1),
    ):
        check(f, x)
    check(lambda x: x.any(), torch.zeros(0))  # no terms: false
    check(lambda x: x.all(), torch.zeros(0))  # no terms: true


# ------------------------------------------------------------ multi-query attention backward


@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_with_one_key_value_head_broadcast(causal):
    """Falcon's multi-query attention: keys and values of one head broadcast over the query
    heads (no ``enable_gqa``); their gradients sum over the heads, as one GQA group."""
    q, k, v = rand(2, 4, 5, 8), rand(2, 1, 6, 8, seed=1), rand(2, 1, 6, 8, seed=2)

    def grad(q, k, v, g):
        with torch.enable_grad():
            q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            return torch.autograd.grad(y, (q, k, v), g)

    t = check(grad, q, k, v, rand(2, 4, 5, 8, seed=3))
    assert [k.op for k in t.program.kernels] == [
        "solar.sdpa.default",
        "solar.sdpa_backward.default",
    ]


# ------------------------------------------------------------ mixture-of-experts training


def test_mixtral_training_step_is_bounded_with_expert_weight_gradients():
    """transformers' default experts path is ``torch._grouped_mm``; its backward runs the
    weight-gradient form ``x.T (K, S) @ grad (S, N)`` split by the same routing. A tiny Mixtral
    on the meta device in bf16 (``_grouped_mm`` needs bf16)."""
    tf = transformers
    cfg = tf.MixtralConfig(
        num_hidden_layers=1,
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=2,
        num_key_value_heads=1,
        vocab_size=128,
        num_local_experts=4,
        num_experts_per_tok=2,
    )
    with torch.device("meta"):
        model = tf.MixtralForCausalLM(cfg).to(torch.bfloat16).train()
    ids = torch.randint(0, 128, (1, 16))
    b = solar.bound_training(model, (ids,), "H100", loss=_loss("mixtral", ids))
    grouped = [k for k in b.kernels if k.op == "aten._grouped_mm.default"]
    assert {k.phase for k in grouped} == {"forward", "backward"}
    # forward: gate_up and down; backward: each one's input and weight gradients
    assert len([k for k in grouped if k.phase == "backward"]) == 2 * len(
        [k for k in grouped if k.phase == "forward"]
    )
