"""Oracle cases for the JAX rules of issue 24: ``fft``, the linear-algebra primitives,
complex numbers, the PRNG (keys, random bits, threefry) and the bit operations JAX's samplers
use, registered into :data:`oracle_cases_jax.CASES` (that module imports this one at its end).
Matrices are made well conditioned (``A A^T + n I``)."""

from __future__ import annotations

import jax
import jax.extend.random
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st
from jax import lax
from oracle_cases_jax import Draw, case, rand, shape

_RNG = np.random.default_rng(24)


def spd(draw: Draw):
    n = draw(st.integers(1, 5))
    batch = shape(draw, 0, 2, 3)
    a = jnp.asarray(_RNG.standard_normal((*batch, n, n)), jnp.float32)
    return a @ jnp.swapaxes(a, -1, -2) + n * jnp.eye(n)


def cplx(shp):
    return (rand(shp) + 1j * rand(shp)).astype(jnp.complex64)


def u32(shp):
    return jnp.asarray(_RNG.integers(0, 2**32, shp, dtype=np.uint64), jnp.uint32)


# ------------------------------------------------------------------------------- fft
@case("fft")
def _fft(draw):
    x = rand(shape(draw, 1, 3, 6))
    k = draw(st.integers(1, min(3, x.ndim)))
    axes = tuple(range(-k, 0))
    kind = draw(st.sampled_from(["fft", "ifft", "rfft", "irfft"]))
    if kind == "fft":
        return (lambda x: jnp.fft.fftn(x, axes=axes)), (x,)
    if kind == "ifft":
        return (lambda z: jnp.fft.ifftn(z, axes=axes)), (cplx(x.shape),)
    if kind == "rfft":
        return (lambda x: jnp.fft.rfftn(x, axes=axes)), (x,)
    n = draw(st.integers(1, 8))
    return (lambda z: jnp.fft.irfft(z, n=n)), (cplx(x.shape),)


# -------------------------------------------------------------------- linear algebra
@case("lu")
def _lu(draw):
    return (lambda a: lax.linalg.lu(a)), (spd(draw),)


@case("lu_pivots_to_permutation")
def _perm(draw):
    n, batch = draw(st.integers(1, 6)), shape(draw, 0, 1)
    piv = np.stack([_RNG.integers(i, n, batch) for i in range(n)], -1).astype(np.int32)
    return (lambda p: lax.linalg.lu_pivots_to_permutation(p, n)), (jnp.asarray(piv),)


@case("cholesky")
def _cholesky(draw):
    return (lambda a: jnp.linalg.cholesky(a)), (spd(draw),)


@case("triangular_solve")
def _triangular_solve(draw):
    a, left, lower = spd(draw), draw(st.booleans()), draw(st.booleans())
    tr, unit = draw(st.booleans()), draw(st.booleans())
    k = draw(st.integers(1, 3))
    shp = (*a.shape[:-1], k) if left else (*a.shape[:-2], k, a.shape[-1])
    return (
        lambda a, b: lax.linalg.triangular_solve(
            a, b, left_side=left, lower=lower, transpose_a=tr, unit_diagonal=unit
        )
    ), (a, rand(shp))


@case("custom_linear_solve")
def _solve(draw):
    a = spd(draw)
    return (lambda a, b: jnp.linalg.solve(a, b)), (a, rand((*a.shape[:-1], 2)))


@case("qr")
def _qr(draw):
    m, n = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    full = draw(st.booleans())
    mode = "complete" if full else "reduced"
    return (lambda a: jnp.linalg.qr(a, mode=mode)), (rand((*shape(draw, 0, 1), m, n)),)


@case("eigh")
def _eigh(draw):
    return (lambda a: jnp.linalg.eigh(a)), (spd(draw),)


@case("svd")
def _svd(draw):
    m, n = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    uv = draw(st.booleans())
    return (lambda a: jnp.linalg.svd(a, full_matrices=False, compute_uv=uv)), (
        rand((*shape(draw, 0, 1), m, n)),
    )


