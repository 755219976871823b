"""Tensor assembly in bf16 at LLM sizes: fused-QKV split of (4, 4096, 3*4096) into Q, K, V,
``torch.cat`` of two (4, 4096, 4096) halves on the hidden dim, ``torch.stack`` of the three
projections into a new leading dim, and ``torch.chunk`` into 8 chunks each made contiguous."""

import torch

BATCH, TOKENS, WIDTH, CHUNKS = 4, 4096, 4096, 8


class Model(torch.nn.Module):
    def forward(self, qkv: torch.Tensor, a: torch.Tensor, b: torch.Tensor):
        q, k, v = torch.split(qkv, WIDTH, dim=-1)
        joined = torch.cat([a, b], dim=-1)
        stacked = torch.stack([q, k, v], dim=0)
        chunks = [c.contiguous() for c in torch.chunk(a, CHUNKS, dim=1)]
        return joined, stacked, *chunks


def get_inputs():
    return [
        torch.randn(BATCH, TOKENS, 3 * WIDTH, dtype=torch.bfloat16),
        torch.randn(BATCH, TOKENS, WIDTH, dtype=torch.bfloat16),
        torch.randn(BATCH, TOKENS, WIDTH, dtype=torch.bfloat16),
    ]


def get_init_inputs():
    return []
