"""ResNet stem convolution: 7x7, stride 2, padding 3, 3 -> 64 channels, batch 64 at 224x224, fp32.

fp32 convolutions run as TF32 on tensor cores under PyTorch's default cuDNN policy
(``torch.backends.cudnn.allow_tf32``).
"""

import torch

BATCH, C_IN, C_OUT, SIZE, KERNEL, STRIDE, PAD = 64, 3, 64, 224, 7, 2, 3


class Model(torch.nn.Module):
    def __init__(self, c_in: int = C_IN, c_out: int = C_OUT):
        super().__init__()
        self.conv = torch.nn.Conv2d(c_in, c_out, KERNEL, stride=STRIDE, padding=PAD, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, SIZE, SIZE)]


def get_init_inputs():
    return [C_IN, C_OUT]
