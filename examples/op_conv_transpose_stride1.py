"""Stride-1 transposed convolutions without padding (the full "deconvolution" of a decoder or a
segmentation head): a 2-D 64 -> 64, 3x3 one over 8x64x1024x1024, and two 3-D ones, 32 -> 16
with a (3, 5, 7) kernel over 16x32x16x32x64 and 32 -> 64 with (3, 5, 5) over 16x32x64x64x64,
fp32. Every input element meets every weight tap once: N·C_in·∏(input)·C_out·∏(kernel) MACs."""

import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up2d = torch.nn.ConvTranspose2d(64, 64, 3)
        self.up3d_a = torch.nn.ConvTranspose3d(32, 16, (3, 5, 7))
        self.up3d_b = torch.nn.ConvTranspose3d(32, 64, (3, 5, 5))

    def forward(self, x2d: torch.Tensor, x3d_a: torch.Tensor, x3d_b: torch.Tensor):
        return self.up2d(x2d), self.up3d_a(x3d_a), self.up3d_b(x3d_b)


def get_inputs():
    return [
        torch.randn(8, 64, 1024, 1024),
        torch.randn(16, 32, 16, 32, 64),
        torch.randn(16, 32, 64, 64, 64),
    ]


def get_init_inputs():
    return []
