"""Stable-Diffusion ResNet block core: GroupNorm(32) -> SiLU -> 3x3 conv, plus a time-embedding
bias broadcast over the image, then GroupNorm -> SiLU -> 3x3 conv and the skip; 320 channels
at 64x64 latents, batch 8, fp16."""

import torch
import torch.nn.functional as F
from torch import nn

BATCH, CHANNELS, SIZE, TIME_DIM, GROUPS = 8, 320, 64, 1280, 32


class Model(nn.Module):
    def __init__(self, channels: int = CHANNELS):
        super().__init__()
        fp16 = torch.float16
        self.norm1 = nn.GroupNorm(GROUPS, channels, dtype=fp16)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, dtype=fp16)
        self.time = nn.Linear(TIME_DIM, channels, dtype=fp16)
        self.norm2 = nn.GroupNorm(GROUPS, channels, dtype=fp16)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, dtype=fp16)

    def forward(self, x: torch.Tensor, t_emb: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time(F.silu(t_emb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return x + h


def get_inputs():
    return [
        torch.randn(BATCH, CHANNELS, SIZE, SIZE, dtype=torch.float16),
        torch.randn(BATCH, TIME_DIM, dtype=torch.float16),
    ]


def get_init_inputs():
    return [CHANNELS]
