"""``nn.MultiheadAttention`` (batch_first, 16 heads, width 1024) self-attention over
(32, 512, 1024) fp32, returning the output and the head-averaged attention weights."""

import torch

BATCH, TOKENS, WIDTH, HEADS = 32, 512, 1024, 16


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH, heads: int = HEADS):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(width, heads, batch_first=True)

    def forward(self, x: torch.Tensor):
        return self.attn(x, x, x, need_weights=True)


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH)]


def get_init_inputs():
    return [WIDTH, HEADS]
