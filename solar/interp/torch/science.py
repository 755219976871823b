"""The torch implementations of the FFT and dense linear-algebra routines of the extern table
(:mod:`solar.ir.extern_spectral`, :mod:`solar.ir.extern_linalg`: their attributes and counts)."""

from __future__ import annotations

from collections.abc import Callable

import torch


def _fft_fn(kind: str):
    def run(rows: torch.Tensor, shape, out_shape, forward=True, scale=1.0, dtype="float32"):
        k = len(shape)
        x = rows.reshape(*rows.shape[:-1], *shape)
        dims = tuple(range(-k, 0))
        # in the source's precision: the executor may hand over rows computed wider, and a
        # C2R of a half spectrum that is not Hermitian (FNO's independently set modes) is
        # implementation-defined: cuFFT's double-precision plan resolves it differently
        complex_dtype = torch.complex128 if dtype == "float64" else torch.complex64
        if kind == "c2c":
            x = x.to(complex_dtype)
            # unscaled both ways ("forward" norm puts no factor on the inverse)
            if forward:
                y = torch.fft.fftn(x, dim=dims, norm="backward")
            else:
                y = torch.fft.ifftn(x, dim=dims, norm="forward")
        elif kind == "r2c":
            x = x.real if x.is_complex() else x
            if tuple(out_shape) == tuple(shape):  # onesided=False: the full spectrum
                y = torch.fft.fftn(x, dim=dims, norm="backward")
            else:
                y = torch.fft.rfftn(x, dim=dims, norm="backward")
        else:
            y = torch.fft.irfftn(x.to(complex_dtype), s=tuple(out_shape), dim=dims, norm="forward")
        if scale != 1.0:
            y = y * scale
        return y.reshape(*rows.shape[:-1], -1)

    return run


def _parts(routine: str, a: torch.Tensor, b: torch.Tensor | None, attrs: dict) -> dict:
    """Every output of ``routine`` on the matrices ``a`` (and right-hand sides ``b``), by part
    name, in their logical shapes ``(*batch, ...)``."""
    if routine in ("lu", "solve", "det", "inv") or attrs.get("part") in ("factors", "pivots"):
        lu, piv = torch.linalg.lu_factor(a)
        parts = {"factors": lu, "pivots": piv, "info": torch.zeros(a.shape[:-2], device=a.device)}
        parts["pivots0"] = piv - 1  # 0-based (JAX)
        parts["permutation"] = pivots_to_permutation(piv - 1, a.shape[-2])
    else:
        parts = {"info": torch.zeros(a.shape[:-2], device=a.device)}
    if routine == "cholesky":
        parts["factor"] = torch.linalg.cholesky(a, upper=bool(attrs.get("upper", False)))
    elif routine == "triangular_solve":
        upper = bool(attrs.get("upper", False))
        parts["coefficients"] = a
        if attrs.get("transpose", False):
            a, upper = a.mT, not upper
        unit = bool(attrs.get("unit", False))
        x = torch.linalg.solve_triangular(a, b, upper=upper, unitriangular=unit)
        parts["x"] = x if attrs.get("left", True) else x.mT  # X A = B read as A^T X^T = B^T
    elif routine == "solve":
        parts["x"] = torch.linalg.solve(a, b)
    elif routine == "inv":
        parts["inverse"] = torch.linalg.inv(a)
    elif routine == "det":
        parts["det"] = torch.linalg.det(a)
        parts["sign"], parts["logabsdet"] = torch.linalg.slogdet(a)
    elif routine == "qr":
        parts["q"], parts["r"] = torch.linalg.qr(a, mode=str(attrs.get("mode", "reduced")))
    elif routine == "eigh":
        uplo = "U" if attrs.get("upper", False) else "L"
        parts["values"], parts["vectors"] = torch.linalg.eigh(a, UPLO=uplo)
    elif routine == "svd":
        full = bool(attrs.get("full_matrices", False))
        parts["u"], parts["s"], parts["vh"] = torch.linalg.svd(a, full_matrices=full)
    return parts


def pivots_to_permutation(pivots: torch.Tensor, m: int) -> torch.Tensor:
    """The row permutation of LAPACK's 0-based row swaps (row i swapped with pivots[i], in
    order), as ``jax.lax.linalg.lu_pivots_to_permutation`` returns it."""
    perm = torch.arange(m, dtype=torch.int64, device=pivots.device)
    perm = perm.expand(*pivots.shape[:-1], m).clone()
    piv = pivots.to(torch.int64)
    for i in range(piv.shape[-1]):
        j = piv[..., i : i + 1]
        pi = perm[..., i : i + 1].clone()
        perm[..., i : i + 1] = torch.gather(perm, -1, j)
        perm.scatter_(-1, j, pi)
    return perm


def _routine(routine: str):
    def run(rows: torch.Tensor, m: int, n: int, k: int = 0, part: str = "", perm=(), **attrs):
        nb = rows.dim() - 1
        if k:
            aug = rows.reshape(*rows.shape[:-1], n, n + k)
            a, b = aug[..., :n], aug[..., n:]
        else:
            a, b = rows.reshape(*rows.shape[:-1], m, n), None
        res = _parts(routine, a, b, {**attrs, "part": part})[part]
        if perm:  # the output's storage order of its matrix axes
            res = res.permute(*range(nb), *(nb + int(d) for d in perm))
        return res.reshape(*rows.shape[:-1], -1)

    return run


_LINALG = ("lu", "cholesky", "triangular_solve", "solve", "inv", "det", "qr", "eigh", "svd")

#: routine name -> fn(rows (*batch, n), **attrs) -> (*batch, m)
SCIENCE_ROUTINES: dict[str, Callable[..., torch.Tensor]] = {
    **{f"fft.{kind}": _fft_fn(kind) for kind in ("c2c", "r2c", "c2r")},
    **{f"linalg.{name}": _routine(name) for name in _LINALG},
    "linalg.pivots_to_permutation": lambda rows, m, n, **_: pivots_to_permutation(rows, int(m)),
}
