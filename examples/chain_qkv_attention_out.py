"""Attention sublayer: fused QKV projection -> split into heads -> causal SDPA -> merge heads
-> output projection, width 2048, 16 heads, batch 4 x 4096 tokens, bf16."""

import torch
import torch.nn.functional as F

BATCH, TOKENS, WIDTH, HEADS = 4, 4096, 2048, 16


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH, heads: int = HEADS):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width, bias=False, dtype=torch.bfloat16)
        self.out = torch.nn.Linear(width, width, bias=False, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, c))


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH, HEADS]
