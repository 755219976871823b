"""Training problem files (docs/training.md) and JAX training steps: the step solar builds
from a file, validated and measured on CPU at small sizes as the GPU run does at full size,
the command line, JAX + optax steps against JAX, and the JAX/PyTorch twins' equal fused
bounds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from console import run_solar

import solar
from solar.gpu.headroom_batch import headroom_problem
from solar.gpu.validate import validate_problem
from solar.problem import load_module, load_problem, problem_at

EX = Path(__file__).resolve().parents[1] / "examples"
SMALL_RESNET = {"BATCH": 2, "SIZE": 32, "CLASSES": 10}
SMALL_GPT = {"BATCH": 2, "TOKENS": 16, "VOCAB": 64, "WIDTH": 32, "HEADS": 2, "LAYERS": 1}


def test_training_problem_file_is_one_step():
    """``get_optimizer`` makes a file a training problem; its ``train_step`` (clipping,
    autocast, fused AdamW in two parameter groups) is what is analysed."""
    step, batch = problem_at(EX / "train_gpt.py", "LAYERS", 2)
    b = solar.bound(step, batch, hw="H100")
    assert [ph.phase for ph in b.phases] == ["forward", "backward", "optimizer"]
    fused = [k for k in b.kernels if k.op == "aten._fused_adamw_.default"]
    assert len(fused) == 2  # one per parameter group, each within one launch's limits
    assert any(k.op == "aten._foreach_norm.Scalar" for k in b.kernels)  # clip_grad_norm_
    assert b.fused_bound_by == "tensor"
    model = step.args[0]  # the matrices that multiply: every 2-D weight but the position table
    n = sum(x.numel() for x in model.parameters() if x.dim() == 2) - model.wpe.weight.numel()
    tokens = 8 * 1024
    attention = 2 * 12 * 64 * 1024 * 1025 // 2 * 8 * (4 + 10)  # layers x heads x E x T(T+1)/2
    assert b.flops["tc_bf16"] == 6 * n * tokens + attention  # 6ND + causal attention, exactly


def test_validate_training_problem_on_cpu():
    """The GPU run's path at a small size: the problem file built for real, one real step
    first, then the IR of the next step against it: the loss, the parameters and AdamW's
    moments, and (training steps validate per kernel) every kernel's output."""
    r = validate_problem(EX / "jax_twin_train_gpt_torch.py", device="cpu", overrides=SMALL_GPT)
    assert r.status == "passed", r.summary()
    n_params = 2 + 12 + 2  # embeddings, one block, final norm
    assert len(r.outputs) == 1 + 3 * n_params  # loss, parameters, exp_avg, exp_avg_sq
    assert r.kernels and all(k.ok for k in r.kernels)
    assert any(k.op == "aten.native_layer_norm_backward.default" for k in r.kernels)
    assert any("one real step run first" in n for n in r.notes)


def test_headroom_of_a_training_problem_on_cpu():
    e = headroom_problem(EX / "jax_twin_train_gpt_torch.py", "H100", device="cpu",
                         overrides=SMALL_GPT, budget_s=0.05, profile=False)  # fmt: skip
    assert e.report is not None, e.error
    r = e.report
    assert r.validation.status == "passed" and r.measured.median_s > 0
    assert r.bounds["fused"] <= r.bounds["unfused"]


def test_cli_bound_json_shows_the_phases():
    code, out, err = run_solar("bound", EX / "jax_twin_train_gpt_torch.py", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert [p["phase"] for p in d["phases"]] == ["forward", "backward", "optimizer"]
    assert {"weights", "optimizer state"} <= set(d["memory"]["at_peak_use"])


# ---------------------------------------------------------------------------------------------
# JAX


jax = pytest.importorskip("jax")
optax = pytest.importorskip("optax")
import jax.numpy as jnp  # noqa: E402

from solar.frontend.jax import load_jax_problem, trace_jax  # noqa: E402
from solar.frontend.jax.training import make_train_step  # noqa: E402
from solar.interp.torch.execute import execute  # noqa: E402


def jax_mlp_loss(params, x, y):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        h = jax.nn.relu(h) if i < len(params) - 1 else h
    return jnp.mean((h - y) ** 2)


@pytest.mark.parametrize("name", ["sgd", "adamw"])
def test_jax_optax_step_validates_and_has_phases(name):
    """``value_and_grad`` + an optax update: forward, backward (2L - 1 dots for L layers fed
    by a plain batch), optimizer; the IR's new parameters, state and loss match JAX's."""
    widths = (8, 16, 16, 4)
    keys = jax.random.split(jax.random.key(0), 2 * len(widths))
    params = [
        (jax.random.normal(keys[i], (a, b)) * 0.3, jax.random.normal(keys[-i - 1], (b,)) * 0.1)
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=False))
    ]
    opt = optax.sgd(0.1, momentum=0.9) if name == "sgd" else optax.adamw(1e-2, weight_decay=0.1)
    step = jax.jit(make_train_step(jax_mlp_loss, opt))
    x, y = jax.random.normal(keys[0], (32, 8)), jax.random.normal(keys[1], (32, 4))
    params, state, _ = step(params, opt.init(params), x, y)  # a steady state, not zeros
    args = (params, state, x, y)
    t = trace_jax(step, args, precision="ieee")
    got = execute(t.program, t.values(step, args))
    for out, want in zip(t.output_names, t.reference(step, args), strict=True):
        torch.testing.assert_close(got[out].float(), want.float(), rtol=1e-5, atol=1e-6)
    kernels = t.program.kernels
    phases = {k.phase for k in kernels}  # XLA-style fusion may fold a short update into the
    assert {"forward", "backward"} <= phases <= {"forward", "backward", "optimizer"}  # backward
    assert name == "sgd" or "optimizer" in phases
    dots = [k for k in kernels if k.phase == "backward" and k.op.startswith("dot_general")]
    assert len(dots) == 2 * (len(widths) - 1) - 1


