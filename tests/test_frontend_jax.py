"""The JAX frontend: every supported primitive traced, lowered, executed as IR on CPU and compared
with JAX; hand-derived costs (dot_general, convolutions, scan), kernel grouping, precision
policy, names and roles, errors."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

from solar.frontend.jax import (  # noqa: E402
    DataDependentError,
    UnsupportedPrimitiveError,
    trace_jax,
)
from solar.frontend.jax.trace import FUSION_NOTE  # noqa: E402
from solar.interp.torch.execute import execute  # noqa: E402
from solar.ir.cost import kernel_io, program_io, statement_ops  # noqa: E402

HERE = os.path.basename(__file__)
S = jax.ShapeDtypeStruct
TOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float64: 1e-10}


def rand(*shape, dtype=jnp.float32, seed=0):
    rng = np.random.default_rng(seed + 17 * len(shape) + sum(shape))
    return jnp.asarray(rng.standard_normal(shape).astype(np.float32)).astype(dtype)


def pos(*shape, dtype=jnp.float32):
    return (jnp.abs(rand(*shape)) + 0.1).astype(dtype)


def ints(*shape, lo=-5, hi=6, dtype=jnp.int32):
    rng = np.random.default_rng(1)
    return jnp.asarray(rng.integers(lo, hi, shape)).astype(dtype)


def check(fn, *inputs, kernels=None, precision="ieee", tol=None):
    """Trace ``fn(*inputs)``, run the IR on the same values, compare every output with JAX;
    optionally check the kernels' operators. Returns the trace."""
    trace = trace_jax(fn, inputs, precision=precision)
    got = execute(trace.program, trace.values(fn, inputs))
    want = trace.reference(fn, inputs)
    assert len(want) == len(trace.output_names)
    for name, w in zip(trace.output_names, want, strict=True):
        g = got[name]
        assert g.shape == w.shape and g.dtype == w.dtype, (name, g.shape, g.dtype, w.shape, w.dtype)
        t = tol or TOL.get(w.dtype, 1e-5)
        torch.testing.assert_close(g, w, rtol=t, atol=t, equal_nan=True, msg=name)
    if kernels is not None:
        assert [k.op for k in trace.program.kernels] == kernels, str(trace.program)
    return trace


def case(fn, *inputs, id):  # noqa: A002
    return pytest.param(fn, inputs, id=id)


X = rand(3, 4)
P = pos(3, 4)

# ----------------------------------------------------------------------------- elementwise
ELEMENTWISE = [
    *(
        case(getattr(jnp, n), X, id=n)
        for n in ["negative", "exp", "exp2", "expm1", "tanh", "sin", "cos", "tan", "floor", "ceil"]
    ),
    *(case(getattr(jnp, n), P, id=n) for n in ["log", "log1p", "sqrt", "cbrt", "arcsinh"]),
    case(jnp.abs, X, id="abs"),
    case(jnp.sign, X, id="sign"),
    case(jnp.square, X, id="square"),
    case(lax.rsqrt, P, id="rsqrt"),
    case(jax.nn.sigmoid, X, id="logistic"),
    case(lax.erf, X, id="erf"),
    case(lax.erfc, X, id="erfc"),
    case(jnp.sinh, X, id="sinh"),
    case(jnp.cosh, X, id="cosh"),
    case(lambda x: jnp.arccosh(x + 1.5), P, id="acosh"),
    case(lambda x: jnp.arctanh(x * 0.3), X, id="atanh"),
    case(lambda x: jnp.round(x * 3), X, id="round_even"),
    case(lambda x: lax.round(x * 3), X, id="round_away"),
    case(lambda x: x**3, X, id="integer_pow_3"),
    case(lambda x: x**-2, P, id="integer_pow_m2"),
    case(lambda x: lax.integer_pow(x, 5), X, id="integer_pow_5"),
    case(lambda x, y: x**y, P, X, id="pow"),
    case(lambda x: x**0.5, P, id="pow_half"),
    case(lambda x, y: x + y, X, rand(3, 4, seed=1), id="add"),
    case(lambda x, y: x - y, X, rand(1, 4, seed=1), id="sub_broadcast"),
    case(lambda x, y: x * y, X, rand(3, 1, seed=1), id="mul_broadcast"),
    case(lambda x, y: x / y, X, P, id="div"),
    case(jnp.maximum, X, rand(3, 4, seed=2), id="max"),
    case(jnp.minimum, X, rand(3, 4, seed=2), id="min"),
    case(lambda x, y: lax.rem(x, y), X * 5, P, id="rem"),
    case(
        lambda x, y: lax.div(x, y), ints(3, 4, lo=-20, hi=20), ints(3, 4, lo=1, hi=5), id="int_div"
    ),
    case(
        lambda x, y: lax.rem(x, y), ints(3, 4, lo=-20, hi=20), ints(3, 4, lo=1, hi=5), id="int_rem"
    ),
    *(
        case(getattr(lax, n), X, rand(3, 4, seed=3).at[0, 0].set(X[0, 0]), id=n)
        for n in ["eq", "ne", "lt", "le", "gt", "ge"]
    ),
    case(lambda x, y: (x > 0) & (y > 0), X, rand(3, 4, seed=4), id="and"),
    case(lambda x, y: (x > 0) | (y > 0), X, rand(3, 4, seed=4), id="or"),
    case(lambda x, y: (x > 0) ^ (y > 0), X, rand(3, 4, seed=4), id="xor"),
    case(lambda x: ~(x > 0), X, id="not"),
    case(jnp.isfinite, X.at[0, 1].set(jnp.inf).at[1, 1].set(jnp.nan), id="is_finite"),
    case(lambda x, y: jnp.where(x > 0, x, y), X, rand(3, 4, seed=5), id="select_n"),
    case(
        lambda i, a, b, c: lax.select_n(i, a, b, c),
        ints(3, 4, lo=0, hi=3),
        X,
        P,
        -X,
        id="select_n3",
    ),
    case(lambda x: jnp.clip(x, -0.5, 0.5), X, id="clamp"),
    case(lambda x: lax.clamp(-0.3, x, 0.2), X, id="lax_clamp"),
    case(lambda x: x.astype(jnp.bfloat16), X, id="convert_bf16"),
    case(lambda x: x.astype(jnp.int32), X * 4, id="convert_int"),
    case(lambda x: (x > 0).astype(jnp.float32), X, id="convert_bool"),
    case(lambda x: lax.reduce_precision(x, 8, 7), X, id="reduce_precision_bf16"),
    case(lambda x: lax.stop_gradient(x) * 2, X, id="stop_gradient"),
    case(lambda x: jax.nn.gelu(x), X, id="gelu_tanh"),
    case(lambda x: jax.nn.gelu(x, approximate=False), X, id="gelu_erf"),
    case(jax.nn.silu, X, id="silu"),
    case(jax.nn.softplus, X, id="softplus"),
    case(lambda x: jax.nn.relu(x) + 1, X, id="relu"),
    case(lambda x: x * 2 + 1, X.astype(jnp.bfloat16), id="bf16_arith"),
]


