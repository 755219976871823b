"""ResNet stem max pooling: 3x3 window, stride 2, padding 1 on (64, 64, 112, 112) fp32."""

import torch

BATCH, CHANNELS, SIZE = 64, 64, 112


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = torch.nn.MaxPool2d(3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return []
