"""Repetition ops in bf16: GQA key/value head expansion with ``repeat_interleave`` (8 KV heads
-> 32 query heads, (1, 8, 8192, 128)), ``Tensor.repeat`` of a (4096, 4096) block 2x2, and an
``expand`` + ``contiguous`` broadcast of a bias to (16, 4096, 4096)."""

import torch

BATCH, KV_HEADS, Q_HEADS, TOKENS, HEAD_DIM = 1, 8, 32, 8192, 128
ROWS, WIDTH, COPIES = 4096, 4096, 16


class Model(torch.nn.Module):
    def forward(self, kv: torch.Tensor, block: torch.Tensor, bias: torch.Tensor):
        expanded = torch.repeat_interleave(kv, Q_HEADS // KV_HEADS, dim=1)
        tiled = block.repeat(2, 2)
        broadcast = bias.expand(COPIES, ROWS, WIDTH).contiguous()
        return expanded, tiled, broadcast


def get_inputs():
    return [
        torch.randn(BATCH, KV_HEADS, TOKENS, HEAD_DIM, dtype=torch.bfloat16),
        torch.randn(ROWS, WIDTH, dtype=torch.bfloat16),
        torch.randn(ROWS, WIDTH, dtype=torch.bfloat16),
    ]


def get_init_inputs():
    return []
