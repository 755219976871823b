"""Linear -> ReLU -> Linear, 8192 tokens of width 4096, fp32."""

import torch

TOKENS, WIDTH = 8192, 4096


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def get_inputs():
    return [torch.randn(TOKENS, WIDTH)]


def get_init_inputs():
    return [WIDTH]
