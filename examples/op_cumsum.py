"""Scans: cumulative sum over 8192 positions of (64, 8192, 1024) fp32 (prefix sums, linear
attention), and the cumulative product over the last dim (survival probabilities)."""

import torch

BATCH, LENGTH, WIDTH = 64, 8192, 1024


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        return torch.cumsum(x, dim=1), torch.cumprod(x, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, LENGTH, WIDTH)]


def get_init_inputs():
    return []
