"""Attention written out: softmax(Q K^T / sqrt(d)) V in bf16, batch 8, 16 heads, 2048 tokens."""

import math

import torch

B, H, S, D = 8, 16, 2048, 64


class Model(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = q @ k.transpose(-2, -1) / math.sqrt(D)
        return torch.softmax(scores, dim=-1) @ v


def get_inputs():
    return [torch.randn(B, H, S, D, dtype=torch.bfloat16) for _ in range(3)]


def get_init_inputs():
    return []
