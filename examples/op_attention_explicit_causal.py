"""Causal attention written out (as in nanoGPT's slow path), fp32: scores = Q K^T * d^-1/2,
masked_fill with a tril mask buffer, softmax, dropout (eval: identity), @ V. Batch 8, 12 heads,
1024 tokens, head dim 64 (GPT-2 small)."""

import math

import torch

BATCH, HEADS, TOKENS, HEAD_DIM = 8, 12, 1024, 64


class Model(torch.nn.Module):
    def __init__(self, tokens: int = TOKENS):
        super().__init__()
        self.register_buffer(
            "bias", torch.tril(torch.ones(tokens, tokens)).view(1, 1, tokens, tokens)
        )
        self.dropout = torch.nn.Dropout(0.1)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        t = q.size(-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = self.dropout(torch.softmax(att, dim=-1))
        return att @ v


def get_inputs():
    return [torch.randn(BATCH, HEADS, TOKENS, HEAD_DIM) for _ in range(3)]


def get_init_inputs():
    return [TOKENS]
