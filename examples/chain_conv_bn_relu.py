"""Conv -> BatchNorm (eval) -> ReLU, the ResNet building unit: 3x3 conv 128 -> 128 channels at
28x28, batch 128, fp32. A fusing compiler folds the BN into the conv and the ReLU into its
epilogue."""

import torch

BATCH, CHANNELS, SIZE = 128, 128, 28


class Model(torch.nn.Module):
    def __init__(self, channels: int = CHANNELS):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS]
