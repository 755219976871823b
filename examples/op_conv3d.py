"""Video (R(2+1)D/I3D-style) 3-D convolution: kernel (3, 7, 7), stride (1, 2, 2), padding
(1, 3, 3), 3 -> 64 channels, 16 frames of 112x112, batch 16, fp32."""

import torch

BATCH, C_IN, C_OUT, FRAMES, SIZE = 16, 3, 64, 16, 112


class Model(torch.nn.Module):
    def __init__(self, c_in: int = C_IN, c_out: int = C_OUT):
        super().__init__()
        self.conv = torch.nn.Conv3d(
            c_in, c_out, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, FRAMES, SIZE, SIZE)]


def get_init_inputs():
    return [C_IN, C_OUT]
