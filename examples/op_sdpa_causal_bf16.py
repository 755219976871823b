"""Causal ``F.scaled_dot_product_attention`` (FlashAttention's job) in bf16: batch 4,
32 heads, 8192 tokens, head dim 128."""

import torch

BATCH, HEADS, TOKENS, HEAD_DIM = 4, 32, 8192, 128


class Model(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    return [torch.randn(BATCH, HEADS, TOKENS, HEAD_DIM, dtype=torch.bfloat16) for _ in range(3)]


def get_init_inputs():
    return []
