"""The JAX frontend on whole models: the Flax examples validated against JAX at small shapes,
the JAX/PyTorch twins giving the same fused bound at full size, and JAX problem files."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

jax = pytest.importorskip("jax")
flax = pytest.importorskip("flax")
import jax.numpy as jnp  # noqa: E402
from flax import nnx  # noqa: E402

from solar.api import bound_program  # noqa: E402
from solar.frontend.jax import load_jax_problem, trace_jax  # noqa: E402
from solar.interp.torch.execute import execute  # noqa: E402
from solar.problem import load_module, load_problem  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str):
    return load_module(EXAMPLES / f"{name}.py")


def validate(fn, inputs, tol):
    t = trace_jax(fn, inputs, precision="ieee")
    got = execute(t.program, t.values(fn, inputs))
    want = t.reference(fn, inputs)
    for name, w in zip(t.output_names, want, strict=True):
        torch.testing.assert_close(got[name].float(), w.float(), rtol=tol, atol=tol, msg=name)
    return t


def normal(shape, dtype=jnp.float32, seed=1):
    return jax.random.normal(jax.random.key(seed), shape).astype(dtype)


@pytest.mark.parametrize("dtype,tol", [(jnp.float32, 1e-5), (jnp.bfloat16, 3e-2)])
def test_flax_nnx_mlp(dtype, tol):
    model = example("jax_mlp_flax").Model(8, 16, dtype, rngs=nnx.Rngs(0))
    t = validate(model, (normal((4, 8), dtype),), tol)
    assert t.bindings["up_kernel"] == ("weight", "up/kernel")
    assert [k.op.split(" ")[0] for k in t.program.kernels] == ["dot_general"] * 3


def test_flax_linen_cnn():
    mod = example("jax_cnn_flax")
    model = mod.Model(4, 5)
    x = normal((2, 16, 16, 3))
    variables = model.init(jax.random.key(0), x)
    t = validate(model, (variables, x), 1e-4)
    assert t.bindings["params_conv1_kernel"] == ("weight", "params/conv1/kernel")
    assert t.bindings["x"] == ("input", "x")
    kernels = [k for k in t.program.kernels if k.op.startswith("conv_general_dilated")]
    assert len(kernels) == 2 and all(k.module.endswith(("conv1", "conv2")) for k in kernels)


@pytest.mark.parametrize("dtype,tol", [(jnp.float32, 1e-4), (jnp.bfloat16, 6e-2)])
def test_flax_nnx_transformer_block(dtype, tol):
    model = example("jax_transformer_flax").Model(16, 2, dtype, rngs=nnx.Rngs(0))
    validate(model, (normal((2, 5, 16), dtype),), tol)


@pytest.mark.parametrize("name", ["jax_twin_mlp", "jax_twin_convnet", "jax_twin_attention"])
def test_plain_jax_twins_validate(name):
    mod = example(name)
    init = {"jax_twin_mlp": (16,), "jax_twin_convnet": (4, 6, 3), "jax_twin_attention": (32,)}
    model = mod.Model(*init[name])
    params = jax.tree_util.tree_map(lambda s: normal(s.shape, s.dtype, seed=7), model.params)
    if name == "jax_twin_mlp":
        x = normal((5, 16))
    elif name == "jax_twin_convnet":
        x = normal((2, 3, 9, 9))
    else:
        x = normal((2, 8, 32), jnp.bfloat16)
    t = validate(model.apply, (params, x), 5e-2 if name == "jax_twin_attention" else 1e-4)
    assert all(role == "weight" for role, path in t.bindings.values() if path.startswith("params"))


@pytest.mark.parametrize("precision", ["tf32", "ieee"])
@pytest.mark.parametrize("name", ["jax_twin_mlp", "jax_twin_convnet", "jax_twin_attention"])
def test_twins_have_equal_fused_bounds(name, precision):
    """The same model written in PyTorch and JAX: the fused bound is framework-independent."""
    from solar.frontend.torch import UnsupportedOperatorError, trace_torch

    fn, inputs = load_jax_problem(example(name))
    bj = bound_program(trace_jax(fn, inputs, precision=precision).program)
    problem = load_problem(EXAMPLES / f"{name}_torch.py")
    try:
        tt = trace_torch(problem.model, problem.inputs, precision=precision)
    except UnsupportedOperatorError as e:  # the PyTorch frontend lacks an operator
        pytest.skip(f"PyTorch frontend: {e}")
    bt = bound_program(tt.program)
    assert bj.fused == bt.fused
    assert bj.fused_bound_by == bt.fused_bound_by
    assert bj.bytes_fused == bt.bytes_fused
    assert bj.cache_aware == bt.cache_aware
    tensor = {k: v for k, v in bj.flops.items() if k.startswith("tc_")}
    assert tensor == {k: v for k, v in bt.flops.items() if k.startswith("tc_")}
    # XLA fuses what eager PyTorch launches separately: JAX's unfused bound is not above it
    assert bj.unfused <= bt.unfused * (1 + 1e-12)


def test_mlp_twins_match_operation_for_operation():
    fn, inputs = load_jax_problem(example("jax_twin_mlp"))
    problem = load_problem(EXAMPLES / "jax_twin_mlp_torch.py")
    from solar.frontend.torch import trace_torch

    bj = bound_program(trace_jax(fn, inputs, precision="tf32").program)
    bt = bound_program(trace_torch(problem.model, problem.inputs, precision="tf32").program)
    assert bj.flops == bt.flops  # GEMM + bias epilogue, ReLU: the same work
    assert bj.unfused == bt.unfused or len(bj.kernels) < len(bt.kernels)


@pytest.mark.parametrize(
    "name,kind",
    [
        ("jax_mlp_flax", "nnx"),
        ("jax_cnn_flax", "linen"),
        ("jax_transformer_flax", "nnx"),
        ("jax_twin_mlp", "function"),
        ("jax_twin_convnet", "function"),
        ("jax_twin_attention", "function"),
    ],
)
def test_problem_files_load_abstractly_and_bound(name, kind):
    loaded = load_jax_problem(example(name))
    assert loaded is not None
    fn, inputs = loaded
    leaves = jax.tree_util.tree_leaves((inputs, nnx.state(fn) if kind == "nnx" else ()))
    assert leaves and all(isinstance(x, jax.ShapeDtypeStruct) for x in leaves)
    b = bound_program(trace_jax(fn, inputs, name=name).program)
    assert 0 < b.fused <= b.cache_aware <= b.unfused


def test_torch_problem_files_are_not_jax_problems():
    assert load_jax_problem(load_module(EXAMPLES / "mlp.py")) is None
    assert load_jax_problem(load_module(EXAMPLES / "jax_twin_mlp_torch.py")) is None


FORWARD = """
import jax, jax.numpy as jnp

def forward(params, x):
    return jnp.tanh(x @ params["w"])

def get_params(width):
    return {"w": jax.ShapeDtypeStruct((width, width), jnp.float32)}

def get_inputs():
    return [jax.ShapeDtypeStruct((8, 64), jnp.float32)]

def get_init_inputs():
    return [64]
"""


def test_forward_function_problem_files(tmp_path):
    f = tmp_path / "fwd.py"
    f.write_text(FORWARD)
    fn, inputs = load_jax_problem(load_module(f))
    t = trace_jax(fn, inputs)
    assert t.bindings == {"params_w": ("weight", "params/w"), "x": ("input", "x")}
    f.write_text(FORWARD.replace("params, x", "x").replace('params["w"]', "x.T"))
    f.write_text(f.read_text().replace("def get_params(width):", "def _unused(width):"))
    fn, inputs = load_jax_problem(load_module(f))
    assert len(inputs) == 1


def test_bad_jax_model_is_one_line(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("import jax\nclass Model:\n    pass\ndef get_inputs():\n    return []\n")
    with pytest.raises(ValueError, match="params attribute and an apply"):
        load_jax_problem(load_module(f))
