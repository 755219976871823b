"""Inference batch normalization (running statistics) on (64, 256, 56, 56) fp32.

``load_problem`` puts the model in eval mode, so this is the per-channel affine
``(x - mean) * rsqrt(var + eps) * weight + bias`` with the running-stat buffers as weights.
"""

import torch

BATCH, CHANNELS, SIZE = 64, 256, 56


class Model(torch.nn.Module):
    def __init__(self, channels: int = CHANNELS):
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS]
