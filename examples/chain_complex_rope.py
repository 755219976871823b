"""Rotary position embedding in complex form, as Meta's LLaMA reference (and Llama 4) write it:
``freqs_cis = torch.polar(ones, freqs)``, queries and keys viewed as complex pairs
(``view_as_complex``), one complex multiply per pair, and back (``view_as_real(...).flatten``),
cast to bf16. q (2, 4096, 32, 128), k (2, 4096, 8, 128) (GQA), tokens-major as the reference
lays them out. The views are free: no kernel reinterprets the bytes."""

import torch

BATCH, TOKENS, Q_HEADS, KV_HEADS, HEAD_DIM, THETA = 2, 4096, 32, 8, 128, 500000.0


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


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        inv = 1.0 / (THETA ** (torch.arange(0, HEAD_DIM, 2)[: HEAD_DIM // 2].float() / HEAD_DIM))
        t = torch.arange(TOKENS, dtype=torch.float32)
        self.register_buffer("freqs", torch.outer(t, inv))  # angles (TOKENS, HEAD_DIM / 2)

    def forward(self, xq: torch.Tensor, xk: torch.Tensor):
        freqs_cis = torch.polar(torch.ones_like(self.freqs), self.freqs)  # complex64
        return apply_rotary_emb(xq, xk, freqs_cis[: xq.shape[1]])


def get_inputs():
    bf16 = torch.bfloat16
    return [
        torch.randn(BATCH, TOKENS, Q_HEADS, HEAD_DIM, dtype=bf16),
        torch.randn(BATCH, TOKENS, KV_HEADS, HEAD_DIM, dtype=bf16),
    ]


def get_init_inputs():
    return []
