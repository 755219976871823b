"""Which math mode PyTorch would use for a float32 contraction (docs/bounds.md).

Matmuls follow ``torch.backends.cuda.matmul.allow_tf32`` / ``torch.get_float32_matmul_precision()``;
convolutions follow ``torch.backends.cudnn.allow_tf32`` (on by default). A user override
(``trace_torch(..., precision="ieee")``) applies to every family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

MODES = ("tf32", "ieee")


@dataclass(frozen=True)
class PrecisionPolicy:
    """Math mode per operator family for float32 operands; other dtypes run natively."""

    matmul_fp32: str = "ieee"
    conv_fp32: str = "tf32"

    @staticmethod
    def from_torch(override: str | None = None) -> PrecisionPolicy:
        """The policy the current PyTorch settings imply, or ``override`` for every family."""
        if override is not None:
            if override not in MODES:
                raise ValueError(f"precision must be one of {MODES}, not {override!r}")
            return PrecisionPolicy(override, override)
        return PrecisionPolicy(_matmul_mode(), _conv_mode())

    def matmul(self, dtype: str) -> str | None:
        """``Statement.precision`` of a matmul-family contraction computing in ``dtype``."""
        return self.matmul_fp32 if dtype in ("float32", "complex64") else None

    def conv(self, dtype: str) -> str | None:
        """``Statement.precision`` of a convolution computing in ``dtype``."""
        return self.conv_fp32 if dtype == "float32" else None


def _read(getter: Callable[[], object]) -> object:
    """A setting, or None where this torch lacks it or refuses to answer (torch >= 2.9 raises
    on reading a legacy flag after the other API set it)."""
    try:
        return getter()
    except (AttributeError, RuntimeError):
        return None


def _matmul_mode() -> str:
    # torch >= 2.9: the fp32_precision settings reflect whichever API was used last
    for mode in (
        _read(lambda: torch.backends.cuda.matmul.fp32_precision),
        _read(lambda: torch.backends.fp32_precision),
    ):
        if mode in MODES:
            return str(mode)
    allow = _read(lambda: torch.backends.cuda.matmul.allow_tf32)
    highest = _read(torch.get_float32_matmul_precision) in (None, "highest")
    return "tf32" if allow is True or not highest else "ieee"


def _conv_mode() -> str:
    for mode in (
        _read(lambda: torch.backends.cudnn.conv.fp32_precision),
        _read(lambda: torch.backends.cudnn.fp32_precision),
        _read(lambda: torch.backends.fp32_precision),
    ):
        if mode in MODES:
            return str(mode)
    if _read(lambda: torch.backends.cudnn.conv.fp32_precision) is not None:
        return "ieee"  # torch >= 2.9: "none" at every level is no TF32 (the legacy flag may raise)
    return "ieee" if _read(lambda: torch.backends.cudnn.allow_tf32) is False else "tf32"
