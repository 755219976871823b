"""Variance and standard deviation of (128, 4096, 1024) fp32: unbiased var over the last dim,
population std over the middle dim, and var_mean over the last dim."""

import torch

BATCH, TOKENS, WIDTH = 128, 4096, 1024


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        var = torch.var(x, dim=-1)
        std = torch.std(x, dim=1, correction=0)
        v, m = torch.var_mean(x, dim=-1, keepdim=True)
        return var, std, v, m


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH)]


def get_init_inputs():
    return []
