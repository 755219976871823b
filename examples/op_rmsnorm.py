"""RMSNorm over the hidden dim: ``torch.nn.RMSNorm`` on (4, 8192, 4096) bf16 and the LLaMA
reference form (upcast to fp32, ``x * rsqrt(mean(x^2) + eps)``, downcast, scale)."""

import torch

BATCH, TOKENS, WIDTH, EPS = 4, 8192, 4096, 1e-5


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.norm = torch.nn.RMSNorm(width, eps=EPS, dtype=torch.bfloat16)
        self.weight = torch.nn.Parameter(torch.ones(width, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS)
        return self.norm(x), self.weight * h.to(x.dtype)


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH]
