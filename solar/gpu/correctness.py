"""A solution's outputs against the reference's, by SOL-ExecBench's rule and a workload's
:class:`~solar.definition.schema.Tolerance`.

Each output, in float32: an element matches if ``|out - ref| <= max_atol + max_rtol * |ref|``;
the output matches if at least ``required_matched_ratio`` of its elements do and no error
exceeds ``max_error_cap`` (when set). A NaN or infinity in either is a mismatch (positions
where both are ``-inf`` are left out when ``allow_negative_inf``); so is an all-zero output
where the reference's is not (an output never written). A shape or dtype other than the
reference's is its own status, as in SOL-ExecBench's traces.
"""

from __future__ import annotations

from dataclasses import dataclass

from solar.definition.schema import Tolerance

__all__ = ["Correctness", "compare_outputs"]


@dataclass(frozen=True)
class Correctness:
    """``status``: ``PASSED``, ``INCORRECT_SHAPE``, ``INCORRECT_DTYPE`` or
    ``INCORRECT_NUMERICAL``; the worst errors over the outputs; ``note`` one line."""

    status: str
    max_absolute_error: float = 0.0
    max_relative_error: float = 0.0
    has_nan: bool = False
    has_inf: bool = False
    matched_ratio: float = 1.0
    note: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "PASSED"

    def to_trace(self) -> dict:
        """The trace's ``correctness`` object."""
        return {
            "max_relative_error": self.max_relative_error,
            "max_absolute_error": self.max_absolute_error,
            "has_nan": self.has_nan,
            "has_inf": self.has_inf,
        }


def compare_outputs(ref: dict, got: dict, tol: Tolerance) -> Correctness:
    """``got`` (output name -> tensor) against ``ref`` within ``tol``."""
    worst = Correctness("PASSED")
    for name, r in ref.items():
        g = got[name]
        if tuple(g.shape) != tuple(r.shape):
            return Correctness(
                "INCORRECT_SHAPE",
                note=f"output {name!r} has shape {tuple(g.shape)}, the reference's "
                f"{tuple(r.shape)}",
            )
        if g.dtype != r.dtype:
            return Correctness(
                "INCORRECT_DTYPE",
                note=f"output {name!r} has dtype {g.dtype}, the reference's {r.dtype}",
            )
        one = _compare_one(name, r, g, tol)
        worst = Correctness(
            "PASSED" if worst.passed and one.passed else "INCORRECT_NUMERICAL",
            max(worst.max_absolute_error, one.max_absolute_error),
            max(worst.max_relative_error, one.max_relative_error),
            worst.has_nan or one.has_nan,
            worst.has_inf or one.has_inf,
            min(worst.matched_ratio, one.matched_ratio),
            worst.note or one.note,
        )
    return worst


def _compare_one(name: str, ref, got, tol: Tolerance) -> Correctness:
    import torch

    x = got.detach().to(torch.float32)
    y = ref.detach().to(torch.float32)
    if tol.allow_negative_inf:
        keep = ~((x == float("-inf")) & (y == float("-inf")))
        x, y = x[keep], y[keep]
    bad = ~torch.isfinite(x) | ~torch.isfinite(y)
    if bad.any():
        nan = bool(torch.isnan(x).any() or torch.isnan(y).any())
        return Correctness(
            "INCORRECT_NUMERICAL",
            has_nan=nan,
            has_inf=not nan,
            note=f"output {name!r} holds {'NaN' if nan else 'infinity'}",
        )
    if x.numel() == 0:
        return Correctness("PASSED")
    err = (x - y).abs()
    max_abs = float(err.max())
    max_rel = float((err / y.abs().clamp(min=tol.max_atol)).max()) if tol.max_atol > 0 else 0.0
    if float(torch.linalg.vector_norm(x)) == 0 and float(torch.linalg.vector_norm(y)) > 0:
        return Correctness(
            "INCORRECT_NUMERICAL",
            max_abs,
            max_rel,
            matched_ratio=0.0,
            note=f"output {name!r} is all zeros, the reference's is not (never written?)",
        )
    matched = 1.0 - float((err > tol.max_atol + tol.max_rtol * y.abs()).sum()) / err.numel()
    capped = tol.max_error_cap is not None and max_abs > tol.max_error_cap
    if matched < tol.required_matched_ratio or capped:
        why = (
            f"max abs error {max_abs:.3g} > cap {tol.max_error_cap:.3g}"
            if capped
            else f"{matched:.2%} of elements within atol {tol.max_atol:.3g} + rtol "
            f"{tol.max_rtol:.3g}, {tol.required_matched_ratio:.2%} required"
        )
        return Correctness(
            "INCORRECT_NUMERICAL",
            max_abs,
            max_rel,
            matched_ratio=matched,
            note=f"output {name!r}: {why}",
        )
    return Correctness("PASSED", max_abs, max_rel, matched_ratio=matched)
