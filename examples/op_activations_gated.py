"""Activations with parameters or gates, bf16, 8192 tokens: PReLU (one slope per channel),
GLU over a (8192, 2*4096) projection, and RReLU in eval mode (a fixed slope)."""

import torch
import torch.nn.functional as F

TOKENS, WIDTH = 8192, 4096


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.prelu = torch.nn.PReLU(width, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor, gate_in: torch.Tensor):
        return self.prelu(x), F.glu(gate_in, dim=-1), F.rrelu(x, training=False)


def get_inputs():
    return [
        torch.randn(TOKENS, WIDTH, dtype=torch.bfloat16),
        torch.randn(TOKENS, 2 * WIDTH, dtype=torch.bfloat16),
    ]


def get_init_inputs():
    return [WIDTH]
