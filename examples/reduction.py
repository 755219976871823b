"""Mean over the last dim and max over the middle dim of a (64, 1024, 4096) fp32 tensor."""

import torch


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        return x.mean(dim=-1), x.amax(dim=1)


def get_inputs():
    return [torch.randn(64, 1024, 4096)]


def get_init_inputs():
    return []
