"""Batched matrix multiply in fp16: 128 independent (2048 x 128) @ (128 x 2048) products
(the attention-score GEMM of 8 sequences x 16 heads), and a broadcasting ``torch.matmul`` of a
(16, 2048, 4096) activation with one shared (4096, 1024) weight."""

import torch

BATCH, M, K, N = 128, 2048, 128, 2048
SEQS, TOKENS, IN, OUT = 16, 2048, 4096, 1024


class Model(torch.nn.Module):
    def forward(self, a, b, x, w):
        return torch.bmm(a, b), torch.matmul(x, w)


def get_inputs():
    fp16 = torch.float16
    return [
        torch.randn(BATCH, M, K, dtype=fp16),
        torch.randn(BATCH, K, N, dtype=fp16),
        torch.randn(SEQS, TOKENS, IN, dtype=fp16),
        torch.randn(IN, OUT, dtype=fp16),
    ]


def get_init_inputs():
    return []