@pytest.mark.parametrize("fn,inputs", ELEMENTWISE)
def test_elementwise(fn, inputs):
    check(fn, *inputs)


# ---------------------------------------------------------------------------- reductions
REDUCTIONS = [
    case(lambda x: jnp.sum(x, 1), X, id="sum"),
    case(lambda x: jnp.sum(x), X, id="sum_all"),
    case(lambda x: jnp.max(x, 0), X, id="max"),
    case(lambda x: jnp.min(x, (0, 1)), X, id="min"),
    case(lambda x: jnp.prod(x, 1), X, id="prod"),
    case(lambda x: jnp.all(x > 0, 1), X, id="and"),
    case(lambda x: jnp.any(x > 0, 0), X, id="or"),
    case(lambda x: jnp.mean(x, -1, keepdims=True), X, id="mean"),
    case(lambda x: jnp.var(x, -1), X, id="var"),
    case(lambda x: jnp.argmax(x, 1), X, id="argmax"),
    case(lambda x: jnp.argmin(x, 0), X, id="argmin"),
    case(lambda x: jnp.cumsum(x, 1), X, id="cumsum"),
    case(lambda x: lax.cumsum(x, 0, reverse=True), X, id="cumsum_reverse"),
    case(lambda x: jnp.cumprod(x, 1), X, id="cumprod"),
    case(lambda x: lax.cummax(x, 1), X, id="cummax"),
    case(lambda x: lax.cummin(x, 0, reverse=True), X, id="cummin"),
    case(lambda x: lax.cumlogsumexp(x, 1), X, id="cumlogsumexp"),
    case(lambda x: jax.nn.softmax(x, -1), X, id="softmax"),
    case(lambda x: jax.nn.log_softmax(x, -1), X, id="log_softmax"),
    case(lambda x: jax.nn.logsumexp(x, -1), X, id="logsumexp"),
    case(lambda x: jnp.linalg.norm(x), X, id="norm"),
    case(lambda x: jnp.sum(x.astype(jnp.bfloat16), 1), X, id="sum_bf16"),
    case(
        lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
        rand(2, 3, 6, 6),
        id="max_pool",
    ),
    case(
        lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 1, 3, 3), (1, 1, 2, 2), "SAME"),
        rand(2, 3, 7, 7),
        id="sum_pool_same",
    ),
    case(
        lambda x: lax.reduce(x, 1.0, lax.add, (1,)),
        X,
        id="reduce_generic_init",
    ),
]


@pytest.mark.parametrize("fn,inputs", REDUCTIONS)
def test_reductions(fn, inputs):
    check(fn, *inputs)


