"""One GPT-style transformer block (pre-LayerNorm, causal multi-head attention via SDPA,
GELU-tanh MLP 4x, residuals), width 2048, 16 heads, batch 8 x 2048 tokens, bf16
(GPT-3 XL / 1.3B block shapes)."""

import torch
import torch.nn.functional as F
from torch import nn

BATCH, TOKENS, WIDTH, HEADS = 8, 2048, 2048, 16


class Model(nn.Module):
    def __init__(self, width: int = WIDTH, heads: int = HEADS):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.mlp_proj = nn.Linear(4 * width, width)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH, HEADS]
