"""FFTs and dense linear algebra (issue 24) in PyTorch and JAX: every operator traced, executed
as IR on CPU and compared with the framework (and numpy), one kernel each, with its operation
count and DRAM bytes derived by hand from the published counts (split-radix FFT, the classical
LU/Cholesky/solve counts) and the operands' sizes."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from eager_oracle import check

from solar.interp.torch.execute import execute
from solar.ir.cost import kernel_io, statement_ops
from solar.ir.extern_linalg import getrf_flops, potrf_flops
from solar.ir.extern_spectral import complex_fft_flops, real_fft_flops


def rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g)


def spd(n, batch=(), seed=0):
    a = rand(*batch, n, n, seed=seed)
    return a @ a.mT + n * torch.eye(n)


def only_kernel(program):
    assert len(program.kernels) == 1, str(program)
    k = program.kernels[0]
    ops: dict[str, int] = {}
    for st in k.statements:
        for c, n in statement_ops(program, st, k).items():
            ops[c] = ops.get(c, 0) + n
    io = kernel_io(program, k)
    return ops, io.read_bytes, io.write_bytes


# ------------------------------------------------------------------------ the counts
def test_published_fft_counts():
    # split-radix, complex: 4 n log2 n - 6 n + 8 (n = 2, 4, 8, 16: 4, 16, 56, 168)
    assert [complex_fft_flops(n) for n in (1, 2, 4, 8, 16)] == [0, 4, 16, 56, 168]
    # real-data split radix: 2 n log2 n - 4 n + 6 (n = 4, 8, 16: 6, 22, 70)
    assert [real_fft_flops(n) for n in (4, 8, 16)] == [6, 22, 70]
    # other lengths: the cheapest plan of solar/ir/fft_counts.py (tests/test_fft_counts.py
    # executes them): n = 10 Good-Thomas 2 x 5, 5 two-point (5 x 4) + 2 Winograd five-point
    # (2 x 44) = 108; n = 3 Winograd, 4 multiplies + 12 adds = 16; real n = 10: 108/2 - 8 = 46
    assert complex_fft_flops(10) == 108
    assert complex_fft_flops(3) == 16
    assert real_fft_flops(10) == 46


def test_classical_linalg_counts():
    for n in range(1, 9):  # LU 2n^3/3 - n^2/2 - n/6, Cholesky n^3/3 + n^2/2 + n/6 - n
        assert getrf_flops(n, n) == (4 * n**3 - 3 * n**2 - n) // 6
        assert potrf_flops(n) == (2 * n**3 + 3 * n**2 + n) // 6 - n
    assert getrf_flops(4, 4) == 34 and potrf_flops(4) == 26


# --------------------------------------------------------------------------- PyTorch
def test_torch_fft_of_real_input_is_one_r2c_kernel():
    x = rand(3, 8)
    trace = check(lambda x: torch.fft.fft(x), x)
    ops, read, write = only_kernel(trace.program)
    assert ops == {"cuda_fp32": 3 * 22}  # 3 real 8-point transforms
    assert (read, write) == (3 * 8 * 4, 3 * 8 * 8)  # float32 in, complex64 (8 bytes) out


def test_torch_rfft2_counts_row_column():
    x = rand(2, 8, 8)
    trace = check(lambda x: torch.fft.rfft2(x), x)
    ops, read, write = only_kernel(trace.program)
    # per image: 8 real 8-point rows (8 x 22) + 5 complex 8-point columns (5 x 56)
    assert ops == {"cuda_fp32": 2 * (8 * 22 + 5 * 56)}
    assert (read, write) == (2 * 64 * 4, 2 * 8 * 5 * 8)


def test_torch_complex_fft_and_inverse_match_numpy():
    z = torch.complex(rand(2, 16), rand(2, 16, seed=1))
    trace = check(lambda z: torch.fft.ifft(torch.fft.fft(z, norm="ortho"), dim=0), z)
    got = execute(trace.program, trace.values(lambda z: None, (z,)))
    want = np.fft.ifft(np.fft.fft(z.numpy(), norm="ortho"), axis=0)
    np.testing.assert_allclose(got[trace.output_names[0]].numpy(), want, rtol=1e-5, atol=1e-5)
    k0, k1 = trace.program.kernels
    assert sum(statement_ops(trace.program, s, k0).get("cuda_fp32", 0) for s in k0.statements) == (
        2 * 168
    )
    assert sum(statement_ops(trace.program, s, k1).get("cuda_fp32", 0) for s in k1.statements) == (
        16 * 4  # 16 complex 2-point transforms along dim 0
    )


def test_torch_irfft_with_other_length():
    x = torch.complex(rand(3, 6), rand(3, 6, seed=2))
    trace = check(lambda x: torch.fft.irfft(x, n=10), x)
    ops, read, write = only_kernel(trace.program)
    assert ops == {"cuda_fp32": 3 * real_fft_flops(10)}
    assert (read, write) == (3 * 6 * 8, 3 * 10 * 4)


def test_torch_solve_is_one_kernel_with_lu_and_two_triangular_solves():
    a, b = spd(4, (2,)), rand(2, 4, 3)
    trace = check(torch.linalg.solve, a, b, tol=lambda w: (1e-4, 1e-4, True))
    ops, read, write = only_kernel(trace.program)
    assert ops == {"cuda_fp32": 2 * (34 + 3 * (2 * 16 - 4))}  # getrf + k (2n^2 - n)
    # A and B read once; X, the LU factors, the pivots (int32) and info (int32) written once
    assert read == 2 * (16 + 12) * 4
    assert write == 2 * (12 * 4 + 16 * 4 + 4 * 4 + 4)


def test_torch_cholesky_counts_square_roots():
    a = spd(4, (2,))
    trace = check(torch.linalg.cholesky, a, tol=lambda w: (1e-4, 1e-4, True))
    ops, read, write = only_kernel(trace.program)
    assert ops == {"cuda_fp32": 2 * 26, "sfu": 2 * 4}
    assert (read, write) == (2 * 64, 2 * 64 + 2 * 4)


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: torch.linalg.inv(a),
        lambda a: torch.linalg.det(a),
        lambda a: torch.linalg.slogdet(a),
        lambda a: torch.linalg.eigvalsh(a),
        lambda a: torch.linalg.lu_factor(a),
        lambda a: torch.linalg.qr(a[..., :3]),
        lambda a: torch.linalg.svdvals(a[..., :3, :]),
        lambda a: torch.linalg.solve_triangular(a, a[..., :2], upper=False),
        lambda a: torch.triangular_solve(a[..., :2], a, upper=True, transpose=True),
        lambda a: torch.linalg.solve(a, a[..., 0]),
    ],
    ids=["inv", "det", "slogdet", "eigvalsh", "lu_factor", "qr", "svdvals", "trsm", "ts", "vec"],
)
def test_torch_linalg_matches_eager(fn):
    trace = check(fn, spd(5, (2,)), tol=lambda w: (1e-4, 1e-4, True))
    assert all(k.op.startswith("aten.") for k in trace.program.kernels)


def test_torch_linalg_assumptions_state_the_classical_counts():
    import solar

    bound = solar.bound(torch.linalg.eigh, (spd(8),), hw="H100")
    text = "\n".join(bound.assumptions)
    assert "classical operation counts" in text and "tridiagonal" in text


# ------------------------------------------------------------------------------- JAX
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from test_frontend_jax import check as jcheck  # noqa: E402


def test_jax_fft_primitive_counts():
    x = jnp.asarray(rand(3, 8).numpy())
    trace = jcheck(lambda x: jnp.fft.rfft(x), x)
    ops, read, write = only_kernel(trace.program)
    assert ops == {"cuda_fp32": 3 * 22}
    assert (read, write) == (3 * 8 * 4, 3 * 5 * 8)


def test_jax_ifft_scales_by_one_over_n():
    z = jnp.asarray(torch.complex(rand(2, 8), rand(2, 8, seed=3)).numpy())
    trace = jcheck(lambda z: jnp.fft.ifft(z), z)
    ops, _, _ = only_kernel(trace.program)
    assert ops == {"cuda_fp32": 2 * 56}


def test_jax_solve_lowers_to_lu_and_triangular_solves():
    a, b = jnp.asarray(spd(4, (2,)).numpy()), jnp.asarray(rand(2, 4, 3).numpy())
    trace = jcheck(jnp.linalg.solve, a, b, tol=1e-4)
    ops = [k.op for k in trace.program.kernels]
    assert ops[0] == "lu" and sum(o.startswith("triangular_solve") for o in ops) == 2
    lu = trace.program.kernels[0]
    total = sum(statement_ops(trace.program, s, lu).get("cuda_fp32", 0) for s in lu.statements)
    assert total == 2 * 34


@pytest.mark.parametrize(
    "fn",
    [
        jnp.linalg.cholesky,
        jnp.linalg.inv,
        jnp.linalg.det,
        jnp.linalg.slogdet,
        lambda a: jnp.linalg.qr(a[..., :3]),
        lambda a: jnp.linalg.eigh(a)[0],
        lambda a: jnp.linalg.svd(a, compute_uv=False),
        lambda a: jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a), a[..., :2]),
        lambda a: jax.scipy.linalg.lu_factor(a),
    ],
    ids=["cholesky", "inv", "det", "slogdet", "qr", "eigvalsh", "svdvals", "cho_solve", "lu"],
)
def test_jax_linalg_matches_jax(fn):
    jcheck(fn, jnp.asarray(spd(5, (2,)).numpy()), tol=1e-4)


def test_eigh_vectors_are_eigenvectors_and_count_the_reduction():
    """Eigenvectors are unique only up to sign (LAPACK builds differ): the IR's vectors are
    checked by ``A v = lambda v``; the count is the tridiagonal reduction (4n^3/3) plus the
    back-transformation (2n^3), the iterations taken as free."""
    from solar.frontend.jax import trace_jax

    a = jnp.asarray(spd(6).numpy())
    fn = jnp.linalg.eigh
    trace = trace_jax(fn, (a,), precision="ieee")
    got = execute(trace.program, trace.values(fn, (a,)))
    w, v = (got[n] for n in trace.output_names)
    a_t = torch.from_numpy(np.array(a))
    torch.testing.assert_close(a_t @ v, v * w, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(w, torch.linalg.eigvalsh(a_t), rtol=1e-5, atol=1e-5)
    k = next(k for k in trace.program.kernels if k.op.startswith("eigh"))
    total = sum(statement_ops(trace.program, s, k).get("cuda_fp32", 0) for s in k.statements)
    # plus jnp's symmetrization (a + a^T) / 2 that XLA fuses into the kernel: 36 adds, 36 divides
    assert total == 4 * 6**3 // 3 + 2 * 6**3 + 2 * 36
