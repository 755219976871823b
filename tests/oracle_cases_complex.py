"""Oracle cases for the lowerings of issue 24 in PyTorch: FFTs (``_fft_r2c``, ``_fft_c2r``,
``_fft_c2c``), dense linear algebra (``torch.linalg``) and complex numbers (``polar``,
``complex``, ``abs``/``angle`` of complex tensors, ``conj_physical``), registered into
:data:`oracle_cases_torch.CASES` (that module imports this one at its end).

Sizes and parameters are drawn; matrices are made well conditioned (``A A^T + n I``) so every
routine runs. The counting oracle executes each program and checks its analytical counts: the
routines' DRAM traffic (inputs and outputs once) and their operation counts (the rows of
:mod:`solar.ir.extern_spectral` and :mod:`solar.ir.extern_linalg`).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from oracle_cases_torch import Draw, case, rand, shape

aten = torch.ops.aten


def spd(draw: Draw) -> torch.Tensor:
    """A batch of symmetric positive definite matrices (0 to 2 batch dims)."""
    n = draw(st.integers(1, 5))
    batch = shape(draw, 0, 2, 3)
    a = rand((*batch, n, n)) - 0.5
    return a @ a.mT + n * torch.eye(n)


def cplx(shp: tuple[int, ...]) -> torch.Tensor:
    return torch.complex(rand(shp), rand(shp))


def norm(draw: Draw) -> str:
    return draw(st.sampled_from(["backward", "ortho", "forward"]))


# ------------------------------------------------------------------------------- FFTs
@case(aten._fft_r2c.default)
def _r2c(draw):
    x = rand(shape(draw, 1, 3, 6))
    k, nm = draw(st.integers(1, x.ndim)), norm(draw)
    if draw(st.booleans()):  # fft of a real tensor: the full spectrum (onesided=False)
        return (lambda x: torch.fft.fft(x, norm=nm)), (x,)
    return (lambda x: torch.fft.rfftn(x, dim=tuple(range(-k, 0)), norm=nm)), (x,)


@case(aten._fft_c2r.default)
def _c2r(draw):
    x = cplx(shape(draw, 1, 3, 5))
    n, nm = draw(st.integers(1, 8)), norm(draw)
    return (lambda x: torch.fft.irfft(x, n=n, norm=nm)), (x,)


@case(aten._fft_c2c.default)
def _c2c(draw):
    x = cplx(shape(draw, 1, 3, 6))
    inverse, nm = draw(st.booleans()), norm(draw)
    dim = draw(st.integers(0, x.ndim - 1))
    fn = torch.fft.ifft if inverse else torch.fft.fft
    return (lambda x: fn(x, dim=dim, norm=nm)), (x,)


# ------------------------------------------------------------------------ linear algebra
@case(aten.linalg_lu_factor_ex.default)
def _lu(draw):
    return (lambda a: torch.linalg.lu_factor_ex(a)), (spd(draw),)


@case(aten.linalg_cholesky_ex.default)
def _cholesky(draw):
    upper = draw(st.booleans())
    return (lambda a: torch.linalg.cholesky(a, upper=upper)), (spd(draw),)


@case(aten._linalg_check_errors.default)
def _check_errors(draw):
    return (lambda a: torch.linalg.inv(a)), (spd(draw),)


@case(aten._linalg_solve_ex.default)
def _solve(draw):
    a = spd(draw)
    vector = draw(st.booleans())
    b = rand(a.shape[:-1]) if vector else rand((*a.shape[:-1], draw(st.integers(1, 3))))
    return (lambda a, b: torch.linalg.solve(a, b)), (a, b)


@case(aten.linalg_inv_ex.default)
def _inv(draw):
    return (lambda a: torch.linalg.inv_ex(a)), (spd(draw),)


@case(aten._linalg_det.default)
def _det(draw):
    return (lambda a: torch.linalg.det(a)), (spd(draw),)


@case(aten._linalg_slogdet.default)
def _slogdet(draw):
    return (lambda a: torch.linalg.slogdet(a)), (spd(draw),)


@case(aten.linalg_qr.default)
def _qr(draw):
    m, n = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    mode = draw(st.sampled_from(["reduced", "complete", "r"]))
    return (lambda a: torch.linalg.qr(a, mode=mode)), (rand((*shape(draw, 0, 1), m, n)),)


@case(aten._linalg_eigh.default)
def _eigh(draw):
    vectors = draw(st.booleans())
    fn = torch.linalg.eigh if vectors else torch.linalg.eigvalsh
    return (lambda a: fn(a)), (spd(draw),)


@case(aten._linalg_svd.default)
def _svd(draw):
    m, n = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    uv = draw(st.booleans())
    fn = (lambda a: torch.linalg.svd(a, full_matrices=False)) if uv else torch.linalg.svdvals
    return fn, (rand((*shape(draw, 0, 1), m, n)),)


@case(aten.linalg_solve_triangular.default)
def _solve_triangular(draw):
    a, upper, unit = spd(draw), draw(st.booleans()), draw(st.booleans())
    b = rand((*a.shape[:-1], draw(st.integers(1, 3))))
    return (lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, unitriangular=unit)), (
        a,
        b,
    )


@case(aten.triangular_solve.default)
def _triangular_solve(draw):
    a, upper, tr = spd(draw), draw(st.booleans()), draw(st.booleans())
    b = rand((*a.shape[:-1], draw(st.integers(1, 3))))
    return (lambda b, a: torch.triangular_solve(b, a, upper=upper, transpose=tr)), (b, a)


# ---------------------------------------------------------------------- complex numbers
@case(aten.polar.default)
def _polar(draw):
    shp = shape(draw)
    return (lambda r, t: torch.polar(r, t) * torch.polar(t, r)), (rand(shp), rand(shp))


@case(aten.complex.default)
def _complex(draw):
    shp = shape(draw)
    return (lambda a, b: torch.complex(a, b) / torch.complex(b, a)), (rand(shp), rand(shp))


@case(aten.abs.default)
def _abs(draw):
    shp = shape(draw)
    real = draw(st.booleans())
    return (lambda x: (x - 0.5).abs()), (rand(shp) if real else cplx(shp),)


@case(aten.angle.default)
def _angle(draw):
    return (lambda x: torch.angle(x)), (cplx(shape(draw)),)


@case(aten._conj_physical.default)
def _conj(draw):
    return (lambda x: torch.conj_physical(x) * x), (cplx(shape(draw)),)