# ------------------------------------------------------------------------- data movement
Y = rand(2, 3, 4)
MOVEMENT = [
    case(lambda x: x.T, X, id="transpose"),
    case(lambda x: jnp.transpose(x, (2, 0, 1)) * 2, Y, id="transpose_3d"),
    case(lambda x: x.reshape(4, 3), X, id="reshape"),
    case(lambda x: x.T.reshape(12), X, id="reshape_copy"),
    case(lambda x: jnp.broadcast_to(x[:, None, :], (3, 5, 4)) + 1, X, id="broadcast"),
    case(lambda x: x[None] * 2, X, id="expand_dims"),
    case(lambda x: x[1:3, ::2], X, id="slice"),
    case(lambda x: x[1], X, id="index_int"),
    case(lambda x: x[:, -1], X, id="index_last"),
    case(lambda x: jnp.squeeze(x[:, :1]), X, id="squeeze"),
    case(lambda x: jnp.split(x, 2, axis=1), X, id="split"),
    case(lambda x: x[::-1, ::-1] + 0, X, id="rev"),
    case(lambda x: jnp.flip(x, 1), Y, id="flip"),
    case(lambda x: jnp.pad(x, ((1, 2), (0, 3))), X, id="pad"),
    case(lambda x: jnp.pad(x, ((1, 1), (2, 2)), constant_values=7.0), X, id="pad_value"),
    case(lambda x: lax.pad(x, 0.5, ((1, -1, 1), (-2, 2, 2))), X, id="pad_interior_negative"),
    case(lambda x, y: jnp.concatenate([x, y, x], 1), X, rand(3, 2), id="concatenate"),
    case(lambda x: jnp.stack([x, 2 * x], 0), X, id="stack"),
    case(lambda x: x + jnp.arange(4.0), X, id="iota_small"),
    case(lambda x: x + jnp.arange(5000.0).reshape(50, 100)[:3, :4], X, id="iota_large"),
    case(lambda x: jnp.roll(x, 1, axis=1), X, id="roll"),
    case(lambda x: lax.dynamic_slice(x, (1, 2), (2, 2)), X, id="dynamic_slice"),
    case(lambda x: lax.dynamic_slice(x, (2, 3), (2, 2)), X, id="dynamic_slice_clamped"),
    case(lambda x, u: lax.dynamic_update_slice(x, u, (1, 1)), X, rand(2, 2), id="dus"),
    case(lambda x: (x * 2).at[1].set(0.0), X, id="at_set"),
    case(lambda x: x.at[1, 2].add(5.0), X, id="at_add"),
    case(lambda x: x.at[:, 1:3].mul(3.0), X, id="at_mul"),
    case(lambda x: x[jnp.array([2, 0, 1])], X, id="gather_known"),
    case(lambda x: x[:, jnp.array([0, 2])], X, id="gather_known_cols"),
    case(lambda x: jnp.take(x, jnp.array([3, 1, 3]), axis=1), X, id="take_known"),
    case(lambda x: jax.nn.one_hot(jnp.argmax(x, 1), 4), X, id="one_hot"),
    case(lambda x, i: x[i], X, jnp.int32(2), id="traced_index"),
    case(
        lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 3)),
        X,
        jnp.int32(5),
        id="traced_slice_clamped",
    ),
    case(
        lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 2)),
        X,
        rand(2, 2),
        jnp.int32(1),
        id="traced_update",
    ),
    case(lambda t, i: t[i], rand(10, 4), ints(3, 5, lo=-10, hi=10), id="embedding"),
    case(lambda t, i: jnp.take(t, i, axis=0), rand(10, 4), ints(6, lo=-2, hi=12), id="take_fill"),
    case(
        lambda x, i: jnp.take_along_axis(x, i, 1), X, ints(3, 2, lo=0, hi=4), id="take_along_axis"
    ),
    case(lambda x, i, u: x.at[i].set(u), X, ints(2, lo=0, hi=3), rand(2, 4), id="scatter_set"),
    case(lambda x, i, u: x.at[i].add(u), X, jnp.array([1, 1, 2]), rand(3, 4), id="scatter_add_dup"),
    case(lambda x, i: x.at[:, i].max(1.0), X, jnp.array([0, 3]), id="scatter_max"),
    case(
        lambda x, i: jax.vmap(lambda r, j: r[j])(x, i), X, ints(3, lo=0, hi=4), id="batched_gather"
    ),
    case(jnp.sort, X, id="sort"),
    case(lambda x: jnp.sort(x, axis=0), X, id="sort_axis0"),
    case(lambda x: jnp.argsort(x, axis=1), X, id="argsort"),
    case(lambda x, y: lax.sort((x, y), num_keys=1), X, rand(3, 4, seed=9), id="sort_carry"),
    case(lambda x: lax.top_k(x, 2), X, id="top_k"),
    case(lambda x: jnp.tril(x), rand(4, 4), id="tril"),
    case(lambda x: jnp.zeros((2, 3)) + x[:2, :3], X, id="zeros_splat"),
    case(lambda x: (x, x * 2, jnp.ones(2)), X, id="outputs_passthrough_and_constant"),
    case(lambda d: d["a"] @ d["b"]["c"], {"a": X, "b": {"c": rand(4, 2)}}, id="pytree_inputs"),
]


@pytest.mark.parametrize("fn,inputs", MOVEMENT)
def test_data_movement(fn, inputs):
    check(fn, *inputs)


