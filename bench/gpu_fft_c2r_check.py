#!/usr/bin/env python3
"""Is a half spectrum that is not Hermitian inverted the same way by every path? (FNO's
``irfft2`` of a spectrum whose modes were set independently.)

    PYTHONPATH=. python bench/gpu_fft_c2r_check.py

Builds the FNO example's spectrum at full size on the GPU and inverts it: (a) as the source
does (``torch.fft.irfft2``), (b) as solar's executor does (``irfftn`` of the rows,
solar/interp/torch/science.py), (c) on the CPU, (d) after making the spectrum Hermitian along
the first axis of the w=0 and Nyquist columns (what a real signal's spectrum is). Prints the
relative differences.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]

import op_spectral_conv_fno as fno  # noqa: E402

from solar.interp.torch.science import SCIENCE_ROUTINES  # noqa: E402


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max() / b.double().abs().max())


@torch.no_grad()
def main() -> None:
    torch.manual_seed(0)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    m = fno.Model().to(dev)
    x = torch.randn(fno.BATCH, fno.IN_CH, fno.SIZE, fno.SIZE, device=dev)
    h, w, k = fno.SIZE, fno.SIZE, fno.MODES
    x_ft = torch.fft.rfft2(x)
    out = torch.zeros(fno.BATCH, fno.OUT_CH, h, w // 2 + 1, dtype=torch.cfloat, device=dev)
    out[:, :, :k, :k] = fno.compl_mul2d(x_ft[:, :, :k, :k], m.weights1)
    out[:, :, -k:, :k] = fno.compl_mul2d(x_ft[:, :, -k:, :k], m.weights2)
    source = torch.fft.irfft2(out, s=(h, w))
    rows = out.reshape(fno.BATCH * fno.OUT_CH, -1)
    ours = SCIENCE_ROUTINES["fft.c2r"](rows, (h, w // 2 + 1), (h, w), forward=False)
    ours = ours.reshape(source.shape) / (h * w)
    cpu = torch.fft.irfft2(out.cpu(), s=(h, w))
    print(f"device {dev}: executor vs source {rel(ours, source):.3g}")
    print(f"source on the CPU vs on {dev}: {rel(cpu, source.cpu()):.3g}")
    herm = out.clone()
    for col in (0, w // 2):
        c = herm[..., col]
        herm[..., col] = 0.5 * (c + torch.roll(c.flip(-1), 1, dims=-1).conj())
    a = torch.fft.irfft2(herm, s=(h, w))
    b = SCIENCE_ROUTINES["fft.c2r"](
        herm.reshape(rows.shape), (h, w // 2 + 1), (h, w), forward=False
    )
    b = b.reshape(a.shape) / (h * w)
    c = torch.fft.irfft2(herm.cpu(), s=(h, w))
    print(
        f"Hermitian spectrum: executor vs source {rel(b, a):.3g}, "
        f"CPU vs {dev} {rel(c, a.cpu()):.3g}"
    )


if __name__ == "__main__":
    main()
