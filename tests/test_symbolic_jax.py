"""Symbolic sizes of JAX programs (jax.export shape polymorphism): one trace, formulas that
equal a numeric trace at random sizes (counts exactly, times to rounding), and that equal the
PyTorch twin's formulas where the twins agree numerically."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import sympy  # noqa: E402

import solar  # noqa: E402
from solar.algebra.size import symbol  # noqa: E402
from solar.frontend.jax import load_jax_problem  # noqa: E402
from solar.frontend.jax.symbolic_dims import SymbolicDimError, to_sympy  # noqa: E402
from solar.problem import load_module, load_problem  # noqa: E402
from solar.symbolic.jax import bound_symbolic_jax  # noqa: E402
from tests.symbolic_equal import assert_bounds_equal, fresh_caches  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def twin(name: str):
    return load_jax_problem(load_module(EXAMPLES / f"{name}.py"))


def numeric(fn, inputs, *shape: int):
    """The numeric bound of ``fn`` with its input ``x`` (argument 1) of ``shape`` (from
    empty caches)."""
    x = inputs[1]
    fresh_caches()
    return solar.bound(fn, (inputs[0], jax.ShapeDtypeStruct(shape, x.dtype)), "H100")


def symbolic(fn, inputs, marks):
    fresh_caches()
    return bound_symbolic_jax(fn, inputs, "H100", marks, numeric=solar.bound)


def test_mlp_formula_equals_numeric_bounds_at_random_tokens():
    fn, inputs = twin("jax_twin_mlp")
    b = symbolic(fn, inputs, {"tokens": (1, 0)})
    t = symbol("tokens")
    assert b.flops_formula()["tc_tf32"] == 2 * 2 * 4096 * 4096 * t  # two GEMMs
    assert b.specializations == {}
    rng = random.Random(21)
    for tokens in [2, 4097, 8192, *(rng.randint(2, 1 << 16) for _ in range(6))]:
        fresh_caches()
        assert_bounds_equal(b.at(tokens=tokens), numeric(fn, inputs, tokens, 4096))


def test_attention_formula_equals_numeric_bounds_at_random_sizes():
    fn, inputs = twin("jax_twin_attention")
    b = symbolic(fn, inputs, {"batch": (1, 0), "seq": (1, 1)})
    B, S = symbol("batch"), symbol("seq")
    flops = b.flops_formula()
    assert flops["tc_bf16"] == 4 * 2 * 1024 * 1024 * B * S + 2 * 2 * 1024 * B * S**2
    assert b.specializations == {}
    rng = random.Random(7)
    points = [(4, 2048), (2, 2), *((rng.randint(2, 16), rng.randint(2, 4096)) for _ in range(6))]
    for batch, seq in points:
        fresh_caches()
        got = b.at(batch=batch, seq=seq)
        assert_bounds_equal(got, numeric(fn, inputs, batch, seq, 1024))


def test_outside_the_region_a_new_trace_answers():
    """batch 1 is outside the formula's region (a size-1 dim broadcasts): at() traces there."""
    fn, inputs = twin("jax_twin_attention")
    b = symbolic(fn, inputs, {"batch": (1, 0), "seq": (1, 1)})
    assert not b.inside(batch=1, seq=512)
    fresh_caches()
    assert_bounds_equal(b.at(batch=1, seq=512), numeric(fn, inputs, 1, 512, 1024))


@pytest.mark.parametrize(
    "name,marks,jax_marks",
    [
        ("jax_twin_mlp", {"tokens": (0, 0)}, {"tokens": (1, 0)}),
        ("jax_twin_attention", {"batch": (0, 0), "seq": (0, 1)}, {"batch": (1, 0), "seq": (1, 1)}),
    ],
)
def test_jax_formulas_equal_the_pytorch_twins(name, marks, jax_marks):
    """The quantities the twins agree on numerically (tests/test_frontend_jax_models.py, one
    float32 matmul precision for both): fused and cache-aware bounds, fused DRAM bytes,
    tensor-core work, as formulas."""
    fn, inputs = twin(name)
    fresh_caches()
    bj = bound_symbolic_jax(fn, inputs, "H100", jax_marks, precision="tf32")
    problem = load_problem(EXAMPLES / f"{name}_torch.py")
    fresh_caches()
    bt = solar.bound(problem.model, problem.inputs, "H100", symbolic=marks, precision="tf32")
    assert bj.expression("bytes_fused") == bt.expression("bytes_fused")
    tensor = {k: v for k, v in bj.flops_formula().items() if k.startswith("tc_")}
    assert tensor == {k: v for k, v in bt.flops_formula().items() if k.startswith("tc_")}
    for level in ("fused", "cache_aware"):
        a, b = bj.expression(level), bt.expression(level)
        scale = max(abs(c) for c in sympy.expand(a).as_coefficients_dict().values())
        diff = sympy.expand(a - b).as_coefficients_dict().values()
        assert all(abs(c) <= 1e-12 * scale for c in diff), (a, b)  # equal up to rounding
        assert getattr(bj, f"{level}_bound_by") == getattr(bt, f"{level}_bound_by")