def test_broadcast_and_transpose_are_free_views():
    t = check(lambda x: (x.T[None] + 0).reshape(4, 3), X)
    assert len(t.program.kernels) == 1
    assert sum(len(k.statements) for k in t.program.kernels) == 1


# --------------------------------------------------------------------------- contractions
CONTRACTIONS = [
    case(lambda a, b: a @ b, rand(3, 5), rand(5, 4), id="matmul"),
    case(lambda a, b: jnp.einsum("bij,bjk->bik", a, b), rand(2, 3, 5), rand(2, 5, 4), id="bmm"),
    case(lambda a, b: jnp.einsum("ijb,kjb->bki", a, b), rand(3, 5, 2), rand(4, 5, 2), id="bmm_odd"),
    case(
        lambda a, b: lax.dot_general(a, b, (((1, 3), (0, 2)), ((0,), (1,)))),
        rand(2, 3, 4, 5),
        rand(3, 2, 5, 6),
        id="two_contracting",
    ),
    case(lambda a, b: jnp.outer(a, b), rand(3), rand(4), id="outer"),
    case(lambda a, b: a @ b, rand(5), rand(5), id="vdot"),
    case(
        lambda a, b: lax.dot_general(
            a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32
        ),
        rand(3, 5, dtype=jnp.bfloat16),
        rand(5, 4, dtype=jnp.bfloat16),
        id="bf16_to_f32",
    ),
    case(
        lambda a, b: a @ b,
        rand(8, 16, dtype=jnp.bfloat16),
        rand(16, 4, dtype=jnp.bfloat16),
        id="bf16",
    ),
    case(lambda a, b, c: a @ b + c, rand(3, 5), rand(5, 4), rand(4), id="bias_epilogue"),
    case(lambda a, b, c: c + a @ b, rand(3, 5), rand(5, 4), rand(3, 4), id="residual_epilogue"),
    case(
        lambda a, b: jnp.matmul(a, b, precision="highest"),
        rand(3, 5),
        rand(5, 4),
        id="highest",
    ),
]


@pytest.mark.parametrize("fn,inputs", CONTRACTIONS)
def test_contractions(fn, inputs):
    check(fn, *inputs)


def conv(x, w, stride=(1, 1), padding="SAME", lhs_dil=None, rhs_dil=None, groups=1, dn=None, bg=1):
    return lax.conv_general_dilated(
        x,
        w,
        stride,
        padding,
        lhs_dilation=lhs_dil,
        rhs_dilation=rhs_dil,
        dimension_numbers=dn,
        feature_group_count=groups,
        batch_group_count=bg,
    )


CONVS = [
    case(lambda x, w: conv(x, w), rand(2, 3, 8, 8), rand(4, 3, 3, 3), id="same"),
    case(
        lambda x, w: conv(x, w, (2, 2), "VALID"), rand(2, 3, 9, 9), rand(4, 3, 3, 3), id="strided"
    ),
    case(
        lambda x, w: conv(x, w, (1, 2), ((2, 1), (0, 3))),
        rand(1, 2, 7, 6),
        rand(3, 2, 3, 2),
        id="asym_pad",
    ),
    case(lambda x, w: conv(x, w, rhs_dil=(2, 2)), rand(1, 2, 9, 9), rand(3, 2, 3, 3), id="dilated"),
    case(lambda x, w: conv(x, w, groups=2), rand(2, 4, 6, 6), rand(6, 2, 3, 3), id="grouped"),
    case(lambda x, w: conv(x, w, groups=4), rand(1, 4, 6, 6), rand(4, 1, 3, 3), id="depthwise"),
    case(
        lambda x, w: conv(x, w, (1, 1), ((1, 1), (1, 1)), lhs_dil=(2, 2)),
        rand(1, 2, 4, 4),
        rand(3, 2, 3, 3),
        id="transposed",
    ),
    case(
        lambda x, w: conv(x, w, (2, 1), ((2, 0), (1, 2)), lhs_dil=(3, 2), rhs_dil=(1, 2)),
        rand(1, 2, 4, 3),
        rand(2, 2, 3, 2),
        id="transposed_odd",
    ),
    case(
        lambda x, w: conv(x, w, dn=("NHWC", "HWIO", "NHWC")),
        rand(2, 6, 6, 3),
        rand(3, 3, 3, 5),
        id="nhwc",
    ),
    case(lambda x, w: conv(x, w, (1,), "SAME"), rand(2, 3, 10), rand(4, 3, 3), id="conv1d"),
    case(
        lambda x, w: conv(x, w, (1, 1, 1), "SAME"),
        rand(1, 2, 4, 4, 4),
        rand(2, 2, 3, 3, 3),
        id="conv3d",
    ),
    case(
        lambda x, w: conv(x, w, (1, 1), "VALID", bg=2),
        rand(4, 3, 5, 5),
        rand(4, 3, 3, 3),
        id="batch_group",
    ),
]


