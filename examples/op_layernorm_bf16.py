"""LayerNorm over the hidden dim of (8, 4096, 4096) bf16 activations (LLM pre-norm), with affine
weight and bias."""

import torch

BATCH, TOKENS, WIDTH = 8, 4096, 4096


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH]
