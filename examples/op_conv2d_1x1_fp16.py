"""Pointwise (1x1) convolution, 1024 -> 256 channels at 14x14, batch 256, fp16, no bias.

A bottleneck "reduce" projection: a GEMM in disguise (M = N*H*W, K = 1024, N = 256).
"""

import torch

BATCH, C_IN, C_OUT, SIZE = 256, 1024, 256, 14


class Model(torch.nn.Module):
    def __init__(self, c_in: int = C_IN, c_out: int = C_OUT):
        super().__init__()
        self.conv = torch.nn.Conv2d(c_in, c_out, 1, bias=False, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, SIZE, SIZE, dtype=torch.float16)]


def get_init_inputs():
    return [C_IN, C_OUT]
