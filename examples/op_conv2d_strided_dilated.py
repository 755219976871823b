"""Two DeepLab-style convolutions: a dilated (atrous, dilation 2) 3x3 conv at 64x64 and a
strided (stride 2) 3x3 downsampling conv, 512 channels, batch 16, fp32."""

import torch

BATCH, CHANNELS, SIZE, DILATION = 16, 512, 64, 2


class Model(torch.nn.Module):
    def __init__(self, channels: int = CHANNELS):
        super().__init__()
        self.atrous = torch.nn.Conv2d(
            channels, channels, 3, padding=DILATION, dilation=DILATION, bias=False
        )
        self.down = torch.nn.Conv2d(channels, channels, 3, stride=2, padding=1)

    def forward(self, x: torch.Tensor):
        return self.atrous(x), self.down(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS]
