"""Adaptive pooling: global average pooling of a ResNet-50 head (128, 2048, 7, 7) -> (128, 2048),
and adaptive max pooling of a VGG feature map (128, 512, 14, 14) -> 7x7, fp32."""

import torch

BATCH, HEAD_C, HEAD_SIZE, VGG_C, VGG_SIZE, VGG_OUT = 128, 2048, 7, 512, 14, 7


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gap = torch.nn.AdaptiveAvgPool2d(1)
        self.amp = torch.nn.AdaptiveMaxPool2d(VGG_OUT)

    def forward(self, head: torch.Tensor, vgg: torch.Tensor):
        return torch.flatten(self.gap(head), 1), self.amp(vgg)


def get_inputs():
    return [
        torch.randn(BATCH, HEAD_C, HEAD_SIZE, HEAD_SIZE),
        torch.randn(BATCH, VGG_C, VGG_SIZE, VGG_SIZE),
    ]


def get_init_inputs():
    return []
