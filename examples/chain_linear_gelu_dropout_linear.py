"""Transformer MLP: Linear -> GELU -> Dropout (eval: identity) -> Linear, width 2048 -> 8192 ->
2048 over 8 x 2048 tokens, bf16."""

import torch

BATCH, TOKENS, WIDTH, HIDDEN = 8, 2048, 2048, 8192


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH, hidden: int = HIDDEN):
        super().__init__()
        bf16 = torch.bfloat16
        self.fc1 = torch.nn.Linear(width, hidden, dtype=bf16)
        self.act = torch.nn.GELU()
        self.drop = torch.nn.Dropout(0.1)
        self.fc2 = torch.nn.Linear(hidden, width, dtype=bf16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.drop(self.act(self.fc1(x))))


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH, HIDDEN]
