"""KernelBench level-2 style chain: GEMM -> scale -> BatchNorm1d (eval) -> Sigmoid -> residual
add -> row sum; 16384 x 4096 -> 4096, fp32 (TF32 follows PyTorch's matmul policy)."""

import torch

BATCH, IN, OUT = 16384, 4096, 4096


class Model(torch.nn.Module):
    def __init__(self, in_features: int = IN, out_features: int = OUT):
        super().__init__()
        self.gemm = torch.nn.Linear(in_features, out_features)
        self.scale = torch.nn.Parameter(torch.ones(out_features))
        self.bn = torch.nn.BatchNorm1d(out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.gemm(x) * self.scale
        h = torch.sigmoid(self.bn(h)) + h
        return h.sum(dim=-1)


def get_inputs():
    return [torch.randn(BATCH, IN)]


def get_init_inputs():
    return [IN, OUT]
