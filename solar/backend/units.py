"""Which hardware unit runs each op class, and the compute-time lower bound of an op mix.

The IR counts operations by *op class* (``tc_bf16``: bf16 matrix flops, ``cuda_fp32``: fp32
CUDA-core flops, ``sfu``: special-function instructions, ...). A GPU has a few *physical units*
that run concurrently: the tensor cores (all matrix dtypes share them), the FMA pipe (fp32 and
packed fp16/bf16 share it), the fp64 units, the integer pipe and the SFUs. Classes that share a
unit add up; different units overlap, so the time is the max over units — a sum would not be a
lower bound, and a max over classes would be looser than the truth requires.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from solar.backend.levels import BoundBy, Unit
from solar.graph.types import OpClass

#: the unit each rate runs on (every tensor-core class shares the tensor cores)
UNIT_OF_RATE: dict[str, Unit] = {
    **{c: Unit.TENSOR for c in OpClass if c.tensor_core},
    OpClass.CUDA_FP32: Unit.FMA,
    OpClass.CUDA_FP16: Unit.FMA,
    OpClass.CUDA_BF16: Unit.FMA,
    OpClass.CUDA_FP64: Unit.FP64,
    OpClass.CUDA_INT32: Unit.INT,
    OpClass.SFU: Unit.SFU,
}

# Rates an op class may run at, in order of preference; the fastest one the spec has is used
# (a lower bound may assume the best unit), and falling back to a later entry is reported.
CANDIDATES: dict[str, tuple[str, ...]] = {
    "tc_fp64": ("tc_fp64", "cuda_fp64"),
    "tc_tf32": ("tc_tf32", "cuda_fp32"),
    "tc_bf16": ("tc_bf16", "cuda_bf16"),
    "tc_fp16": ("tc_fp16", "cuda_fp16"),
    "tc_fp8": ("tc_fp8", "tc_fp16"),
    "tc_int8": ("tc_int8", "cuda_int32"),
    "tc_fp4": ("tc_fp4", "tc_fp8", "tc_fp16"),
    "cuda_fp32": ("cuda_fp32",),
    "cuda_fp16": ("cuda_fp16", "cuda_fp32"),
    "cuda_bf16": ("cuda_bf16", "cuda_fp32"),
    "cuda_fp64": ("cuda_fp64",),
    "cuda_int32": ("cuda_int32",),
    "sfu": ("sfu",),
}

# A transcendental may also be emulated on the FMA pipe (FlashAttention-4 does this for exp2):
# range reduction plus a degree-3 polynomial is at least 4 FMAs = 8 flops. The compute bound
# lets the backend move SFU work there when that is faster, so it stays a lower bound.
SFU_EMULATION_FLOPS = 8


class NoUnitError(ValueError):
    """The spec has no unit able to run an op class."""


@dataclass(frozen=True)
class ComputeTime:
    seconds: float
    bound_by: str  # physical unit name ("tensor", "fma", "sfu", ...) or "none"
    per_unit: dict[str, float]  # seconds per physical unit
    rates_used: dict[str, str]  # op class -> rate key actually used (differs on fallback)


def rate_for(op_class: str, spec) -> str:
    """The rate key of ``spec`` that runs ``op_class`` fastest (NoUnitError if none)."""
    options = [r for r in CANDIDATES.get(op_class, (op_class,)) if spec.has_unit(r)]
    if not options:
        raise NoUnitError(
            f"{spec.name} has no unit for op class {op_class!r} (tried "
            f"{', '.join(CANDIDATES.get(op_class, (op_class,)))}); add a rate to its spec file"
        )
    return max(options, key=spec.peak)


def compute_time(ops: Mapping[str, float], spec) -> ComputeTime:
    """Lower bound on the time to run ``ops`` (op class -> count) on ``spec``.

    SFU work may move to the FMA pipe as a polynomial (SFU_EMULATION_FLOPS fp32 flops each)
    when that balances the two units: the optimum of that split is what is charged.
    """
    per_unit: dict[str, float] = {}
    used: dict[str, str] = {}
    for cls, n in ops.items():
        if not n:
            continue
        rate = rate_for(cls, spec)
        used[cls] = rate
        unit = UNIT_OF_RATE[rate]
        per_unit[unit] = per_unit.get(unit, 0.0) + n / spec.peak(rate)
    t_sfu = per_unit.get(Unit.SFU, 0.0)
    t_fma = per_unit.get(Unit.FMA, 0.0)
    if t_sfu > t_fma and spec.has_unit("cuda_fp32"):
        n_sfu = t_sfu * spec.peak(used.get("sfu", "sfu"))
        t_emulate_all = n_sfu * SFU_EMULATION_FLOPS / spec.peak("cuda_fp32")
        # move a fraction f of SFU work: t_fma + f*t_emulate_all == (1 - f) * t_sfu
        f = (t_sfu - t_fma) / (t_sfu + t_emulate_all)
        per_unit[Unit.SFU] = (1 - f) * t_sfu
        per_unit[Unit.FMA] = t_fma + f * t_emulate_all
    if not per_unit:
        return ComputeTime(0.0, BoundBy.NONE, {}, used)
    unit = max(per_unit, key=per_unit.__getitem__)
    return ComputeTime(per_unit[unit], unit, per_unit, used)
