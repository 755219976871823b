"""PyTorch twin of examples/jax_twin_mlp.py: Linear -> ReLU -> Linear, 8192 tokens of width
4096, fp32. Same shapes, dtypes and parameters."""

import torch

TOKENS, WIDTH = 8192, 4096


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, width)
        self.fc2 = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def get_inputs(tokens: int = TOKENS, width: int = WIDTH):
    return [torch.randn(tokens, width)]


def get_init_inputs():
    return [WIDTH]