def layer_stats(x, w):
    """A mean over the symbolic seq axis (JAX reads the size as a value: dim_as_value), a
    variance over width, and the last position of seq (a start computed from the size)."""
    h = x @ w
    return jnp.mean(h, axis=1), jnp.var(h, axis=-1), h[:, -1, :]


def test_sizes_read_as_values_stay_symbolic():
    w = jax.ShapeDtypeStruct((512, 512), jnp.float32)
    x = jax.ShapeDtypeStruct((64, 128, 512), jnp.float32)
    fresh_caches()
    b = bound_symbolic_jax(layer_stats, (x, w), "H100", {"batch": (0, 0), "seq": (0, 1)})
    assert b.specializations == {}
    for batch, seq in [(64, 128), (7, 1000), (9, 4097), (3, 5000)]:
        assert b.inside(batch=batch, seq=seq)
        fresh_caches()
        got = b.at(batch=batch, seq=seq)
        fresh_caches()
        xs = jax.ShapeDtypeStruct((batch, seq, 512), jnp.float32)
        assert_bounds_equal(got, solar.bound(layer_stats, (xs, w), "H100"))


def test_a_value_folded_at_its_traced_size_specializes_it():
    """``jnp.arange(seq)`` of up to 4096 elements is a constant of the trace (JAX folds it, as
    the numeric trace does): the formula holds at the traced seq only."""
    x = jax.ShapeDtypeStruct((4, 128), jnp.float32)
    fresh_caches()
    b = bound_symbolic_jax(lambda x: x * jnp.arange(x.shape[1]), (x,), "H100", {"seq": (0, 1)})
    assert "seq" in b.specializations
    assert not b.inside(seq=129)


def test_a_branch_on_a_symbolic_size_is_one_line():
    def branchy(x):
        return x * 2 if x.shape[0] > 8 else x

    x = jax.ShapeDtypeStruct((16, 4), jnp.float32)
    with pytest.raises(SymbolicDimError, match="decides something from a marked size"):
        bound_symbolic_jax(branchy, (x,), "H100", {"n": (0, 0)})


def test_marks_name_inputs_by_position_or_label_and_must_exist():
    fn, inputs = twin("jax_twin_mlp")
    fresh_caches()
    b = bound_symbolic_jax(fn, inputs, "H100", {"tokens": ("x", 0)})
    assert b.sizes == {"tokens": 8192}
    with pytest.raises(SymbolicDimError, match="no dim 5 of input 1"):
        bound_symbolic_jax(fn, inputs, "H100", {"tokens": (1, 5)})
    with pytest.raises(SymbolicDimError, match="is 8192 at input 'x' dim 0 and 4096"):
        bound_symbolic_jax(fn, inputs, "H100", {"n": [(1, 0), (1, 1)]})


def test_jax_dimension_expressions_in_sympy():
    from jax import export

    a, b = export.symbolic_shape("a, b")
    t = to_sympy(2 * a * b + a // 3 + b % 5 - 1)
    A, B = symbol("a"), symbol("b")
    assert t == 2 * A * B + sympy.floor(A / 3) + sympy.Mod(B, 5) - 1
    assert to_sympy(export.symbolic_shape("max(a, b)")[0]) == sympy.Max(A, B)


def test_solar_bound_takes_symbolic_sizes_of_a_jax_function():
    """The public entry point: ``solar.bound(fn, inputs, hw, symbolic=...)`` of a JAX function
    is the same SymbolicBound as ``bound_symbolic_jax``."""
    fn, inputs = twin("jax_twin_attention")
    marks = {"batch": (1, 0), "seq": (1, 1)}
    fresh_caches()
    b = solar.bound(fn, inputs, "H100", symbolic=marks)
    assert b.expression("bytes_fused") == symbolic(fn, inputs, marks).expression("bytes_fused")
    assert b.crossovers("seq", "fused", batch=4) == [(90, "dram", "tensor")]
