"""LLaMA feed-forward with its pre-norm: h = RMSNorm(x); x + W_down(silu(W_gate h) * W_up h),
width 4096, hidden 14336 (LLaMA-3-8B), 8192 tokens, bf16."""

import torch
import torch.nn.functional as F

TOKENS, WIDTH, HIDDEN, EPS = 8192, 4096, 14336, 1e-5


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH, hidden: int = HIDDEN):
        super().__init__()
        bf16 = torch.bfloat16
        self.norm_weight = torch.nn.Parameter(torch.ones(width, dtype=bf16))
        self.gate = torch.nn.Linear(width, hidden, bias=False, dtype=bf16)
        self.up = torch.nn.Linear(width, hidden, bias=False, dtype=bf16)
        self.down = torch.nn.Linear(hidden, width, bias=False, dtype=bf16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * self.norm_weight
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def get_inputs():
    return [torch.randn(TOKENS, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH, HIDDEN]
