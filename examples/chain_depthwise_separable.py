"""MobileNetV2 inverted residual: 1x1 expand (32 -> 192) -> BN -> ReLU6 -> 3x3 depthwise ->
BN -> ReLU6 -> 1x1 project (192 -> 32) -> BN, plus the residual, batch 128 at 56x56, fp32."""

import torch
from torch import nn

BATCH, CHANNELS, EXPAND, SIZE = 128, 32, 6, 56


class Model(nn.Module):
    def __init__(self, channels: int = CHANNELS, expand: int = EXPAND):
        super().__init__()
        hidden = channels * expand
        self.block = nn.Sequential(
            nn.Conv2d(channels, hidden, 1, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, channels, 1, bias=False),
            nn.BatchNorm2d(channels),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS, EXPAND]
