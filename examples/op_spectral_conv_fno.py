"""Fourier Neural Operator spectral convolution (Li et al., 2021), as the FNO reference code
writes it: ``rfft2`` of the input, a complex ``einsum`` over channels on the lowest 16x16
modes of each half of the spectrum (two complex weight tensors), written into a zeroed
spectrum, ``irfft2`` back; batch 16, 64 -> 64 channels, a 256x256 grid, fp32.

The FFTs are one cuFFT kernel each (the split-radix operation count, see docs/counting.md);
the complex contractions count 3 real multiply-adds per complex product (the 3M algorithm).
"""

import torch

BATCH, IN_CH, OUT_CH, SIZE, MODES = 16, 64, 64, 256, 16


def compl_mul2d(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.einsum("bixy,ioxy->boxy", x, w)


class Model(torch.nn.Module):
    def __init__(self, in_ch: int = IN_CH, out_ch: int = OUT_CH, modes: int = MODES):
        super().__init__()
        self.out_ch, self.modes = out_ch, modes
        scale = 1.0 / (in_ch * out_ch)
        shape = (in_ch, out_ch, modes, modes)
        self.weights1 = torch.nn.Parameter(scale * torch.rand(*shape, dtype=torch.cfloat))
        self.weights2 = torch.nn.Parameter(scale * torch.rand(*shape, dtype=torch.cfloat))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, h, w = x.shape
        m = self.modes
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(b, self.out_ch, h, w // 2 + 1, dtype=torch.cfloat, device=x.device)
        out_ft[:, :, :m, :m] = compl_mul2d(x_ft[:, :, :m, :m], self.weights1)
        out_ft[:, :, -m:, :m] = compl_mul2d(x_ft[:, :, -m:, :m], self.weights2)
        return torch.fft.irfft2(out_ft, s=(h, w))


def get_inputs():
    return [torch.randn(BATCH, IN_CH, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CH, OUT_CH, MODES]
