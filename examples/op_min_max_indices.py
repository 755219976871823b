"""Reductions that return values and indices: ``torch.max(x, dim)`` and ``torch.min(x, dim)``
over (256, 4096, 1024) fp32, plus the elementwise maximum of two tensors."""

import torch

BATCH, TOKENS, WIDTH = 256, 4096, 1024


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor):
        max_v, max_i = torch.max(x, dim=-1)
        min_v, min_i = torch.min(x, dim=1)
        return max_v, max_i, min_v, min_i, torch.maximum(x, y)


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH), torch.randn(BATCH, TOKENS, WIDTH)]


def get_init_inputs():
    return []
