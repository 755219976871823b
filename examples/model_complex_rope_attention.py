"""The attention block of Meta's LLaMA reference code (``llama/model.py``), complex RoPE and
all: Q/K/V projections, ``freqs_cis`` from ``torch.polar``, queries and keys rotated as complex
pairs (``view_as_complex`` x ``freqs_cis``, ``view_as_real``), grouped-query heads repeated
(``repeat_kv``), explicit causal attention (scores + triangular mask, softmax in fp32), output
projection. LLaMA-3-8B's attention in bf16: width 4096, 32 query heads, 8 KV heads, head dim
128, batch 1 x 2048 tokens."""

import math

import torch
import torch.nn.functional as F
from torch import nn

BATCH, TOKENS, WIDTH, HEADS, KV_HEADS, THETA = 1, 2048, 4096, 32, 8, 500000.0


def precompute_freqs_cis(dim: int, end: int, theta: float) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    shape = [d if i == 1 or i == x.ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (
        x[:, :, :, None, :]
        .expand(bs, slen, n_kv_heads, n_rep, head_dim)
        .reshape(bs, slen, n_kv_heads * n_rep, head_dim)
    )


class Model(nn.Module):
    def __init__(self, width: int = WIDTH, heads: int = HEADS, kv_heads: int = KV_HEADS):
        super().__init__()
        self.n_heads, self.n_kv_heads = heads, kv_heads
        self.n_rep, self.head_dim = heads // kv_heads, width // heads
        bf16 = {"bias": False, "dtype": torch.bfloat16}
        self.wq = nn.Linear(width, heads * self.head_dim, **bf16)
        self.wk = nn.Linear(width, kv_heads * self.head_dim, **bf16)
        self.wv = nn.Linear(width, kv_heads * self.head_dim, **bf16)
        self.wo = nn.Linear(heads * self.head_dim, width, **bf16)
        # complex64, as the reference keeps it (a bf16 cast of the module would drop its
        # imaginary part)
        freqs_cis = precompute_freqs_cis(self.head_dim, 2 * TOKENS, THETA)
        self.register_buffer("freqs_cis", freqs_cis, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bsz, seqlen, _ = x.shape
        freqs_cis = self.freqs_cis[:seqlen]
        mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device)
        mask = torch.triu(mask, diagonal=1).type_as(x)
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        keys, values = repeat_kv(xk, self.n_rep), repeat_kv(xv, self.n_rep)
        xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH, HEADS, KV_HEADS]
