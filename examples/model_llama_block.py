"""One LLaMA-3-8B decoder layer in plain torch, bf16: RMSNorm, Q/K/V projections with
grouped-query attention (32 query heads, 8 KV heads, head dim 128), rotary position embeddings,
causal SDPA with ``enable_gqa``, output projection, residual, RMSNorm and a SwiGLU MLP
(hidden 14336); batch 1 x 8192 tokens."""

import torch
import torch.nn.functional as F
from torch import nn

BATCH, TOKENS, WIDTH, HEADS, KV_HEADS, HIDDEN = 1, 8192, 4096, 32, 8, 14336
HEAD_DIM, THETA, EPS = WIDTH // HEADS, 500000.0, 1e-5


class RMSNorm(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS)
        return self.weight * h.to(x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.attn_norm = RMSNorm(width)
        self.wq = nn.Linear(width, HEADS * HEAD_DIM, bias=False)
        self.wk = nn.Linear(width, KV_HEADS * HEAD_DIM, bias=False)
        self.wv = nn.Linear(width, KV_HEADS * HEAD_DIM, bias=False)
        self.wo = nn.Linear(HEADS * HEAD_DIM, width, bias=False)
        self.ffn_norm = RMSNorm(width)
        self.w1 = nn.Linear(width, HIDDEN, bias=False)
        self.w3 = nn.Linear(width, HIDDEN, bias=False)
        self.w2 = nn.Linear(HIDDEN, width, bias=False)
        inv_freq = 1.0 / (THETA ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        pos = torch.arange(t, device=x.device).float()
        freqs = torch.outer(pos, self.inv_freq.float())
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)

        h = self.attn_norm(x)
        q = self.wq(h).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.wk(h).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = self.wv(h).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, HEADS * HEAD_DIM))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH]
