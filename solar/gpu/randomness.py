"""Validating programs that draw random numbers (dropout in train mode, ``torch.randn`` in a
forward): their values cannot be expected to match bit for bit, so validation re-seeds and,
where that is not enough, compares statistics.

1. **Re-seeding**: ``torch.manual_seed(SEED)`` before the source program runs and again before
   the IR executes. The IR draws each random tensor with the same generator call the operator
   makes (``random`` of :mod:`solar.ir.ops`), so ``rand``/``randn``/``randint``/``normal``/
   ``bernoulli``/``randperm`` values, and everything computed from them, match exactly when
   the draws happen in the same order.
2. **Statistics**: an output that still differs and depends on a random kernel (CUDA's fused
   dropout draws four values per Philox call in its own order; a kernel may run in several
   chunks) is compared by its distribution instead: the mean, the standard deviation and the
   fraction of zeros, each within six standard errors of sampling
   (:func:`compare_statistics`). The report says which outputs were compared this way.
"""

from __future__ import annotations

import math

import torch

from solar.frontend.torch.modes import draws
from solar.gpu.compare import OutputCheck, _ir_dtype
from solar.ir.program import Program

SEED = 1234

#: Below this many elements the statistics are too noisy to say anything: not compared.
MIN_ELEMENTS = 64


def random_outputs(program: Program, names: list[str]) -> set[str]:
    """The names among ``names`` whose values depend on a random draw (a dataflow walk of the
    kernels in order: a statement that draws, or reads a storage written from a draw, taints
    the storage it writes)."""
    tainted: set[str] = set()
    for k in program.kernels:
        for st in k.statements:
            reads = {program.base(ld.tensor) for ld in st.loads()}
            if draws(st) or reads & tainted:
                tainted.add(program.base(st.out.tensor))
    return {n for n in names if program.base(n) in tainted}


def reseed() -> None:
    """The same generator state for the source run and the IR run (CPU and every GPU)."""
    torch.manual_seed(SEED)


def _stats(x: torch.Tensor) -> tuple[float, float, float]:
    v = x.detach().reshape(-1).double()
    v = v[torch.isfinite(v)]
    if v.numel() == 0:
        return math.nan, math.nan, math.nan
    return float(v.mean()), float(v.std(unbiased=False)), float((v == 0).double().mean())


def compare_statistics(
    out: torch.Tensor, ref: torch.Tensor, *, tol: float, name: str
) -> OutputCheck:
    """``out`` and ``ref`` as samples of one distribution: their means within six standard
    errors (``6·σ/√n``) plus ``tol`` of the scale, their standard deviations within
    ``6·σ·√(2/n)`` plus ``tol`` of it, their fractions of zeros within ``6·√(f(1-f)/n) +
    1/n``. Shapes and dtypes must agree."""
    shape, dtype = tuple(ref.shape), _ir_dtype(ref.dtype)
    if tuple(out.shape) != shape or out.dtype != ref.dtype:
        why = f"shape/dtype {tuple(out.shape)} {out.dtype} differ from {shape} {ref.dtype}"
        return OutputCheck(name, shape, dtype, math.inf, math.inf, tol, False, why)
    n = ref.numel()
    if n < MIN_ELEMENTS:
        why = f"random output of {n} elements: too few to compare statistics (not checked)"
        return OutputCheck(name, shape, dtype, 0.0, 0.0, tol, True, why)
    (m_o, s_o, z_o), (m_r, s_r, z_r) = _stats(out.to(ref.device)), _stats(ref)
    scale = max(s_r, abs(m_r), 1e-30)
    checks = {
        "mean": (abs(m_o - m_r), 6 * s_r / math.sqrt(n) + tol * scale),
        "std": (abs(s_o - s_r), 6 * s_r * math.sqrt(2 / n) + tol * scale),
        "zeros": (abs(z_o - z_r), 6 * math.sqrt(max(z_r * (1 - z_r), 0.0) / n) + 1 / n),
    }
    bad = [f"{k} {d:.3g} > {lim:.3g}" for k, (d, lim) in checks.items() if not d <= lim]
    rel = abs(m_o - m_r) / scale
    why = "compared by statistics (random values)" + (f": {'; '.join(bad)}" if bad else "")
    return OutputCheck(name, shape, dtype, rel, abs(m_o - m_r), tol, not bad, why)
