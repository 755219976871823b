"""Complex numbers and JAX's PRNG (issue 24): traced, executed as IR on CPU and compared with
PyTorch/JAX (random bits value for value: the IR computes Threefry-2x32 exactly), with the
operation counts derived by hand in real operations (a complex multiply 4 multiplies and 2
adds, a complex product in a contraction 3 real multiply-adds, a Threefry hash 72 integer ops)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from eager_oracle import check

from solar.interp.torch.scalar import threefry2x32
from solar.ir.cost import statement_ops


def rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g)


def cplx(*shape, seed=0):
    return torch.complex(rand(*shape, seed=seed), rand(*shape, seed=seed + 1))


def total(program) -> dict[str, int]:
    ops: dict[str, int] = {}
    for k in program.kernels:
        for st in k.statements:
            for c, n in statement_ops(program, st, k).items():
                ops[c] = ops.get(c, 0) + n
    return ops


# --------------------------------------------------------------------------- PyTorch
def test_complex_multiply_is_four_multiplies_and_two_adds():
    trace = check(lambda a, b: a * b, cplx(5), cplx(5, seed=2))
    assert total(trace.program) == {"cuda_fp32": 5 * 6}


def test_real_times_complex_is_two_multiplies():
    trace = check(lambda a, b: a * b, rand(5), cplx(5, seed=2))
    assert total(trace.program) == {"cuda_fp32": 5 * 2}


def test_complex_matmul_counts_three_real_products_per_pair():
    trace = check(lambda a, b: a @ b, cplx(2, 3), cplx(3, 4, seed=5))
    assert total(trace.program) == {"cuda_fp32": 2 * 4 * 3 * 2 * 3}  # pairs x 2 flops x 3


def test_complex_einsum_of_an_fno_layer():
    x, w = cplx(2, 3, 4), cplx(3, 5, 4, seed=3)
    trace = check(lambda x, w: torch.einsum("bix,iox->box", x, w), x, w)
    assert total(trace.program) == {"cuda_fp32": 2 * 5 * 4 * 3 * 2 * 3}


def test_abs_polar_complex_angle_and_division():
    r, t = rand(6).abs() + 0.5, rand(6, seed=1)

    def fn(r, t):
        z = torch.polar(r, t)
        return z.abs(), torch.angle(z), torch.complex(r, t) / z

    trace = check(fn, r, t)
    ops = total(trace.program)
    # polar: 2 multiplies + 2 MUFU (cos, sin); abs: 3 + 1 MUFU (sqrt); angle: atan2 (5);
    # complex / complex: 11 (complex(r, t) assembles for free)
    assert ops == {"cuda_fp32": 6 * (2 + 3 + 5 + 11), "sfu": 6 * (2 + 1)}


def test_complex_bytes_are_eight_per_element():
    trace = check(lambda a: a + 1, cplx(7))
    from solar.ir.cost import program_io

    io = program_io(trace.program)
    assert (io.read_bytes, io.write_bytes) == (7 * 8, 7 * 8)


def test_views_that_reinterpret_complex_storage_execute():
    """``view_as_real`` is a view of the complex storage as float32 pairs (no kernel);
    tests/test_complex_views.py derives its bytes."""
    trace = check(lambda z: torch.view_as_real(z) * 2, cplx(3))
    assert total(trace.program) == {"cuda_fp32": 6}


# ------------------------------------------------------------------------------- JAX
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from test_frontend_jax import check as jcheck  # noqa: E402


def test_threefry_matches_jax():
    import jax.extend.random

    k = np.array([0x12345678, 0x9ABCDEF0], np.uint32)
    x0 = np.arange(10, dtype=np.uint32)
    x1 = (x0 * 2654435761).astype(np.uint32)
    want = jax.extend.random.threefry_2x32(jnp.asarray(k), jnp.asarray(np.concatenate([x0, x1])))
    w0, w1 = threefry2x32(
        int(k[0]),
        int(k[1]),
        torch.from_numpy(x0.astype(np.int64)),
        torch.from_numpy(x1.astype(np.int64)),
    )
    got = np.concatenate([w0.numpy(), w1.numpy()]).astype(np.uint32)
    assert np.array_equal(got, np.asarray(want))


def test_jax_random_normal_draws_jax_bits_exactly():
    trace = jcheck(lambda k: jax.random.normal(k, (70,)), jax.random.key(3), tol=0)
    ops = total(trace.program)
    # per value: a Threefry hash (72), the xor of its words, a shift and an or on the bits
    assert ops["cuda_int32"] == 70 * (72 + 3)


def test_jax_raw_keys_split_and_fold_in():
    def fn(k):
        a, b = jax.random.split(k)
        return jax.random.uniform(jax.random.fold_in(a, 7), (4,)), jax.random.bits(b, (3,))

    trace = jcheck(fn, jax.random.PRNGKey(11), tol=0)
    # split into 2 keys: 2 x 72; fold_in: 72; uniform bits: 4 x (72 + 3); bits: 3 x (72 + 1)
    assert total(trace.program)["cuda_int32"] == 2 * 72 + 72 + 4 * 75 + 3 * 73


def test_jax_sampler_loop_with_a_key_per_step():
    def sampler(k, x):
        def step(i, carry):
            k, x = carry
            k, sub = jax.random.split(k)
            return k, 0.9 * x + 0.1 * jax.random.normal(sub, x.shape)

        return jax.lax.fori_loop(0, 3, step, (k, x))[1]

    x = jnp.asarray(rand(4, 8).numpy())
    jcheck(sampler, jax.random.key(7), x, tol=1e-6)


def test_jax_complex_primitives_count_real_work():
    z = jnp.asarray(cplx(3, 8).numpy())
    a = jnp.asarray(rand(3, 8).numpy())
    trace = jcheck(lambda a, z: (jax.lax.complex(a, a) * z, jnp.abs(z), z @ z.T), a, z)
    # complex * complex (6) per element; |z| 3 + 1 MUFU; z z^T: 3 x 3 x 8 pairs x 2 x 3
    assert total(trace.program) == {
        "cuda_fp32": 24 * 6 + 24 * 3 + 3 * 3 * 8 * 2 * 3,
        "sfu": 24,
    }
