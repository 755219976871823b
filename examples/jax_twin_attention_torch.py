"""PyTorch twin of examples/jax_twin_attention.py: multi-head self-attention with input and
output projections, softmax(Q K^T / sqrt(d)) V; batch 4 of 2048 tokens, width 1024, 16 heads,
bf16. Weights are (in x out) matrices, as in the JAX twin."""

import math

import torch

BATCH, SEQ, WIDTH, HEADS = 4, 2048, 1024, 16


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH):
        super().__init__()
        for name in ("wq", "wk", "wv", "wo"):
            self.register_parameter(
                name,
                torch.nn.Parameter(
                    (torch.randn(width, width) / math.sqrt(width)).to(torch.bfloat16)
                ),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        dh = d // HEADS

        def heads(w):
            return (x @ w).reshape(b, s, HEADS, dh).transpose(1, 2)

        q, k, v = heads(self.wq), heads(self.wk), heads(self.wv)
        scores = q @ k.transpose(-2, -1) / math.sqrt(dh)
        o = torch.softmax(scores, dim=-1) @ v
        return o.transpose(1, 2).reshape(b, s, d) @ self.wo


def get_inputs(batch: int = BATCH, seq: int = SEQ, width: int = WIDTH):
    return [torch.randn(batch, seq, width, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH]
