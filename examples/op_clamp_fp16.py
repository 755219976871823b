"""Clamping in fp16 on (64, 4096, 1024): clamp to a range, clamp_min/clamp_max against
tensors (per-channel bounds), and Hardtanh."""

import torch

BATCH, TOKENS, WIDTH = 64, 4096, 1024


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor):
        return (
            torch.clamp(x, -6.0, 6.0),
            torch.clamp(x, min=lo, max=hi),
            torch.clamp_min(x, 0.0),
            torch.nn.functional.hardtanh(x, -2.0, 2.0),
        )


def get_inputs():
    return [
        torch.randn(BATCH, TOKENS, WIDTH, dtype=torch.float16),
        -torch.rand(WIDTH, dtype=torch.float16),
        torch.rand(WIDTH, dtype=torch.float16),
    ]


def get_init_inputs():
    return []
