"""The math mode of a float32 contraction on an NVIDIA GPU, one policy for every frontend
(docs/bounds.md).

A float32 matmul or convolution runs on TF32 tensor cores (``"tf32"``), as IEEE float32 FMAs
(``"ieee"``) or on bfloat16 tensor cores (``"bf16"``, JAX's ``BF16_BF16_F32`` presets); the
mode goes into ``Statement.precision``. Other dtypes run natively (no mode). Where the mode
comes from is the frontend's business: PyTorch's global settings
(:mod:`solar.frontend.torch.precision`), JAX's per-operation ``precision`` parameter
(:mod:`solar.frontend.jax.precision`), or a user override for every family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

MODES = ("tf32", "ieee")
#: operand dtypes whose contractions have a math mode (complex64's parts are float32)
FLOAT32 = ("float32", "complex64")


def checked_mode(mode: str | None) -> str | None:
    """``mode`` if it is a user-selectable mode (or None)."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"precision must be one of {MODES}, not {mode!r}")
    return mode


@dataclass(frozen=True)
class PrecisionPolicy:
    """Math mode per operator family for float32 operands.

    A family's mode is fixed (``matmul_fp32``, ``conv_fp32``: PyTorch's settings, or a user
    override) or None: then each operation's own precision parameter decides, read by
    ``per_operation`` (JAX records one on every dot and convolution)."""

    matmul_fp32: str | None = "ieee"
    conv_fp32: str | None = "tf32"
    per_operation: Callable[[object], str] | None = field(default=None, compare=False)

    def matmul(self, dtype: str, precision: object = None) -> str | None:
        """``Statement.precision`` of a matmul-family contraction computing in ``dtype``
        (``precision``: the operation's own parameter, where the frontend records one)."""
        return self._mode(self.matmul_fp32, dtype, precision)

    def conv(self, dtype: str, precision: object = None) -> str | None:
        """``Statement.precision`` of a convolution computing in ``dtype``."""
        return self._mode(self.conv_fp32, dtype, precision)

    def _mode(self, fixed: str | None, dtype: str, precision: object) -> str | None:
        if dtype not in FLOAT32:
            return None
        if fixed is not None:
            return fixed
        if self.per_operation is None:
            raise ValueError("a precision policy without a fixed mode needs per_operation")
        return self.per_operation(precision)
