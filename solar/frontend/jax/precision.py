"""Which math mode XLA on an NVIDIA GPU uses for a float32 dot or convolution (docs/bounds.md).

An equation's ``precision`` parameter is what ``jax.lax.dot_general``/``conv_general_dilated``
recorded: ``None`` or a pair of :class:`jax.lax.Precision` (``jax_default_matmul_precision`` and
``jax.default_matmul_precision(...)`` are applied while tracing, so they are already in it), or
a :class:`jax.lax.DotAlgorithmPreset`. On GPU, XLA runs a float32 contraction

- ``DEFAULT`` / ``HIGH`` (``None``, "default", "fastest", "bfloat16", "high", "tensorfloat32",
  "bfloat16_3x"): on TF32 tensor cores -> ``"tf32"``;
- ``HIGHEST`` ("highest", "float32"): IEEE float32 FMAs on CUDA cores -> ``"ieee"``;
- algorithm presets: ``F32_F32_F32`` -> ``"ieee"``; ``TF32_TF32_F32*`` -> ``"tf32"``;
  ``BF16_BF16_F32*`` -> ``"bf16"`` (operands rounded to bfloat16, bf16 tensor cores, float32
  accumulation). The multi-pass presets (``_X3``, ``_X6``, ``_X9``) are charged ONE pass: a
  lower bound.

Other operand dtypes run natively (bf16/fp16/fp8/int8 tensor cores, fp64). A user override
(``trace_jax(..., precision="ieee")``) replaces the mode of every float32 contraction. The
policy itself is the frameworks' shared :class:`solar.frontend.lowering.PrecisionPolicy`.
"""

from __future__ import annotations

from solar.frontend.lowering.precision import MODES, PrecisionPolicy, checked_mode

__all__ = ["MODES", "PrecisionPolicy", "jax_policy", "mode_of"]


def jax_policy(override: str | None = None) -> PrecisionPolicy:
    """Each dot's and convolution's own ``precision`` parameter decides (:func:`mode_of`), or
    ``override`` for every one (``trace_jax(..., precision=...)``)."""
    mode = checked_mode(override)
    return PrecisionPolicy(mode, mode, per_operation=mode_of)


_TF32 = ("DEFAULT", "HIGH", "FASTEST", "BFLOAT16", "TENSORFLOAT32", "BFLOAT16_3X")
_IEEE = ("HIGHEST", "FLOAT32")


def mode_of(precision: object) -> str:
    """The GPU math mode of a float32 contraction with this ``precision`` parameter."""
    if precision is None:
        return _config_mode()
    if isinstance(precision, (tuple, list)):
        modes = [mode_of(p) for p in precision if p is not None] or [_config_mode()]
        return "ieee" if "ieee" in modes else modes[0]
    name = str(getattr(precision, "name", precision)).upper()
    name = name.removeprefix("PRECISION.").removeprefix("DOTALGORITHMPRESET.")
    if name in _IEEE or name.startswith(("F32_F32_F32", "F64")):
        return "ieee"
    if name.startswith("BF16_BF16_F32"):
        return "bf16"
    if name in _TF32 or name.startswith(("TF32", "ANY")):
        return "tf32"
    if name == "NONE":
        return _config_mode()
    raise ValueError(f"unknown matmul precision {precision!r}")


def _config_mode() -> str:
    """The mode of ``jax_default_matmul_precision`` (None: XLA's GPU default, TF32)."""
    import jax

    value = jax.config.jax_default_matmul_precision
    if value is None:
        return "tf32"
    return mode_of(value)