@pytest.mark.parametrize("fn,inputs", CONVS)
def test_convolutions(fn, inputs):
    check(fn, *inputs, tol=1e-4)


# --------------------------------------------------------------------------- control flow
def _scan_cumsum(x):
    def body(c, xi):
        c = c + xi
        return c, c * 2

    return lax.scan(body, jnp.zeros(x.shape[1:]), x)


def _kv_cache(cache, new):
    def body(i, c):
        return lax.dynamic_update_slice(c, new[i][None], (i, 0))

    return lax.fori_loop(0, new.shape[0], body, cache)


@jax.custom_jvp
def _softplus(x):
    return jnp.log1p(jnp.exp(x))


_softplus.defjvp(lambda p, t: (_softplus(p[0]), t[0] * jax.nn.sigmoid(p[0])))


@jax.custom_vjp
def _clip_grad(x):
    return jnp.sin(x)


_clip_grad.defvjp(lambda x: (jnp.sin(x), x), lambda r, g: (g * jnp.cos(r),))

CONTROL = [
    case(_scan_cumsum, rand(5, 3), id="scan"),
    case(
        lambda x: lax.scan(lambda c, xi: (c * xi, None), x[0], x, reverse=True),
        rand(4, 3),
        id="scan_reverse",
    ),
    case(
        lambda x, w: lax.scan(lambda h, _: (jnp.tanh(h @ w), h.sum()), x, None, length=3),
        rand(2, 4),
        rand(4, 4),
        id="scan_rnn",
    ),
    case(lambda x: lax.fori_loop(0, 4, lambda i, c: c * 1.5 + i, x), X, id="fori_loop"),
    case(
        lambda x: lax.fori_loop(1, 7, lambda i, c: c + x[i % 3], jnp.zeros(4)), X, id="fori_index"
    ),
    case(
        lambda x: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 2, c[1] * 2), (0, x))[1],
        X,
        id="while_counter",
    ),
    case(_kv_cache, jnp.zeros((6, 4)), rand(4, 4), id="fori_dynamic_update_slice"),
    case(lambda x: lax.cond(True, jnp.sin, jnp.cos, x), X, id="cond_static"),
    case(lambda x: lax.switch(2, [jnp.sin, jnp.cos, jnp.tanh], x), X, id="switch_static"),
    case(lambda x: jax.jit(lambda y: y * 3)(x) + 1, X, id="pjit"),
    case(lambda x: jax.checkpoint(lambda y: jnp.sin(y) * y)(x), X, id="remat"),
    case(_softplus, X, id="custom_jvp"),
    case(_clip_grad, X, id="custom_vjp"),
    case(lambda x: jax.vmap(lambda r: r @ r)(x), X, id="vmap"),
    case(lambda x: jax.grad(lambda y: jnp.sum(jnp.tanh(y) ** 2))(x), X, id="grad"),
]


@pytest.mark.parametrize("fn,inputs", CONTROL)
def test_control_flow(fn, inputs):
    check(fn, *inputs)


SCANS = [
    case(_scan_cumsum, rand(5, 3), id="scan"),
    case(
        lambda x: lax.scan(lambda c, xi: (c * xi, None), x[0], x, reverse=True),
        rand(4, 3),
        id="scan_reverse",
    ),
    case(
        lambda x, w: lax.scan(lambda h, _: (jnp.tanh(h @ w), h.sum()), x, None, length=3),
        rand(2, 4),
        rand(4, 4),
        id="scan_rnn",
    ),
    case(
        lambda x: lax.fori_loop(1, 7, lambda i, c: c + x[i % 3], jnp.zeros(4)), X, id="fori_index"
    ),
    case(_kv_cache, jnp.zeros((6, 4)), rand(4, 4), id="fori_dynamic_update_slice"),
    case(
        lambda x: lax.scan(
            lambda c, r: (lax.scan(lambda a, b: (a + b, a * b), c, r)[0], c), x[0], x
        ),
        rand(3, 2, 4),
        id="nested",
    ),
    case(
        lambda a, b: lax.scan(
            lambda c, xy: ((c[1], c[0] + xy), xy.sum()), (a, b), a[None].repeat(3, 0)
        ),
        rand(4),
        rand(4),
        id="swap_carry",
    ),
]


@pytest.mark.parametrize("fn,inputs", SCANS)
def test_scan_as_one_looped_kernel(fn, inputs):
    t = trace_jax(fn, inputs, scan="loop")
    assert any(k.loops for k in t.program.kernels) and t.assumptions == (FUSION_NOTE,), (
        t.assumptions
    )
    got = execute(t.program, t.values(fn, inputs))
    for name, w in zip(t.output_names, t.reference(fn, inputs), strict=True):
        torch.testing.assert_close(got[name], w, rtol=1e-5, atol=1e-5, msg=name)


