"""MobileNetV2 depthwise convolution: 3x3, groups = channels = 384, at 28x28, batch 128, fp16.

Depthwise convolutions have tiny arithmetic intensity and are memory-bound on any GPU.
"""

import torch

BATCH, CHANNELS, SIZE = 128, 384, 28


class Model(torch.nn.Module):
    def __init__(self, channels: int = CHANNELS):
        super().__init__()
        self.conv = torch.nn.Conv2d(
            channels, channels, 3, padding=1, groups=channels, bias=False, dtype=torch.float16
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE, dtype=torch.float16)]


def get_init_inputs():
    return [CHANNELS]
