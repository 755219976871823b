"""Bidirectional SDPA with an additive padding mask (BERT-large shapes) in fp16: batch 32,
16 heads, 512 tokens, head dim 64; the (32, 1, 1, 512) mask broadcasts over heads and queries."""

import torch

BATCH, HEADS, TOKENS, HEAD_DIM = 32, 16, 512, 64


class Model(torch.nn.Module):
    def forward(self, q, k, v, mask) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def get_inputs():
    fp16 = torch.float16
    return [
        *[torch.randn(BATCH, HEADS, TOKENS, HEAD_DIM, dtype=fp16) for _ in range(3)],
        torch.zeros(BATCH, 1, 1, TOKENS, dtype=fp16),
    ]


def get_init_inputs():
    return []
