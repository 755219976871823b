"""GroupNorm with 32 groups on a Stable-Diffusion UNet feature map (16, 512, 64, 64), fp16."""

import torch

BATCH, CHANNELS, SIZE, GROUPS = 16, 512, 64, 32


class Model(torch.nn.Module):
    def __init__(self, channels: int = CHANNELS, groups: int = GROUPS):
        super().__init__()
        self.norm = torch.nn.GroupNorm(groups, channels, eps=1e-6, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE, dtype=torch.float16)]


def get_init_inputs():
    return [CHANNELS, GROUPS]
