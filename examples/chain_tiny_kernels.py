"""100 dependent tiny elementwise kernels (issue 13): ``x = relu(x * 1.01)`` fifty times on 256
floats. Each operator is one launched kernel that moves 2 kB, so the program is bound by the
kernel-launch floor (100 launches), not by its bytes or its flops."""

import torch

N, LAYERS = 256, 50


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(LAYERS):
            x = torch.relu(x * 1.01)
        return x


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