def test_cond_on_traced_predicate_uses_the_cheapest_branch():
    def f(x):
        return lax.cond(x[0, 0] > 0, lambda y: y * 2, lambda y: jnp.exp(y * 2) @ y.T @ y, x)

    t = trace_jax(f, (X,))
    ops = {}
    for k in t.program.kernels:
        for st in k.statements:
            for c, n in statement_ops(t.program, st).items():
                ops[c] = ops.get(c, 0) + n
    assert ops == {"cuda_fp32": 1 + 12}  # the predicate, then the multiply branch (no exp/dot)
    assert t.assumptions == (FUSION_NOTE,)  # the grouping rule, no branch note
    # validation is exact on inputs that take that branch
    xs = X.at[0, 0].set(1.0)
    got = execute(t.program, t.values(f, (xs,)))
    torch.testing.assert_close(got[t.output_names[0]], t.reference(f, (xs,))[0])


def test_platform_dependent_takes_the_gpu_branch():
    f = lambda x: lax.platform_dependent(x, cuda=jnp.sin, default=jnp.cos)  # noqa: E731
    t = trace_jax(f, (X,))
    got = execute(t.program, t.values(f, (X,)))[t.output_names[0]]
    torch.testing.assert_close(got, torch.from_numpy(np.array(jnp.sin(X))))


def test_cond_without_a_dominating_branch_notes_the_choice():
    def f(x):
        return lax.cond(x[0, 0] > 0, lambda y: jnp.exp(y), lambda y: y * y * y * y, x)

    t = trace_jax(f, (X,))
    fusion, note = t.assumptions
    assert fusion == FUSION_NOTE and "cond at" in note and HERE in note


def test_while_with_traced_trip_count_is_a_clear_error():
    def f(x):
        return lax.while_loop(lambda c: c.sum() < 10.0, lambda c: c * 2, x)

    with pytest.raises(DataDependentError) as e:
        trace_jax(f, (P,))
    msg = str(e.value)
    assert "while" in msg and f"{HERE}:" in msg and "trip count" in msg


# --------------------------------------------------------------------------- cost facts
def totals(program):
    ops: dict[str, int] = {}
    for k in program.kernels:
        for st in k.statements:
            for c, n in statement_ops(program, st, k).items():
                ops[c] = ops.get(c, 0) + n
    return ops


def test_dot_general_cost_batch_and_contracting_dims():
    # out[b, m, n] = sum_{k1, k2} a[k1, b, m, k2] * w[b, k2, n, k1]
    B, M, N, K1, K2 = 3, 5, 7, 4, 6
    f = lambda a, w: lax.dot_general(a, w, (((0, 3), (3, 1)), ((1,), (0,))))  # noqa: E731
    t = check(f, rand(K1, B, M, K2), rand(B, K2, N, K1), precision=None)
    assert totals(t.program) == {"tc_tf32": 2 * B * M * N * K1 * K2}
    (k,) = t.program.kernels
    io = kernel_io(t.program, k)
    assert io.read_bytes == 4 * (K1 * B * M * K2 + B * K2 * N * K1)
    assert io.write_bytes == 4 * B * M * N
    fused = program_io(t.program)
    assert fused.bytes == io.bytes


def test_dot_general_bias_folds_into_the_gemm():
    M, K, N = 6, 5, 4
    t = check(lambda a, b, c: a @ b + c, rand(M, K), rand(K, N), rand(N), kernels=["dot_general"])
    assert totals(t.program) == {"cuda_fp32": 2 * M * N * K}  # the add is the GEMM's beta = 1
    assert kernel_io(t.program, t.program.kernels[0]).bytes == 4 * (M * K + K * N + N + M * N)


def conv_flops(n, o, p, q, cg, r, s):
    return 2 * n * o * p * q * cg * r * s


@pytest.mark.parametrize(
    "x,w,kw,expected",
    [
        # strided, valid: P = (9 - 3) // 2 + 1 = 4
        (
            rand(2, 3, 9, 9),
            rand(4, 3, 3, 3),
            dict(stride=(2, 2), padding="VALID"),
            conv_flops(2, 4, 4, 4, 3, 3, 3),
        ),
        # dilated 2, valid: effective window 5, P = 9 - 5 + 1 = 5
        (
            rand(1, 2, 9, 9),
            rand(3, 2, 3, 3),
            dict(padding="VALID", rhs_dil=(2, 2)),
            conv_flops(1, 3, 5, 5, 2, 3, 3),
        ),
        # grouped: 2 groups of 2 input channels, 6 outputs
        (
            rand(2, 4, 6, 6),
            rand(6, 2, 3, 3),
            dict(padding="VALID", groups=2),
            conv_flops(2, 6, 4, 4, 2, 3, 3),
        ),
        # depthwise, stride 2 and dilation 2 together
        (
            rand(1, 4, 11, 11),
            rand(4, 1, 3, 3),
            dict(stride=(2, 2), padding="VALID", rhs_dil=(2, 2), groups=4),
            conv_flops(1, 4, 4, 4, 1, 3, 3),
        ),
    ],
    ids=["strided", "dilated", "grouped", "depthwise_strided_dilated"],
)
def test_conv_cost(x, w, kw, expected):
    t = check(lambda a, b: conv(a, b, **kw), x, w, precision=None, tol=1e-4)
    assert totals(t.program) == {"tc_tf32": expected}
    (k,) = t.program.kernels
    io = kernel_io(t.program, k)
    out = t.program.tensors[t.output_names[0]]
    assert io.write_bytes == out.nbytes
    assert io.read_bytes <= 4 * (x.size + w.size)


