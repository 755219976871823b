"""The GEMMs that ``solar calibrate`` times (:mod:`.calibrate`) and whose energy it measures
(:mod:`.calibrate_energy`): one ``n^3`` product per dtype through torch, and PyTorch's TF32
switch set for it."""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["gemm_call", "tf32_mode"]


def gemm_call(device, label: str, n: int, *, positive: bool = False) -> Callable[[], object]:
    """One ``n^3`` GEMM of ``label`` (fp32, tf32, bf16, fp16, fp8, int8, fp64) through torch on
    random inputs (normal; uniform in [0, 1) with ``positive``), as a function to call
    (fp32/tf32: call it under :func:`tf32_mode`)."""
    fill = torch.rand if positive else torch.randn
    if label in ("fp32", "tf32"):
        a = fill(n, n, device=device)
        b = fill(n, n, device=device)
        return lambda: a @ b
    if label in ("bf16", "fp16", "fp64"):
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp64": torch.float64}[label]
        a = fill(n, n, device=device, dtype=dt)
        b = fill(n, n, device=device, dtype=dt)
        return lambda: a @ b
    if label == "fp8":
        f8 = torch.float8_e4m3fn
        a = fill(n, n, device=device).to(f8)
        b = fill(n, n, device=device).to(f8).t()  # column-major, as cuBLASLt wants
        one = torch.ones((), device=device)
        return lambda: torch._scaled_mm(
            a, b, one, one, out_dtype=torch.bfloat16, use_fast_accum=True
        )
    if label == "int8":
        lo = 0 if positive else -128
        a = torch.randint(lo, 128, (n, n), device=device, dtype=torch.int8)
        b = torch.randint(lo, 128, (n, n), device=device, dtype=torch.int8).t()
        return lambda: torch._int_mm(a, b)
    raise ValueError(f"unknown GEMM {label!r}")


class tf32_mode:
    """``with tf32_mode(label):`` PyTorch's fp32 matmuls run as TF32 for ``"tf32"`` only (as
    IEEE fp32 for every other label); restored after."""

    def __init__(self, label: str) -> None:
        self.on = label == "tf32"

    def __enter__(self) -> None:
        self.old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = self.on

    def __exit__(self, *exc) -> None:
        torch.backends.cuda.matmul.allow_tf32 = self.old
