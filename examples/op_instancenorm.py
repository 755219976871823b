"""InstanceNorm2d (style transfer, CycleGAN) with affine parameters on (32, 256, 128, 128) fp32."""

import torch

BATCH, CHANNELS, SIZE = 32, 256, 128


class Model(torch.nn.Module):
    def __init__(self, channels: int = CHANNELS):
        super().__init__()
        self.norm = torch.nn.InstanceNorm2d(channels, affine=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS]
