"""C = A @ B with 4096 x 4096 fp32 operands (KernelBench level 1 style)."""

import torch

N = 4096


class Model(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
