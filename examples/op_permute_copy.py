"""Layout copies that frameworks really make: NCHW -> NHWC ``permute(...).contiguous()`` of
(64, 256, 56, 56), ``pixel_shuffle`` (upscale 2) of (32, 256, 64, 64), and ShuffleNet's channel
shuffle (view, transpose, contiguous), fp32."""

import torch

BATCH, CHANNELS, SIZE = 64, 256, 56
PS_BATCH, PS_CHANNELS, PS_SIZE, UPSCALE = 32, 256, 64, 2
GROUPS = 4


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor):
        nhwc = x.permute(0, 2, 3, 1).contiguous()
        shuffled = torch.nn.functional.pixel_shuffle(y, UPSCALE)
        n, c, h, w = x.shape
        channel_shuffle = (
            x.view(n, GROUPS, c // GROUPS, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
        )
        return nhwc, shuffled, channel_shuffle


def get_inputs():
    return [
        torch.randn(BATCH, CHANNELS, SIZE, SIZE),
        torch.randn(PS_BATCH, PS_CHANNELS, PS_SIZE, PS_SIZE),
    ]


def get_init_inputs():
    return []
