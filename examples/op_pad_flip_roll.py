"""Layout operators on (32, 256, 128, 128) fp32 images: constant, reflect and replicate padding
by 3 pixels, a horizontal flip, and a cyclic roll (Swin-transformer shifted windows)."""

import torch
import torch.nn.functional as F

BATCH, CHANNELS, SIZE, PAD, SHIFT = 32, 256, 128, 3, 4


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        return (
            F.pad(x, (PAD, PAD, PAD, PAD), mode="constant", value=0.0),
            F.pad(x, (PAD, PAD, PAD, PAD), mode="reflect"),
            F.pad(x, (PAD, PAD, PAD, PAD), mode="replicate"),
            torch.flip(x, dims=[-1]),
            torch.roll(x, shifts=(-SHIFT, -SHIFT), dims=(2, 3)),
        )


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return []
