"""A small UNet for segmentation in plain torch: 4 levels of (conv3x3-BN-ReLU) x 2 with max-pool
downsampling (64 -> 512 channels), a 1024-channel bottleneck, transposed-conv upsampling with
skip concatenation, and a 1x1 classifier to 2 classes; batch 8 at 256x256, fp32."""

import torch
from torch import nn

BATCH, IN_CHANNELS, SIZE, CLASSES = 8, 3, 256, 2
WIDTHS = (64, 128, 256, 512)


def double_conv(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
    )


class Model(nn.Module):
    def __init__(self, in_channels: int = IN_CHANNELS, classes: int = CLASSES):
        super().__init__()
        self.downs = nn.ModuleList()
        c = in_channels
        for w in WIDTHS:
            self.downs.append(double_conv(c, w))
            c = w
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = double_conv(WIDTHS[-1], 2 * WIDTHS[-1])
        self.ups = nn.ModuleList()
        self.up_convs = nn.ModuleList()
        for w in reversed(WIDTHS):
            self.ups.append(nn.ConvTranspose2d(2 * w, w, 2, stride=2))
            self.up_convs.append(double_conv(2 * w, w))
        self.head = nn.Conv2d(WIDTHS[0], classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for down in self.downs:
            x = down(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottleneck(x)
        for up, conv, skip in zip(self.ups, self.up_convs, reversed(skips)):
            x = conv(torch.cat([skip, up(x)], dim=1))
        return self.head(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, CLASSES]
