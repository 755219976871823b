"""A layer of elementwise ops with broadcasting: y = gelu(x * scale + shift) * sigmoid(x)."""

import torch

BATCH, WIDTH = 16384, 4096


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(width))
        self.shift = torch.nn.Parameter(torch.zeros(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x * self.scale + self.shift) * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(BATCH, WIDTH)]


def get_init_inputs():
    return [WIDTH]
