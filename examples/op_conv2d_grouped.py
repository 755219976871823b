"""ResNeXt grouped convolution: 3x3, 32 groups, 256 -> 256 channels at 56x56, batch 64, fp32."""

import torch

BATCH, CHANNELS, SIZE, GROUPS = 64, 256, 56, 32


class Model(torch.nn.Module):
    def __init__(self, channels: int = CHANNELS, groups: int = GROUPS):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1, groups=groups, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS, GROUPS]