def test_conv_padding_products_are_not_counted():
    # 3x3 "SAME" on 4x4: each output counts only the window taps that land inside the image
    t = check(lambda a, b: conv(a, b), rand(1, 1, 4, 4), rand(1, 1, 3, 3), precision=None)
    taps = sum(
        (min(p + 1, 3) - max(p - 1, 0) + 1) * (min(q + 1, 3) - max(q - 1, 0) + 1)
        for p in range(4)
        for q in range(4)
    )
    assert totals(t.program) == {"tc_tf32": 2 * taps}


def test_scan_cost_is_trip_count_times_body():
    B, H, L = 2, 8, 5

    def rnn(h, w, xs):
        return lax.scan(lambda c, x: (jnp.tanh(c @ w + x), c.sum()), h, xs)

    t = check(rnn, rand(B, H), rand(H, H), rand(L, B, H), precision=None)
    looped = trace_jax(rnn, (rand(B, H), rand(H, H), rand(L, B, H)), scan="loop")
    assert [bool(k.loops) for k in looped.program.kernels] == [True]
    assert totals(looped.program) == totals(t.program)
    assert program_io(looped.program).bytes == program_io(t.program).bytes
    body = trace_jax(
        lambda c, w, x: (jnp.tanh(c @ w + x), c.sum()), (rand(B, H), rand(H, H), rand(B, H))
    )
    assert totals(t.program) == {k: L * v for k, v in totals(body.program).items()}
    assert totals(t.program) == {
        "tc_tf32": L * 2 * B * H * H,
        "sfu": L * B * H,
        "cuda_fp32": L * (B * H - 1),
    }
    assert sum(k.op.startswith("dot_general") for k in t.program.kernels) == L


# ------------------------------------------------------------------------- kernel grouping
def test_elementwise_chains_fuse_into_their_consumer():
    def f(x, w):
        h = jnp.exp(x) * 2 + 1  # fused into the dot (prologue)
        return jnp.tanh(h @ w) + 3  # fused into the dot (epilogue)

    t = check(f, X, rand(4, 5), kernels=["dot_general + exp, mul, add, tanh"])
    assert t.program.role("exp") == "local"


def test_softmax_grouping_and_intermediates():
    t = check(lambda x: jax.nn.softmax(x, -1), X)
    ops = [k.op for k in t.program.kernels]
    assert ops == ["reduce_max", "reduce_sum + max, sub, exp", "fusion + div"] or len(ops) <= 3, ops
    # the row maximum and sum cross DRAM (heavy results read by another kernel)
    roles = {n: t.program.role(n) for n in t.program.tensors if t.program.tensors[n].view is None}
    assert roles[t.output_names[0]] == "output"


def test_long_scans_become_one_looped_kernel():
    def decode(h, w):
        return lax.fori_loop(0, 4096, lambda i, c: jnp.tanh(c @ w), h)

    t = trace_jax(decode, (S((8, 256), jnp.float32), S((256, 256), jnp.float32)))
    (k,) = [k for k in t.program.kernels if k.loops]
    assert k.loops[0].extent == 4096
    assert totals(t.program)["tc_tf32"] == 4096 * 2 * 8 * 256 * 256


def test_unfused_is_below_one_kernel_per_primitive():
    from solar.api import bound_program

    def f(x):
        for _ in range(4):
            x = jnp.tanh(x * 1.5 + 0.5)
        return x

    t = trace_jax(f, (S((1024, 1024), jnp.float32),))
    assert len(t.program.kernels) == 1
    b = bound_program(t.program)
    assert b.unfused == pytest.approx(b.fused)


# ---------------------------------------------------------------------------- precision
def contraction_precisions(t):
    return [st.precision for k in t.program.kernels for st in k.statements if st.reduce == "sum"]


def test_precision_default_is_tf32_on_gpu():
    t = trace_jax(lambda a, b: a @ b, (rand(3, 4), rand(4, 5)))
    assert contraction_precisions(t) == ["tf32"]
    assert totals(t.program) == {"tc_tf32": 2 * 3 * 4 * 5}


@pytest.mark.parametrize("precision", ["highest", lax.Precision.HIGHEST, "float32"])
def test_precision_highest_is_ieee(precision):
    t = trace_jax(lambda a, b: jnp.matmul(a, b, precision=precision), (rand(3, 4), rand(4, 5)))
    assert contraction_precisions(t) == ["ieee"]
    assert totals(t.program) == {"cuda_fp32": 2 * 3 * 4 * 5}


@pytest.mark.parametrize("precision", ["high", "default", "tensorfloat32", lax.Precision.HIGH])
def test_precision_high_and_default_are_tf32(precision):
    t = trace_jax(lambda a, b: jnp.matmul(a, b, precision=precision), (rand(3, 4), rand(4, 5)))
    assert contraction_precisions(t) == ["tf32"]


