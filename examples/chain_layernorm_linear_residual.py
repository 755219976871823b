"""Pre-norm residual projection: x + Linear(LayerNorm(x)), width 4096 over 4 x 4096 tokens,
fp16."""

import torch

BATCH, TOKENS, WIDTH = 4, 4096, 4096


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width, dtype=torch.float16)
        self.proj = torch.nn.Linear(width, width, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.proj(self.norm(x))


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH, dtype=torch.float16)]


def get_init_inputs():
    return [WIDTH]
