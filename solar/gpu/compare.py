"""Comparing the IR's outputs with the source's (docs/validation.md): the relative-error
tolerance of an output and the comparison itself. Apart from :mod:`.validate` because
:mod:`.headroom` checks the outputs of every timed run by the same rule.

Tolerances (``‖out − ref‖ / ‖ref‖`` over the finite elements, computed in float64):
:data:`REL_TOL` by the output's dtype, loosened to the loosest float dtype the program computes
in (a bf16 intermediate feeding an fp32 output), and to :data:`TF32_TOL` when a contraction
runs in tf32. Integer and bool outputs may differ in at most :data:`INT_MISMATCH_TOL` of their
elements (argmax ties). A non-finite value where the reference is finite never passes; an
output whose reference has no finite element fails (nothing was checked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from solar.ir.dtypes import is_float
from solar.ir.program import Program

__all__ = ["INT_MISMATCH_TOL", "REL_TOL", "TF32_TOL", "OutputCheck", "compare", "tolerance"]

#: Relative-error tolerance by dtype (IR dtype names).
REL_TOL: dict[str, float] = {
    "float64": 1e-9,
    "float32": 1e-4,
    "float16": 2e-2,
    "bfloat16": 2e-2,
    "float8_e4m3fn": 1.25e-1,
    "float8_e5m2": 2.5e-1,
}
TF32_TOL = 5e-3
INT_MISMATCH_TOL = 1e-3


def _ir_dtype(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tolerance(dtype, program: Program | None = None) -> float:
    """Relative-error tolerance for an output of ``dtype`` (torch or IR dtype) of ``program``:
    the dtype's own, loosened to the loosest float dtype the program computes in and to tf32's
    when a contraction runs in tf32. 0 for integer and bool outputs (compared exactly)."""
    name = _ir_dtype(dtype)
    if name not in REL_TOL:
        return 0.0
    tol = REL_TOL[name]
    if program is not None:
        for decl in program.tensors.values():
            if is_float(decl.dtype) and decl.dtype in REL_TOL:
                tol = max(tol, REL_TOL[decl.dtype])
        if any(st.precision == "tf32" for k in program.kernels for st in k.statements):
            tol = max(tol, TF32_TOL)
    return tol


# ---------------------------------------------------------------------------------------------
# Comparing tensors


@dataclass(frozen=True)
class OutputCheck:
    """One output (or intermediate) compared with its reference."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    rel_err: float  # relative error, or the mismatched fraction for integer/bool tensors
    max_abs_err: float
    tol: float
    ok: bool
    reason: str | None = None
    nonfinite: int = 0  # non-finite reference elements (matched exactly)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["shape"] = list(self.shape)
        return d


def compare(
    out: torch.Tensor, ref: torch.Tensor, *, tol: float, name: str = "", chunk: int = 1 << 25
) -> OutputCheck:
    """Compare ``out`` with the reference ``ref`` (see the module docstring for the rule)."""
    shape, dtype = tuple(ref.shape), _ir_dtype(ref.dtype)

    def fail(reason: str, rel=math.inf, mx=math.inf) -> OutputCheck:
        return OutputCheck(name, shape, dtype, rel, mx, tol, False, reason)

    if tuple(out.shape) != shape:
        return fail(f"shape {tuple(out.shape)} differs from the reference's {shape}")
    if out.dtype != ref.dtype:
        return fail(f"dtype {_ir_dtype(out.dtype)} differs from the reference's {dtype}")
    if out.device != ref.device:
        out = out.to(ref.device)
    o, r = out.detach().reshape(-1), ref.detach().reshape(-1)
    n = r.numel()
    if n == 0:
        return OutputCheck(name, shape, dtype, 0.0, 0.0, tol, True)
    if not (ref.dtype.is_floating_point or ref.dtype.is_complex):
        bad = 0
        mx = 0.0
        for a in range(0, n, chunk):
            oc, rc = o[a : a + chunk], r[a : a + chunk]
            neq = oc != rc
            bad += int(neq.sum())
            if ref.dtype != torch.bool and bool(neq.any()):
                mx = max(mx, float((oc[neq].double() - rc[neq].double()).abs().max()))
            elif bool(neq.any()):
                mx = 1.0
        frac = bad / n
        ok = frac <= INT_MISMATCH_TOL
        why = None if ok else f"{bad} of {n} elements differ ({frac:.3g} > {INT_MISMATCH_TOL})"
        return OutputCheck(name, shape, dtype, frac, mx, INT_MISMATCH_TOL, ok, why)
    diff2 = ref2 = 0.0
    mx = 0.0
    bad_nonfinite = 0
    ref_nonfinite = 0
    for a in range(0, n, chunk):
        oc, rc = o[a : a + chunk].double(), r[a : a + chunk].double()
        fo, fr = torch.isfinite(oc), torch.isfinite(rc)
        both = fo & fr
        nf_r = ~fr
        ref_nonfinite += int(nf_r.sum())
        same_nonfinite = (torch.isnan(oc) & torch.isnan(rc)) | (oc == rc)
        bad_nonfinite += int((fo != fr).sum()) + int((nf_r & ~fo & ~same_nonfinite).sum())
        d = (oc - rc)[both]
        if d.numel():
            diff2 += float((d * d).sum())
            mx = max(mx, float(d.abs().max()))
            rb = rc[both]
            ref2 += float((rb * rb).sum())
    if bad_nonfinite:
        return OutputCheck(
            name,
            shape,
            dtype,
            math.inf,
            math.inf,
            tol,
            False,
            f"{bad_nonfinite} elements are non-finite (NaN/inf) where the reference is not, "
            "or differ from a non-finite reference",
            ref_nonfinite,
        )
    if ref_nonfinite == n:
        why = "the reference has no finite element: nothing to compare"
        return OutputCheck(name, shape, dtype, math.nan, math.nan, tol, False, why, n)
    rel = math.sqrt(diff2 / ref2) if ref2 > 0 else (0.0 if diff2 == 0 else math.inf)
    ok = rel <= tol
    why = None if ok else f"relative error {rel:.3g} > tolerance {tol:.3g}"
    return OutputCheck(name, shape, dtype, rel, mx, tol, ok, why, ref_nonfinite)
