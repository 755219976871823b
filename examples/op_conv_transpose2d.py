"""Transposed convolutions (learned upsampling): a 2-D 4x4 stride-2 deconvolution 256 -> 128
channels from 64x64 to 128x128 (DCGAN/UNet decoder), batch 32, and a 1-D stride-4 one
(HiFi-GAN-style vocoder upsampling) 512 -> 256 channels over 2048 frames, batch 16, fp32."""

import torch

BATCH_2D, C_IN_2D, C_OUT_2D, SIZE = 32, 256, 128, 64
BATCH_1D, C_IN_1D, C_OUT_1D, FRAMES = 16, 512, 256, 2048


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up2d = torch.nn.ConvTranspose2d(C_IN_2D, C_OUT_2D, 4, stride=2, padding=1)
        self.up1d = torch.nn.ConvTranspose1d(C_IN_1D, C_OUT_1D, 8, stride=4, padding=2)

    def forward(self, x2d: torch.Tensor, x1d: torch.Tensor):
        return self.up2d(x2d), self.up1d(x1d)


def get_inputs():
    return [
        torch.randn(BATCH_2D, C_IN_2D, SIZE, SIZE),
        torch.randn(BATCH_1D, C_IN_1D, FRAMES),
    ]


def get_init_inputs():
    return []
