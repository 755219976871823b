"""3x3 convolution, stride 1, padding 1, 256 -> 256 channels at 56x56, batch 128, bf16 with bias.

The workhorse convolution of a ResNet stage 2-3 in mixed-precision training/inference.
"""

import torch

BATCH, CHANNELS, SIZE = 128, 256, 56


class Model(torch.nn.Module):
    def __init__(self, channels: int = CHANNELS):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE, dtype=torch.bfloat16)]


def get_init_inputs():
    return [CHANNELS]