def test_precision_follows_default_matmul_precision_config():
    with jax.default_matmul_precision("float32"):
        t = trace_jax(lambda a, b: a @ b, (rand(3, 4), rand(4, 5)))
    assert contraction_precisions(t) == ["ieee"]
    with jax.default_matmul_precision("tensorfloat32"):
        t = trace_jax(lambda a, b: a @ b, (rand(3, 4), rand(4, 5)))
    assert contraction_precisions(t) == ["tf32"]


def test_precision_bf16_algorithm_rounds_operands():
    f = lambda a, b: jnp.matmul(a, b, precision=lax.DotAlgorithmPreset.BF16_BF16_F32)  # noqa: E731
    t = check(f, rand(3, 4), rand(4, 5), precision=None, tol=2e-2)
    assert totals(t.program) == {"tc_bf16": 2 * 3 * 4 * 5}


def test_precision_override_and_native_dtypes():
    t = trace_jax(lambda a, b: a @ b, (rand(3, 4), rand(4, 5)), precision="ieee")
    assert contraction_precisions(t) == ["ieee"]
    t = trace_jax(
        lambda a, b: a @ b, (rand(3, 4, dtype=jnp.bfloat16), rand(4, 5, dtype=jnp.bfloat16))
    )
    assert contraction_precisions(t) == [None] and totals(t.program) == {"tc_bf16": 120}


def test_precision_of_convolutions():
    x, w = rand(1, 2, 5, 5), rand(3, 2, 3, 3)
    assert contraction_precisions(trace_jax(lambda a, b: conv(a, b), (x, w))) == ["tf32"]
    f = lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME", precision="highest")  # noqa: E731
    assert contraction_precisions(trace_jax(f, (x, w))) == ["ieee"]


# ------------------------------------------------------------------------------- errors
def test_unsupported_primitive_names_the_primitive_and_the_line():
    def f(x, y):
        return jnp.nextafter(x, y)  # the line the error must point at

    with pytest.raises(UnsupportedPrimitiveError) as e:
        trace_jax(f, (X, P))
    msg = str(e.value)
    line = f.__code__.co_firstlineno + 1
    assert msg.startswith(f"jax primitive nextafter at {HERE}:{line} ")
    assert '@solar.frontend.jax.lowering("nextafter")' in msg and "\n" not in msg


def test_registering_a_rule_adds_a_primitive():
    from solar.frontend.jax import LOWERINGS, lowering
    from solar.frontend.lowering.pointwise import pointwise
    from solar.ir.scalar import call

    assert "nextafter" not in LOWERINGS
    try:
        # a (wrong, but local) rule: one table entry is all it takes
        lowering("nextafter")(
            lambda ctx, y, x, **_: pointwise(ctx, lambda a, b: call("div", a, b), [y, x])
        )
        t = trace_jax(lambda a, b: jnp.nextafter(a, b), (X, P))
        assert [k.op for k in t.program.kernels] == ["nextafter"]
    finally:
        LOWERINGS.remove("nextafter")


def test_unsupported_dtype_is_one_line():
    from solar.frontend.jax import UnsupportedDtypeError

    with pytest.raises(UnsupportedDtypeError, match="uint16"):
        trace_jax(lambda x: x + 1, (jnp.zeros(3, jnp.uint16),))


# ---------------------------------------------------------------------- names and values
def test_pytree_names_roles_and_bindings():
    def mlp(params, x):
        return jax.nn.relu(x @ params["dense1"]["kernel"] + params["dense1"]["bias"])

    params = {"dense1": {"kernel": S((1024, 4096), jnp.float32), "bias": S((4096,), jnp.float32)}}
    t = trace_jax(mlp, (params, S((8, 1024), jnp.float32)))
    assert t.bindings == {
        "params_dense1_bias": ("weight", "params/dense1/bias"),
        "params_dense1_kernel": ("weight", "params/dense1/kernel"),
        "x": ("input", "x"),
    }
    assert t.program.inputs == list(t.bindings)
    assert [t.program.tensors[n].role for n in t.program.inputs] == ["weight", "weight", "input"]


def test_unused_inputs_are_not_declared():
    t = trace_jax(lambda a, b: a * 2, (X, jnp.zeros(3, jnp.uint32)))
    assert list(t.bindings) == ["a"]


def test_static_python_leaves_are_constants():
    t = check(lambda x, cfg: x * cfg["scale"] + cfg["shift"], X, {"scale": 3.0, "shift": 1})
    assert list(t.bindings) == ["x"]


def test_abstract_inputs_allocate_nothing():
    big = S((65536, 65536), jnp.bfloat16)  # 8 GiB if it were allocated
    t = trace_jax(lambda a, b: a @ b, (big, big))
    assert totals(t.program) == {"tc_bf16": 2 * 65536**3}
    with pytest.raises(ValueError, match="ShapeDtypeStruct"):
        t.values(lambda a, b: a @ b, (big, big))
