"""Grouped-query attention through SDPA (``enable_gqa=True``), LLaMA-3-8B shapes in bf16:
32 query heads share 8 key/value heads, batch 2, 8192 tokens, head dim 128, causal."""

import torch

BATCH, Q_HEADS, KV_HEADS, TOKENS, HEAD_DIM = 2, 32, 8, 8192, 128


class Model(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=True
        )


def get_inputs():
    bf16 = torch.bfloat16
    return [
        torch.randn(BATCH, Q_HEADS, TOKENS, HEAD_DIM, dtype=bf16),
        torch.randn(BATCH, KV_HEADS, TOKENS, HEAD_DIM, dtype=bf16),
        torch.randn(BATCH, KV_HEADS, TOKENS, HEAD_DIM, dtype=bf16),
    ]


def get_init_inputs():
    return []
