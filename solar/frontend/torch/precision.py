"""Which math mode PyTorch would use for a float32 contraction (docs/bounds.md).

Matmuls follow ``torch.backends.cuda.matmul.allow_tf32`` / ``torch.get_float32_matmul_precision()``;
convolutions follow ``torch.backends.cudnn.allow_tf32`` (on by default). A user override
(``trace_torch(..., precision="ieee")``) applies to every family. The policy itself is the
frameworks' shared :class:`solar.frontend.lowering.PrecisionPolicy`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from solar.frontend.lowering.precision import MODES, PrecisionPolicy, checked_mode

__all__ = ["MODES", "PrecisionPolicy", "torch_policy"]


def torch_policy(override: str | None = None) -> PrecisionPolicy:
    """The policy the current PyTorch settings imply, or ``override`` for every family
    (``trace_torch(..., precision=...)``)."""
    if checked_mode(override) is not None:
        return PrecisionPolicy(override, override)
    return PrecisionPolicy(_matmul_mode(), _conv_mode())


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