# --------------------------------------------------------------------------- complex
@case("complex")
def _complex(draw):
    shp = shape(draw)
    return (lambda a, b: lax.complex(a, b) * lax.complex(b, a)), (rand(shp), rand(shp))


for _n, _f in {"real": jnp.real, "imag": jnp.imag, "conj": jnp.conj}.items():
    case(_n)(lambda draw, f=_f: ((lambda z: f(z) * 2), (cplx(shape(draw)),)))


@case("abs")
def _abs_complex(draw):
    return (lambda z: jnp.abs(z)), (cplx(shape(draw)),)


@case("dot_general")
def _complex_dot(draw):
    m, k, n = (draw(st.integers(1, 4)) for _ in range(3))
    return (lambda a, b: a @ b), (cplx((m, k)), cplx((k, n)))


@case("atan2")
def _atan2(draw):
    shp = shape(draw)
    return (lambda y, x: jnp.arctan2(y, x)), (rand(shp) - 0.5, rand(shp) - 0.5)


@case("erf_inv")
def _erf_inv(draw):
    return (lambda x: lax.erf_inv(x * 0.9)), (rand(shape(draw)) - 0.5,)


# ------------------------------------------------------------------------------ bits
@case("shift_right_logical")
def _srl(draw):
    s = draw(st.integers(0, 33))
    return (lambda x: lax.shift_right_logical(x, jnp.uint32(s))), (u32(shape(draw)),)


@case("shift_left")
def _sl(draw):
    s = draw(st.integers(0, 33))
    return (lambda x: lax.shift_left(x, jnp.uint32(s))), (u32(shape(draw)),)


@case("bitcast_convert_type")
def _bitcast(draw):
    if draw(st.booleans()):
        return (lambda x: lax.bitcast_convert_type(x >> 9 | 0x3F800000, jnp.float32)), (
            u32(shape(draw)),
        )
    return (lambda x: lax.bitcast_convert_type(x, jnp.uint32)), (rand(shape(draw)),)


for _n, _f in {"and": jnp.bitwise_and, "or": jnp.bitwise_or, "xor": jnp.bitwise_xor}.items():
    case(_n)(lambda draw, f=_f: (f, (u32(shape(draw)), u32((1,)))))
case("not")(lambda draw: (jnp.invert, (u32(shape(draw)),)))


# ------------------------------------------------------------------------------- PRNG
@case("random_seed")
def _seed(draw):
    seed = jnp.int32(draw(st.integers(-(2**31), 2**31 - 1)))
    return (lambda s: jax.random.key_data(jax.random.key(s))), (seed,)


@case("random_wrap")
def _wrap(draw):
    return (lambda d: jax.random.uniform(jax.random.wrap_key_data(d), (3,))), (u32((2,)),)


@case("random_unwrap")
def _unwrap(draw):
    key = jax.random.key(draw(st.integers(0, 9)))
    return (lambda k: jax.random.key_data(jax.random.split(k))), (key,)


@case("random_bits")
def _bits(draw):
    shp = shape(draw)
    return (lambda k: jax.random.normal(k, shp)), (jax.random.key(draw(st.integers(0, 9))),)


@case("random_split")
def _split(draw):
    n = draw(st.integers(1, 4))
    return (lambda k: jax.random.split(k, n)), (jax.random.PRNGKey(draw(st.integers(0, 9))),)


@case("random_fold_in")
def _fold_in(draw):
    d = draw(st.integers(0, 2**32 - 1))
    return (lambda k: jax.random.fold_in(k, d)), (jax.random.PRNGKey(3),)


@case("threefry2x32")
def _threefry(draw):
    shp = shape(draw, 1, 2)
    return (lambda k, x: jax.extend.random.threefry_2x32(k, x)), (u32((2,)), u32((*shp, 2)))
