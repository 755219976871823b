"""A GPT-style feed-forward block in bf16: x + W2 gelu(W1 x), 4096 tokens, width 2048."""

import torch

TOKENS, WIDTH = 4096, 2048


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.up = torch.nn.Linear(width, 4 * width, dtype=torch.bfloat16)
        self.down = torch.nn.Linear(4 * width, width, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(x), approximate="tanh"))


def get_inputs():
    return [torch.randn(TOKENS, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH]