def test_jax_checkpoint_recomputes():
    """``jax.checkpoint`` around a GELU layer: its backward needs the pre-activation, which
    the transposed jaxpr recomputes (a ``rematted_computation`` dot), and the saved
    activations it drops lower the peak."""
    params = [(jnp.ones((16, 16)) * 0.1, jnp.zeros(16)) for _ in range(3)]
    opt = optax.sgd(0.1)
    x = jnp.ones((1024, 16))

    def loss(params, x, y, remat):
        for w, b in params:
            layer = lambda h, w, b: jax.nn.gelu(h @ w + b)  # noqa: E731
            x = (jax.checkpoint(layer) if remat else layer)(x, w, b)
        return jnp.mean((x - y) ** 2)

    def bound(remat):
        step = make_train_step(lambda p, x, y: loss(p, x, y, remat), opt)
        b = solar.bound(step, (params, opt.init(params), x, x))
        return b, [k.phase for k in b.kernels if k.op.startswith("dot_general")]

    (plain, dots), (remat, dots_remat) = bound(False), bound(True)
    assert "recompute" not in dots
    assert dots_remat.count("recompute") == 3 and len(dots_remat) == len(dots) + 3
    assert remat.memory.peak_bytes < plain.memory.peak_bytes


JAX_PROBLEM = """
import jax, jax.numpy as jnp, optax

def forward(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)

def get_params():
    f32 = jnp.float32
    return {"w1": jax.ShapeDtypeStruct((8, 16), f32), "b1": jax.ShapeDtypeStruct((16,), f32),
            "w2": jax.ShapeDtypeStruct((16, 4), f32)}

def get_optimizer():
    return optax.adamw(1e-2)

def get_inputs():
    return [jax.ShapeDtypeStruct((32, 8), jnp.float32), jax.ShapeDtypeStruct((32, 4), jnp.float32)]
"""


def test_jax_training_problem_file_validates_on_cpu(tmp_path):
    """A JAX file with ``forward``, ``get_params`` and ``get_optimizer``: the step built with
    random parameters, ``optimizer.init`` and one real step, then validated against JAX."""
    path = tmp_path / "jax_train_mlp.py"
    path.write_text(JAX_PROBLEM)
    fn, inputs = load_jax_problem(load_module(path))
    assert [p.phase for p in solar.bound(fn, inputs).phases][:2] == ["forward", "backward"]
    r = validate_problem(path, device="cpu")
    assert r.status == "passed", r.summary()
    assert len(r.outputs) == 3 + 1 + 3 + 3 + 1  # params, count, mu, nu, loss


def test_twins_train_with_the_same_fused_bound():
    """The same GPT training step in JAX/optax and PyTorch at full size, bf16: the same
    tensor-core work per phase, so the same compute-bound fused bound. The fused bytes differ
    only by what the frameworks really move differently: int64 vs int32 token ids, optax's
    step count (read and written) and JAX's literal constants."""
    fn, inputs = load_jax_problem(load_module(EX / "jax_twin_train_gpt.py"))
    _, gj = solar.trace_and_lift(fn, inputs)
    bj = solar.api.bound_graph(gj, "H100")
    p = load_problem(EX / "jax_twin_train_gpt_torch.py")
    _, gt = solar.trace_and_lift(p.model, p.inputs)
    bt = solar.api.bound_graph(gt, "H100")
    assert bj.fused == bt.fused and bj.fused_bound_by == bt.fused_bound_by == "tensor"
    for a, b in zip(bj.phases, bt.phases, strict=True):
        assert a.phase == b.phase and a.flops.get("tc_bf16") == b.flops.get("tc_bf16")

    def io(g, keep):
        io = g.info.fused_io
        return sum(v for t, v in [*io.reads.items(), *io.writes.items()] if keep(t))

    tensors_j = gj.info.tensors
    tokens_j = io(gj, lambda t: t.startswith("batch"))
    count_j = io(gj, lambda t: "count" in t or t.startswith("select_n"))
    consts_j = io(gj, lambda t: t in tensors_j and tensors_j[t].role == "constant")
    tokens_t = io(gt, lambda t: t.startswith(("idx", "targets", "batch")))
    assert tokens_t == 2 * tokens_j  # int64 vs int32 ids
    assert count_j == 8
    assert bt.bytes_fused - tokens_t == bj.bytes_fused - tokens_j - count_j - consts_j
    assert math.isclose(bj.fused, bt.fused)


def test_a_training_step_is_validated_kernel_by_kernel_when_rounding_is_amplified():
    """ResNet-18's step at a tolerance (3e-6) its momentum buffers miss by ~1e-3 on CPU (the
    gradients of 18 layers of ReLU amplify convolution rounding): every kernel, run on the
    source's values of what it reads (the updated parameters as they were before the step),
    reproduces its operator, and the traced graph on those values reproduces the real step,
    so the step passes and says how."""
    from solar.gpu.validate import problem_subject, validate_subject

    s = problem_subject(EX / "train_resnet.py", device="cpu", overrides={"BATCH": 2, "SIZE": 32})
    r = validate_subject(s, per_kernel=True, tol=3e-6)
    assert max(o.rel_err for o in r.outputs) > 3e-6
    assert r.status == "passed" and "amplified" in r.reason, r.notes
    assert len(r.isolated) == 144 and all(k.ok for k in r.isolated)
