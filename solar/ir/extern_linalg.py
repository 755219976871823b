"""Dense linear-algebra routines of the extern table (issue 24), as cuSOLVER/cuBLAS run them.

A routine's row is one (batched) matrix flattened row-major: the row dims of the extern
statement are the matrix's two axes. Routines of two operands (``solve``, ``triangular_solve``)
read the augmented matrix ``[A | B]`` (``n x (n + k)``), which the lowering assembles in a
kernel-local buffer (free: no DRAM traffic). A routine with several outputs (``eigh``: values
and vectors; ``qr``: Q and R; ``lu``: factors and pivots) is one statement per output, all in
one kernel; the statement with ``extern_attrs["counted"]`` true carries the routine's whole
operation count, the others none, so the kernel is charged once.

``extern_attrs``: ``m``, ``n`` (the matrix), ``k`` (right-hand sides), ``dtype`` (the real
dtype of the arithmetic), ``counted``, and each routine's options (``upper``, ``left``,
``unit``, ``transpose`` ...).

Cost model: the *classical* operation counts (real flops, a multiply-add counting 2), exact
for the unblocked algorithm (loop sums below) or the leading term where stated, whose
lower-order terms are positive in LAPACK Working Note 41 (Blackford & Dongarra, "Installation
Guide for LAPACK", LAWN 41, flop-count table), so dropping them keeps a lower bound. Faster
(Strassen-like) algorithms exist in theory; cuSOLVER and cuBLAS do not use them. Pivot
searches (comparisons) and row swaps (data movement) count 0.

- LU with partial pivoting (getrf, m x n): ``sum_{k < min(m,n)} (m-k-1) + 2 (m-k-1)(n-k-1)``
  (divides by the pivot, then the rank-1 update): ``2n^3/3 - n^2/2 - n/6`` for square n.
- Cholesky (potrf, n): ``sum_k (n-k-1) + (n-k-1)(n-k)`` flops and n square roots
  (``n^3/3`` multiply-adds to leading order).
- Triangular solve (trsm, n, k right-hand sides): ``k n^2`` (``k n (n-1)`` with a unit
  diagonal: no divides).
- solve (getrf + two trsm, L unit): ``getrf(n, n) + k (2 n^2 - n)``.
- inverse (getrf + getri): ``getrf(n, n) + 4n^3/3 - n^2 + 5n/3`` (LAWN 41's getri count).
- det (getrf + the product of the diagonal): ``getrf(n, n) + n - 1``.
- QR (geqrf, m >= n): ``2 m n^2 - 2 n^3 / 3`` (leading term); forming Q (orgqr with n
  reflectors) as much again.
- eigh (syevd, iterative): the tridiagonal reduction (sytrd) ``4 n^3 / 3`` (leading term),
  plus the back-transformation of the eigenvectors (ormtr) ``2 n^3`` when vectors are
  computed; the iterations on the tridiagonal matrix (QR or divide and conquer, data-dependent
  in number) are taken as free: a lower bound for any number of iterations.
- svd (gesvd/gesdd, iterative): the bidiagonal reduction (gebrd, m >= n) ``4 m n^2 - 4 n^3/3``
  (leading term); the bidiagonal iterations and forming U, V taken as free.
"""

from __future__ import annotations

import math

from solar.ir.extern_base import ExternOp

ASSUMPTIONS: dict[str, str] = {}  # merged into solar.ir.extern.ROUTINE_ASSUMPTIONS

_CLASS = {"float32": "cuda_fp32", "float64": "cuda_fp64"}


def getrf_flops(m: int, n: int) -> int:
    return sum((m - k - 1) + 2 * (m - k - 1) * (n - k - 1) for k in range(min(m, n)))


def potrf_flops(n: int) -> int:
    return sum((n - k - 1) + (n - k - 1) * (n - k) for k in range(n))


def trsm_flops(n: int, k: int, unit: bool = False) -> int:
    return k * (n * (n - 1) + (0 if unit else n))


def geqrf_flops(m: int, n: int) -> int:
    r = min(m, n)
    big = max(m, n)
    return max(0, math.floor(2 * big * r * r - 2 * r**3 / 3))


def flops(routine: str, m: int, n: int, k: int, attrs: dict) -> tuple[int, int]:
    """(CUDA-core flops, MUFU ops) of one ``routine`` on an ``m x n`` matrix with ``k``
    right-hand sides (see the module doc)."""
    if routine == "lu":
        return getrf_flops(m, n), 0
    if routine == "cholesky":
        return potrf_flops(n), n
    if routine == "triangular_solve":
        return trsm_flops(n, k, bool(attrs.get("unit", False))), 0
    if routine == "solve":
        return getrf_flops(n, n) + k * (2 * n * n - n), 0
    if routine == "inv":
        return getrf_flops(n, n) + math.floor(4 * n**3 / 3 - n * n + 5 * n / 3), 0
    if routine == "det":
        return getrf_flops(n, n) + max(0, n - 1), 0
    if routine == "qr":
        q = geqrf_flops(m, n) if attrs.get("form_q", True) else 0
        return geqrf_flops(m, n) + q, 0
    if routine == "eigh":
        vec = 2 * n**3 if attrs.get("vectors", True) else 0
        return math.floor(4 * n**3 / 3) + vec, 0
    if routine == "svd":
        big, r = max(m, n), min(m, n)
        return max(0, math.floor(4 * big * r * r - 4 * r**3 / 3)), 0
    raise ValueError(f"no operation count for linear-algebra routine {routine!r}")


def _ops(routine: str):
    def ops(n_row: int, m_out: int, rows: int, attrs: dict) -> dict[str, int]:
        if not attrs.get("counted", True):
            return {}
        alu, sfu = flops(routine, int(attrs["m"]), int(attrs["n"]), int(attrs.get("k", 0)), attrs)
        cls = _CLASS.get(str(attrs.get("dtype", "float32")), "cuda_fp32")
        out = {cls: rows * alu}
        if sfu:
            out["sfu"] = rows * sfu
        return {c: v for c, v in out.items() if v}

    return ops


_NAMES = ("lu", "cholesky", "triangular_solve", "solve", "inv", "det", "qr", "eigh", "svd")

ROWS = [ExternOp(f"linalg.{name}", _ops(name), f"{name} of a (batched) matrix") for name in _NAMES]
ROWS.append(
    ExternOp(
        "linalg.pivots_to_permutation",
        lambda n, m, rows, attrs: {},
        "the row permutation of 0-based LU pivots (data movement only)",
    )
)
ASSUMPTIONS["linalg."] = (
    "dense linear algebra: one cuSOLVER/cuBLAS kernel per routine in its operands' precision "
    "(no TF32), matrices read and results written once; compute = the classical operation "
    "counts (LU 2n^3/3, Cholesky n^3/3 multiply-adds, QR 2mn^2 - 2n^3/3, solve, inverse; "
    "see docs/counting.md)"
)
ASSUMPTIONS["linalg.eigh"] = (
    "eigh: the tridiagonal reduction (4n^3/3) and the eigenvectors' back-transformation (2n^3) "
    "counted; the iterations on the tridiagonal matrix (data-dependent in number) taken as free"
)
ASSUMPTIONS["linalg.svd"] = (
    "svd: the bidiagonal reduction (4mn^2 - 4n^3/3) counted; the bidiagonal iterations and "
    "forming U and V taken as free"
)
