"""Rotary position embedding (RoPE) applied to queries and keys, LLaMA style, bf16: cos/sin
tables from inverse frequencies and position ids, ``rotate_half`` via slicing, negation and
``cat``; q (2, 32, 8192, 128), k (2, 8, 8192, 128) (GQA)."""

import torch

BATCH, Q_HEADS, KV_HEADS, TOKENS, HEAD_DIM, THETA = 2, 32, 8, 8192, 128, 500000.0


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        inv_freq = 1.0 / (THETA ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, q: torch.Tensor, k: torch.Tensor):
        pos = torch.arange(q.shape[-2], device=q.device).float()
        freqs = torch.outer(pos, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(q.dtype), emb.sin().to(q.dtype)
        q_rot = q * cos + rotate_half(q) * sin
        k_rot = k * cos + rotate_half(k) * sin
        return q_rot, k_rot


def get_inputs():
    bf16 = torch.bfloat16
    return [
        torch.randn(BATCH, Q_HEADS, TOKENS, HEAD_DIM, dtype=bf16),
        torch.randn(BATCH, KV_HEADS, TOKENS, HEAD_DIM, dtype=bf16),
    ]


def get_init_inputs():
    return []
